// Package compare is `rsag compare A/summary.json B/summary.json`: it
// matches the timing cases of two runs and fails when B is slower than A by
// more than a threshold, so that a regression in a library, driver or
// config shows up as a non-zero exit in CI. It needs no MPI and no GPU.
package compare

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"rsag/report"
	"rsag/report/page"
)

// Exit codes.
const (
	ExitOK       = 0 // every common case's B/A is at or below the threshold
	ExitSlower   = 1 // some case's B/A is above it
	ExitBadInput = 2 // bad flags, an unreadable or foreign file, no common case
)

// metrics are the statistics that can be compared, by flag value.
var metrics = map[string]func(report.TimingStat) float64{
	"median": func(s report.TimingStat) float64 { return s.MedianUS },
	"p90":    func(s report.TimingStat) float64 { return s.P90US },
	"min":    func(s report.TimingStat) float64 { return s.MinUS },
}

const usage = `usage: rsag compare [-threshold 1.10] [-metric median|p90|min] [-html FILE] A/summary.json B/summary.json
       (an output dir stands for the summary.json in it)

Compares the timing cases two runs share (same run, size, dtype, op, placement,
method, batch and mode) by the ratio B/A of a statistic of their time per
operation; -html FILE writes the comparison as a page too, the slower cases
marked. Exit status: 0 when every ratio is at or below the threshold, 1 when
some case of B is slower than that, 2 on bad input.

`

// options are the parsed command line.
type options struct {
	threshold float64
	metric    string
	html      string // "" for no page
	a, b      string
}

// Run runs the command with args (after "compare") and returns the exit code.
func Run(args []string, stdout, stderr io.Writer) int {
	opts, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "rsag compare: %v\n", err)
		return ExitBadInput
	}
	a, err := load(opts.a)
	if err != nil {
		fmt.Fprintf(stderr, "rsag compare: %v\n", err)
		return ExitBadInput
	}
	b, err := load(opts.b)
	if err != nil {
		fmt.Fprintf(stderr, "rsag compare: %v\n", err)
		return ExitBadInput
	}
	c := Compare(a, b, metrics[opts.metric], opts.threshold)
	if len(c.Rows) == 0 {
		fmt.Fprintf(stderr, "rsag compare: %s and %s have no timing case in common (%d and %d cases)\n",
			opts.a, opts.b, len(a.Timing), len(b.Timing))
		return ExitBadInput
	}
	if err := write(stdout, stderr, opts, a, b, c); err != nil {
		fmt.Fprintf(stderr, "rsag compare: %v\n", err)
		return ExitBadInput
	}
	if opts.html != "" {
		if err := writePage(opts, a, b, c); err != nil {
			fmt.Fprintf(stderr, "rsag compare: %v\n", err)
			return ExitBadInput
		}
		fmt.Fprintf(stdout, "wrote %s\n", opts.html)
	}
	if c.Slower > 0 {
		return ExitSlower
	}
	return ExitOK
}

// parse reads flags before, between and after the two files, as users
// type them in either place.
func parse(args []string, stderr io.Writer) (options, error) {
	opts := options{}
	fs := flag.NewFlagSet("rsag compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	fs.Float64Var(&opts.threshold, "threshold", 1.10, "B/A `ratio` above which a case fails (B slower)")
	fs.StringVar(&opts.metric, "metric", "median", "statistic to compare: median, p90 or min")
	fs.StringVar(&opts.html, "html", "", "write the comparison as a self-contained page to `FILE`")
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			return opts, err
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		files = append(files, args[0])
		args = args[1:]
	}
	if len(files) != 2 {
		return opts, fmt.Errorf("want two summary.json files or output dirs, got %d (rsag compare A/summary.json B/summary.json)", len(files))
	}
	if _, ok := metrics[opts.metric]; !ok {
		return opts, fmt.Errorf("-metric %q is not one of median, p90, min", opts.metric)
	}
	if !(opts.threshold > 0) || math.IsInf(opts.threshold, 0) {
		return opts, fmt.Errorf("-threshold %v must be a finite positive ratio, e.g. 1.10", opts.threshold)
	}
	opts.a, opts.b = files[0], files[1]
	return opts, nil
}

// load reads a summary.json, or the one in an output directory; errors
// name the file.
func load(path string) (report.Summary, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, report.SummaryFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is named once, here
		}
		return report.Summary{}, fmt.Errorf("reading %s: %w", path, err)
	}
	return report.ReadSummary(path, data)
}

// Row is one case both runs have.
type Row struct {
	report.TimingStat         // A's case and statistics
	A, B              float64 // the compared statistic, µs
	Ratio             float64 // B / A; 0 when A is not positive
	Over              bool    // Ratio > threshold
}

// Comparison is the outcome of Compare.
type Comparison struct {
	Rows         []Row               // in A's order
	OnlyA, OnlyB []report.TimingStat // in their file's order
	Slower       int                 // rows over the threshold
}

// Compare matches a's and b's timing cases and compares metric of each.
func Compare(a, b report.Summary, metric func(report.TimingStat) float64, threshold float64) Comparison {
	var c Comparison
	inA, inB := map[report.CaseKey]bool{}, map[report.CaseKey]report.TimingStat{}
	for _, s := range b.Timing {
		inB[s.Key()] = s
	}
	for _, s := range a.Timing {
		k := s.Key()
		inA[k] = true
		sb, ok := inB[k]
		if !ok {
			c.OnlyA = append(c.OnlyA, s)
			continue
		}
		r := Row{TimingStat: s, A: metric(s), B: metric(sb)}
		if r.A > 0 {
			r.Ratio = r.B / r.A
			r.Over = r.Ratio > threshold
		}
		if r.Over {
			c.Slower++
		}
		c.Rows = append(c.Rows, r)
	}
	for _, s := range b.Timing {
		if !inA[s.Key()] {
			c.OnlyB = append(c.OnlyB, s)
		}
	}
	return c
}

// write prints the comparison: which runs, the table of common cases, the
// cases only one run has, and a closing verdict. Warnings (a failed run,
// different world sizes or backends) go to stderr.
func write(stdout, stderr io.Writer, o options, a, b report.Summary, c Comparison) error {
	fmt.Fprintf(stdout, "A: %s\n", describe(o.a, a))
	fmt.Fprintf(stdout, "B: %s\n", describe(o.b, b))
	for _, w := range warnings(o, a, b) {
		fmt.Fprintf(stderr, "rsag compare: warning: %s\n", w)
	}

	limit := strconv.FormatFloat(o.threshold, 'f', -1, 64)
	fmt.Fprintf(stdout, "%s time per operation (us), B/A > %s marked SLOWER\n", o.metric, limit)
	t := report.Table(stdout, "run", "size", "dtype", "op", "placement", "method", "mode",
		"A us", "B us", "B/A", "> "+limit)
	for _, r := range c.Rows {
		ratio, mark := "n/a", ""
		if r.A > 0 {
			ratio = fmt.Sprintf("%.3f", r.Ratio)
		}
		if r.Over {
			mark = "SLOWER"
		}
		t.Append(append(caseCells(r.TimingStat), fmt.Sprintf("%.2f", r.A), fmt.Sprintf("%.2f", r.B), ratio, mark))
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, only := range []struct {
		name  string
		stats []report.TimingStat
	}{{"A (" + o.a + ")", c.OnlyA}, {"B (" + o.b + ")", c.OnlyB}} {
		if len(only.stats) == 0 {
			continue
		}
		fmt.Fprintf(stdout, "Only in %s: %d case(s)\n", only.name, len(only.stats))
		t := report.Table(stdout, "run", "size", "dtype", "op", "placement", "method", "mode")
		for _, s := range only.stats {
			t.Append(caseCells(s))
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	if c.Slower > 0 {
		fmt.Fprintf(stdout, "FAIL: %d of %d common case(s) slower in B than %s x A (%s)\n", c.Slower, len(c.Rows), limit, o.metric)
	} else {
		fmt.Fprintf(stdout, "ok: all %d common case(s) within %s x A (%s)\n", len(c.Rows), limit, o.metric)
	}
	return nil
}

// warnings are what makes the comparison less fair: a run that did not
// complete, runs of different setups.
func warnings(o options, a, b report.Summary) []string {
	var out []string
	for _, x := range []struct {
		name string
		s    report.Summary
	}{{o.a, a}, {o.b, b}} {
		if x.s.Status != "complete" {
			out = append(out, fmt.Sprintf("%s is from a run that did not complete (status %q)", x.name, x.s.Status))
		}
	}
	if a.WorldSize != b.WorldSize || a.Backend != b.Backend {
		out = append(out, fmt.Sprintf("the runs differ in setup: A %s on %d ranks, B %s on %d ranks",
			a.Backend, a.WorldSize, b.Backend, b.WorldSize))
	}
	return out
}

// writePage writes the comparison as a page to o.html.
func writePage(o options, a, b report.Summary, c Comparison) error {
	pc := page.Comparison{PathA: o.a, PathB: o.b, A: a, B: b, Metric: o.metric, Threshold: o.threshold,
		OnlyA: c.OnlyA, OnlyB: c.OnlyB, Warnings: warnings(o, a, b)}
	for _, r := range c.Rows {
		pc.Rows = append(pc.Rows, page.ComparedCase{Case: r.TimingStat, A: r.A, B: r.B, Ratio: r.Ratio, Over: r.Over})
	}
	var buf bytes.Buffer
	if err := page.WriteComparison(&buf, pc); err != nil {
		return err
	}
	return page.WriteBytes(o.html, buf.Bytes(), "choose a file in a directory you can write")
}

func describe(path string, s report.Summary) string {
	return fmt.Sprintf("%s (rsag %s, commit %s; %s on %d ranks; started %s)",
		path, s.RSAG.Version, s.RSAG.Commit, s.Backend, s.WorldSize, s.Started)
}

// caseCells are the columns that name a case; the batch goes with the
// method when it is not 1.
func caseCells(s report.TimingStat) []string {
	method := s.Method
	if s.Batch != 1 {
		method = fmt.Sprintf("%s x%d", s.Method, s.Batch)
	}
	return []string{s.Run, report.SizeText(s.SizeBytes), s.DType, s.Op, s.Placement, method, s.Mode}
}
