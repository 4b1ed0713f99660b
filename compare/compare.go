// Package compare is `rsag compare A/summary.json B/summary.json`: it
// matches the timing cases of two runs and fails when B is slower than A by
// more than a threshold, so that a regression in a library, driver or
// config shows up as a non-zero exit in CI. It needs no MPI and no GPU.
package compare

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"rsag/coll"
	"rsag/internal/regularfile"
	"rsag/outdir"
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

const usage = `usage: rsag compare [-threshold 1.10] [-metric median|p90|min] [-incomplete] [-html FILE] A/summary.json B/summary.json
       (an output dir stands for the summary.json in it)

Compares the timing cases two runs share (same run, size, dtype, op, placement,
method, batch and mode) by the ratio B/A of a statistic of their time per
operation. A case above the threshold whose p10..p90 overlaps the other run's
is within noise, not slower. A run that did not complete (its run.json, or
without one its summary.json, says so) is refused unless -incomplete. -html
FILE writes the comparison as a page too, the slower cases marked. Exit
status: 0 when no case of B is slower than the threshold, 1 when some is, 2 on
bad input.

`

// MaxSummaryBytes caps an input: a summary of 64 runs of 64 sizes in every
// dtype, op and mode is a few tens of megabytes, so anything larger is not
// one (/dev/zero, a core file), refused before it is read.
const MaxSummaryBytes = 256 << 20

// maxRunBytes caps the run.json beside a summary: it lists the run's files.
const maxRunBytes = 16 << 20

// options are the parsed command line.
type options struct {
	threshold  float64
	metric     string
	incomplete bool   // compare a run that did not complete, with a warning
	html       string // "" for no page
	a, b       string
}

// Main is the command with args (after "compare"): it returns the exit
// code, which main alone passes to os.Exit.
func Main(args []string, stdout, stderr io.Writer) int {
	opts, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "rsag compare: %v\n", err)
		return ExitBadInput
	}
	var in [2]input
	for i, path := range []string{opts.a, opts.b} {
		if in[i], err = load(path); err != nil {
			fmt.Fprintf(stderr, "rsag compare: %v\n", err)
			return ExitBadInput
		}
		if in[i].status != outdir.StatusComplete && !opts.incomplete {
			fmt.Fprintf(stderr, "rsag compare: %s %s: its timings may be partial or wrong; compare complete runs, or pass -incomplete to compare it anyway\n",
				"AB"[i:i+1], in[i].incomplete())
			return ExitBadInput
		}
	}
	a, b := in[0].summary, in[1].summary
	c := Compare(a, b, metrics[opts.metric], opts.threshold)
	if len(c.Rows) == 0 {
		fmt.Fprintf(stderr, "rsag compare: %s and %s have no timing case in common (%d and %d cases)\n",
			opts.a, opts.b, len(a.Timing), len(b.Timing))
		return ExitBadInput
	}
	if err := write(stdout, stderr, opts, in, c); err != nil {
		fmt.Fprintf(stderr, "rsag compare: %v\n", err)
		return ExitBadInput
	}
	if opts.html != "" {
		if err := writePage(opts, in, c); err != nil {
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
	fs.BoolVar(&opts.incomplete, "incomplete", false, "compare a run that did not complete (failed, or still running), with a warning")
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

// input is one run to compare: its summary, and the status of the run as
// its run.json says when there is one beside the summary (summary.json is
// never trusted over run.json), else as the summary says.
type input struct {
	path    string
	summary report.Summary
	status  string
	reason  string
	from    string // the file status was read from
}

func (in input) incomplete() string {
	msg := fmt.Sprintf("(%s) is from a run that did not complete: its %s says %q", in.path, filepath.Base(in.from), in.status)
	if in.reason != "" {
		msg += " (" + in.reason + ")"
	}
	return msg
}

// load reads a summary.json, or the one in an output directory, and the
// run.json beside it; errors name the file. Both are read as the config
// is: regular files only, of a bounded size, so that a FIFO cannot block
// and /dev/zero cannot fill memory.
func load(path string) (input, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, report.SummaryFile)
	}
	in := input{path: path, from: path}
	data, err := read(path, MaxSummaryBytes)
	if err != nil {
		return in, err
	}
	if in.summary, err = report.ReadSummary(path, data); err != nil {
		return in, err
	}
	if err := checkCases(path, in.summary.Timing); err != nil {
		return in, err
	}
	in.status = in.summary.Status
	runPath := filepath.Join(filepath.Dir(path), outdir.RunFile)
	data, err = read(runPath, maxRunBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return in, nil // a summary copied on its own: its own status is all there is
	}
	if err != nil {
		return in, err
	}
	// Only what compare needs of run.json: which run it is and how it ended.
	var run struct {
		Status  string `json:"status"`
		Reason  string `json:"reason"`
		Started string `json:"started"`
	}
	if err := json.Unmarshal(data, &run); err != nil || run.Status == "" {
		return in, fmt.Errorf("%s, beside %s, is not an rsag run.json (%v): move it away, or compare a copy of the summary on its own", runPath, path, err)
	}
	if run.Started != in.summary.Started {
		return in, fmt.Errorf("%s (started %s) is another run's than %s (started %s) beside it: its results were replaced; compare a directory one run wrote",
			runPath, run.Started, path, in.summary.Started)
	}
	// The worse of the two counts, and run.json's word first: a run is
	// complete only once run.json says so.
	if run.Status != outdir.StatusComplete || in.status == outdir.StatusComplete {
		in.status, in.reason, in.from = run.Status, run.Reason, runPath
	}
	return in, nil
}

// read reads an input file of at most limit bytes.
func read(path string, limit int64) ([]byte, error) {
	data, err := regularfile.Read(path, limit)
	var kind *regularfile.KindError
	var size *regularfile.SizeError
	switch {
	case errors.As(err, &kind):
		return nil, fmt.Errorf("reading %s: it is %s, not a file rsag wrote", path, kind.Kind)
	case errors.As(err, &size):
		return nil, fmt.Errorf("reading %s: it is larger than rsag compare's cap of %d MiB: is it rsag's?", path, limit>>20)
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is named once, here
		}
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return data, nil
}

// checkCases refuses a summary that lists a case twice (which would make
// the comparison pick one of them unsaid) or whose times are not positive
// and ordered (min <= p10 <= median <= p90): a time per operation of 0 or
// less cannot be divided by, and a ratio against it would call any B fine.
func checkCases(path string, stats []report.TimingStat) error {
	seen := map[coll.Case]bool{}
	for _, s := range stats {
		name := s.Case.String()
		if seen[s.Case] {
			return fmt.Errorf("%s lists the case %s twice: a summary lists each case once; is it damaged, or two merged?", path, name)
		}
		seen[s.Case] = true
		for _, v := range []struct {
			what string
			us   float64
		}{{"min", s.MinUS}, {"p10", s.P10US}, {"median", s.MedianUS}, {"p90", s.P90US}} {
			if !(v.us > 0) {
				return fmt.Errorf("%s: case %s has a %s of %v us: a time per operation is positive; is the file damaged?", path, name, v.what, v.us)
			}
		}
		if !(s.MinUS <= s.P10US && s.P10US <= s.MedianUS && s.MedianUS <= s.P90US) {
			return fmt.Errorf("%s: case %s has min %v, p10 %v, median %v, p90 %v us, not in order: is the file damaged?",
				path, name, s.MinUS, s.P10US, s.MedianUS, s.P90US)
		}
	}
	return nil
}

// Row is one case both runs have.
type Row struct {
	report.TimingStat         // A's case and statistics
	A, B              float64 // the compared statistic, µs
	Ratio             float64 // B / A; 0 when A is not positive
	Over              bool    // Ratio > threshold
	// Noise: over the threshold, but B's p10..p90 overlaps A's, so that
	// the two runs' own spreads cannot tell them apart: not counted as
	// slower.
	Noise bool
}

// Comparison is the outcome of Compare.
type Comparison struct {
	Rows         []Row               // in A's order
	OnlyA, OnlyB []report.TimingStat // in their file's order
	Slower       int                 // rows over the threshold, beyond noise
	Noise        int                 // rows over the threshold, within noise
}

// Compare matches a's and b's timing cases and compares metric of each.
func Compare(a, b report.Summary, metric func(report.TimingStat) float64, threshold float64) Comparison {
	var c Comparison
	inA, inB := map[coll.Case]bool{}, map[coll.Case]report.TimingStat{}
	for _, s := range b.Timing {
		inB[s.Case] = s
	}
	for _, s := range a.Timing {
		k := s.Case
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
		r.Noise = r.Over && sb.P10US <= s.P90US && s.P10US <= sb.P90US
		switch {
		case r.Noise:
			c.Noise++
		case r.Over:
			c.Slower++
		}
		c.Rows = append(c.Rows, r)
	}
	for _, s := range b.Timing {
		if !inA[s.Case] {
			c.OnlyB = append(c.OnlyB, s)
		}
	}
	return c
}

// write prints the comparison: which runs, the table of common cases, the
// cases only one run has, and a closing verdict. Warnings (a failed run,
// different world sizes or backends) go to stderr.
func write(stdout, stderr io.Writer, o options, in [2]input, c Comparison) error {
	a, b := in[0].summary, in[1].summary
	fmt.Fprintf(stdout, "A: %s\n", describe(o.a, a))
	fmt.Fprintf(stdout, "B: %s\n", describe(o.b, b))
	for _, w := range incompleteWarnings(in) {
		// Only with -incomplete: said on both streams, so that a report
		// kept from stdout alone carries it too.
		fmt.Fprintln(stdout, w)
		fmt.Fprintf(stderr, "rsag compare: %s\n", w)
	}
	if w := setupWarning(a, b); w != "" {
		fmt.Fprintf(stderr, "rsag compare: warning: %s\n", w)
	}

	limit := strconv.FormatFloat(o.threshold, 'f', -1, 64)
	fmt.Fprintf(stdout, "%s time per operation (us), B/A > %s marked SLOWER (within noise where B's p10..p90 overlaps A's)\n", o.metric, limit)
	header, caseCells := report.CaseColumns(append(slices.Clone(a.Timing), b.Timing...))
	t := report.Table(stdout, append(header, "A us", "B us", "B/A", "> "+limit)...)
	for _, r := range c.Rows {
		ratio, mark := "n/a", ""
		if r.A > 0 {
			ratio = fmt.Sprintf("%.3f", r.Ratio)
		}
		switch {
		case r.Noise:
			mark = "within noise"
		case r.Over:
			mark = "SLOWER"
		}
		t.Append(append(caseCells(r.Case), fmt.Sprintf("%.2f", r.A), fmt.Sprintf("%.2f", r.B), ratio, mark))
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
		t := report.Table(stdout, header...)
		for _, s := range only.stats {
			t.Append(caseCells(s.Case))
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	noise := ""
	if c.Noise > 0 {
		noise = fmt.Sprintf("; %d more above it within noise (p10..p90 overlap)", c.Noise)
	}
	switch {
	case c.Slower > 0:
		fmt.Fprintf(stdout, "FAIL: %d of %d common case(s) slower in B than %s x A (%s)%s\n", c.Slower, len(c.Rows), limit, o.metric, noise)
	case c.Noise > 0:
		fmt.Fprintf(stdout, "ok: none of %d common case(s) slower in B than %s x A (%s) beyond noise%s\n", len(c.Rows), limit, o.metric, noise)
	default:
		fmt.Fprintf(stdout, "ok: all %d common case(s) within %s x A (%s)\n", len(c.Rows), limit, o.metric)
	}
	return nil
}

func describe(path string, s report.Summary) string {
	return fmt.Sprintf("%s (rsag %s, commit %s; %s on %d ranks; started %s)",
		path, s.RSAG.Version, s.RSAG.Commit, s.Backend, s.WorldSize, s.Started)
}

// incompleteWarnings say which runs did not complete, compared only
// because -incomplete was given.
func incompleteWarnings(in [2]input) []string {
	var out []string
	for i, x := range in {
		if x.status != outdir.StatusComplete {
			out = append(out, fmt.Sprintf("WARNING: %s %s; compared only because -incomplete was given", "AB"[i:i+1], x.incomplete()))
		}
	}
	return out
}

// setupWarning says how the runs' setups differ, "" when they do not.
func setupWarning(a, b report.Summary) string {
	if a.WorldSize != b.WorldSize || a.Backend != b.Backend {
		return fmt.Sprintf("the runs differ in setup: A %s on %d ranks, B %s on %d ranks", a.Backend, a.WorldSize, b.Backend, b.WorldSize)
	}
	return ""
}

// writePage writes the comparison as a page to o.html.
func writePage(o options, in [2]input, c Comparison) error {
	a, b := in[0].summary, in[1].summary
	warnings := incompleteWarnings(in)
	if w := setupWarning(a, b); w != "" {
		warnings = append(warnings, w)
	}
	pc := page.Comparison{PathA: o.a, PathB: o.b, A: a, B: b, Metric: o.metric, Threshold: o.threshold,
		OnlyA: c.OnlyA, OnlyB: c.OnlyB, Warnings: warnings}
	for _, r := range c.Rows {
		pc.Rows = append(pc.Rows, page.ComparedCase{Case: r.TimingStat, A: r.A, B: r.B, Ratio: r.Ratio, Over: r.Over && !r.Noise, Noise: r.Noise})
	}
	var buf bytes.Buffer
	if err := page.WriteComparison(&buf, pc); err != nil {
		return err
	}
	return page.WriteBytes(o.html, buf.Bytes(), "choose a file in a directory you can write")
}
