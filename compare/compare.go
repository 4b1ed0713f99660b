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
	"slices"
	"strconv"
	"strings"

	"rsag/coll"
	"rsag/config"
	"rsag/internal/termsafe"
	"rsag/report"
	"rsag/report/page"
)

// Exit codes.
const (
	ExitOK           = 0 // no common case of B is slower, and every one over the threshold could be judged
	ExitSlower       = 1 // some case's B/A is above the threshold beyond what A's spread explains
	ExitBadInput     = 2 // bad flags, an unreadable or foreign file, no common case
	ExitInconclusive = 3 // none slower, but some case over the threshold has too few samples to judge
)

// Metric is a statistic that can be compared, and how much of a change in
// it A's own spread explains: B is slower only when its statistic lies
// above A's Upper (the next quantile out), faster only below A's Lower.
// Fewer than MinSamples samples in either run cannot place a quantile
// that far out, and a change over the threshold is then inconclusive
// (unless every sample of B lies beyond every sample of A, which is a
// verdict by itself; see separated).
type Metric struct {
	Name         string
	Of           func(report.TimingStat) float64
	Upper, Lower func(report.TimingStat) float64
	MinSamples   int
}

func min_(s report.TimingStat) float64   { return s.MinUS }
func p10(s report.TimingStat) float64    { return s.P10US }
func median(s report.TimingStat) float64 { return s.MedianUS }
func p90(s report.TimingStat) float64    { return s.P90US }
func p99(s report.TimingStat) float64    { return s.P99US }
func maxOf(s report.TimingStat) float64  { return s.MaxUS }

// Metrics are the statistics -metric takes, in the order they are listed.
var Metrics = []Metric{
	{Name: "median", Of: median, Upper: p90, Lower: p10, MinSamples: 10},
	{Name: "p90", Of: p90, Upper: p99, Lower: median, MinSamples: 20},
	{Name: "p99", Of: p99, Upper: maxOf, Lower: p90, MinSamples: 100},
	{Name: "min", Of: min_, Upper: p10, Lower: min_, MinSamples: 10},
}

// MetricNamed is the metric of that name.
func MetricNamed(name string) (Metric, bool) {
	for _, m := range Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

const usage = `usage: rsag compare [-threshold 1.10] [-metric median[,p99,...]] [-incomplete] [-html FILE [-overwrite]] A/summary.json B/summary.json
       (an output dir stands for the summary.json in it)

Compares the timing cases two runs share (same run, size, dtype, op, placement,
method, batch and mode) by the ratio B/A of a statistic of their time per
operation (median, p90, p99 or min; -metric median,p99 judges both). A case
above the threshold is SLOWER only when B's statistic lies beyond A's own
spread (the median above A's p90, p90 above A's p99, p99 above A's max, min
above A's p10), or every sample of B is slower than every sample of A;
otherwise it is within noise. With too few samples to place that spread
(median and min 10, p90 20, p99 100) it is inconclusive. Cases faster
beyond the threshold are pointed out, and never fail. A run that did not
complete (its run.json, or without one its summary.json, says so) is
refused unless -incomplete. -html FILE writes the comparison as a page too;
a file already there is replaced only when it is a page rsag wrote (or with
-overwrite), never when it is an input. Exit status: 0 when no case of B is
slower, 1 when some is, 2 on bad input, 3 when none is slower but some case
over the threshold is inconclusive.

`

// options are the parsed command line.
type options struct {
	threshold  float64
	metricText string
	metrics    []Metric
	incomplete bool   // compare a run that did not complete, with a warning
	html       string // "" for no page
	overwrite  bool   // -html may replace a file rsag did not write
	a, b       string
}

func (o options) metricNames() string {
	var names []string
	for _, m := range o.metrics {
		names = append(names, m.Name)
	}
	return strings.Join(names, ", ")
}

// Main is the command with args (after "compare"): it returns the exit
// code, which main alone passes to os.Exit.
func Main(args []string, stdout, stderr io.Writer) int {
	// Every string of the summaries reaches the terminal through termsafe.
	stdout, stderr = termsafe.NewWriter(stdout), termsafe.NewWriter(stderr)
	opts, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "rsag compare: %v\n", err)
		return ExitBadInput
	}
	var in [2]page.Input
	for i, path := range []string{opts.a, opts.b} {
		if in[i], err = page.Read(path); err != nil {
			fmt.Fprintf(stderr, "rsag compare: %v\n", err)
			return ExitBadInput
		}
		if !in[i].Complete() && !opts.incomplete {
			fmt.Fprintf(stderr, "rsag compare: %s %s: its timings may be partial or wrong; compare complete runs, or pass -incomplete to compare it anyway\n",
				"AB"[i:i+1], in[i].Incomplete())
			return ExitBadInput
		}
	}
	a, b := in[0].Summary, in[1].Summary
	c := Compare(a, b, opts.metrics, opts.threshold)
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
	switch {
	case c.Slower > 0:
		return ExitSlower
	case c.Inconclusive > 0:
		return ExitInconclusive
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
	fs.StringVar(&opts.metricText, "metric", "median", "statistic to compare: median, p90, p99 or min, or several joined by commas (median,p99): a case is slower when any is")
	fs.BoolVar(&opts.incomplete, "incomplete", false, "compare a run that did not complete (failed, or still running), with a warning")
	fs.StringVar(&opts.html, "html", "", "write the comparison as a self-contained page to `FILE`")
	fs.BoolVar(&opts.overwrite, "overwrite", false, page.OverwriteHelp)
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
	for _, name := range strings.Split(opts.metricText, ",") {
		m, ok := MetricNamed(strings.TrimSpace(name))
		if !ok {
			return opts, fmt.Errorf("-metric %q is not one of median, p90, p99, min (or several joined by commas: median,p99)", config.Clip(opts.metricText))
		}
		if slices.ContainsFunc(opts.metrics, func(x Metric) bool { return x.Name == m.Name }) {
			return opts, fmt.Errorf("-metric %q names %s twice: name each once", config.Clip(opts.metricText), m.Name)
		}
		opts.metrics = append(opts.metrics, m)
	}
	if !(opts.threshold > 0) || math.IsInf(opts.threshold, 0) {
		return opts, fmt.Errorf("-threshold %v must be a finite positive ratio, e.g. 1.10", opts.threshold)
	}
	opts.a, opts.b = files[0], files[1]
	return opts, nil
}

// Verdict is what a comparison says of a case, in one statistic.
type Verdict int

const (
	Same         Verdict = iota // B/A within [1/threshold, threshold]
	Faster                      // below 1/threshold, beyond A's spread
	Noise                       // beyond the threshold either way, but within A's spread
	Inconclusive                // above the threshold, with too few samples to judge
	Slower                      // above the threshold, beyond A's spread
)

// Judged is one statistic of one case, compared.
type Judged struct {
	Metric  string
	A, B    float64 // the statistic, µs
	Ratio   float64 // B / A
	Verdict Verdict
	// Why says what decided a verdict other than Same, for the table:
	// "4 samples; median needs 10", "above A's p90 19.00".
	Why string
}

// Row is one case both runs have, judged in every metric asked for.
type Row struct {
	report.TimingStat // A's case and statistics
	B                 report.TimingStat
	Judged            []Judged // in the order of the metrics
	Verdict           Verdict  // the worst of Judged
}

// Comparison is the outcome of Compare. The counts are of rows, by their
// verdict.
type Comparison struct {
	Rows         []Row               // in A's order
	OnlyA, OnlyB []report.TimingStat // in their file's order
	Slower       int
	Inconclusive int
	Noise        int
	Faster       int
}

// Large are the rows whose B/A is beyond the threshold either way in some
// metric, whatever their verdict: what a reader must see.
func (c Comparison) Large(threshold float64) []Row {
	var out []Row
	for _, r := range c.Rows {
		if slices.ContainsFunc(r.Judged, func(j Judged) bool { return j.Ratio > threshold || j.Ratio < 1/threshold }) {
			out = append(out, r)
		}
	}
	return out
}

// maxSeparatedChance is how unlikely, at most, complete separation of two
// runs' samples must be under "no change" to decide a case by itself.
const maxSeparatedChance = 0.05

// separated reports whether every one of nb samples of B lies above
// (slower) or below every one of na samples of A, and that by chance
// alone, were the two runs one distribution, this is rarer than
// maxSeparatedChance: its chance is 1 / C(na+nb, na) (a Mann-Whitney U of
// 0). Two 4-sample runs apart are decided (1/70); two 2-sample runs are not
// (1/6).
func separated(a, b report.TimingStat, slower bool) bool {
	apart := b.MinUS > a.MaxUS
	if !slower {
		apart = b.MaxUS < a.MinUS
	}
	if !apart {
		return false
	}
	// log C(na+nb, na) via Lgamma, so that large counts do not overflow.
	na, nb := float64(a.Samples), float64(b.Samples)
	lg := func(x float64) float64 { v, _ := math.Lgamma(x); return v }
	logC := lg(na+nb+1) - lg(na+1) - lg(nb+1)
	return -logC < math.Log(maxSeparatedChance)
}

// judge compares one metric of a case. The rule fails safe: a change over
// the threshold is called slower only when A's own spread cannot explain
// it, is within noise when it can, and is inconclusive when there are too
// few samples to place the spread.
func judge(m Metric, a, b report.TimingStat, threshold float64) Judged {
	j := Judged{Metric: m.Name, A: m.Of(a), B: m.Of(b)}
	j.Ratio = j.B / j.A // CheckSummary: every time is positive
	slower := j.Ratio > threshold
	if !slower && j.Ratio >= 1/threshold {
		return j
	}
	enough := a.Samples >= m.MinSamples && b.Samples >= m.MinSamples
	switch {
	case separated(a, b, slower):
		j.Verdict, j.Why = Faster, "every sample of B below every sample of A"
		if slower {
			j.Verdict, j.Why = Slower, "every sample of B above every sample of A"
		}
	case !enough && slower:
		j.Verdict, j.Why = Inconclusive, fmt.Sprintf("%d and %d samples; %s needs %d to judge", a.Samples, b.Samples, m.Name, m.MinSamples)
	case !enough:
		j.Verdict, j.Why = Noise, fmt.Sprintf("too few samples to call it faster (%s needs %d)", m.Name, m.MinSamples)
	case slower && j.B > m.Upper(a):
		j.Verdict, j.Why = Slower, "beyond A's spread"
	case !slower && j.B < m.Lower(a):
		j.Verdict, j.Why = Faster, "beyond A's spread"
	default:
		j.Verdict, j.Why = Noise, "within A's spread"
	}
	return j
}

// Compare matches a's and b's timing cases and judges each in every
// metric.
func Compare(a, b report.Summary, metrics []Metric, threshold float64) Comparison {
	var c Comparison
	inA, inB := map[coll.Case]bool{}, map[coll.Case]report.TimingStat{}
	for _, s := range b.Timing {
		inB[s.Case] = s
	}
	for _, s := range a.Timing {
		inA[s.Case] = true
		sb, ok := inB[s.Case]
		if !ok {
			c.OnlyA = append(c.OnlyA, s)
			continue
		}
		r := Row{TimingStat: s, B: sb}
		for _, m := range metrics {
			j := judge(m, s, sb, threshold)
			r.Judged = append(r.Judged, j)
			r.Verdict = max(r.Verdict, j.Verdict)
		}
		switch r.Verdict {
		case Slower:
			c.Slower++
		case Inconclusive:
			c.Inconclusive++
		case Noise:
			c.Noise++
		case Faster:
			c.Faster++
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

// Mark is a judged metric's word in the tables: "SLOWER", "within noise",
// "inconclusive: 4 and 4 samples; median needs 10", "faster", "".
func (j Judged) Mark() string {
	switch j.Verdict {
	case Slower:
		return "SLOWER"
	case Inconclusive:
		return "inconclusive: " + j.Why
	case Noise:
		if j.Ratio < 1 {
			return "faster? within noise"
		}
		return "within noise"
	case Faster:
		return "faster"
	}
	return ""
}

// mark is a row's word: each metric's, named when there are several.
func (r Row) mark() string {
	var marks []string
	for _, j := range r.Judged {
		if m := j.Mark(); m != "" {
			if len(r.Judged) > 1 {
				m = j.Metric + " " + m
			}
			marks = append(marks, m)
		}
	}
	return strings.Join(marks, "; ")
}

// write prints the comparison: which runs, the table of common cases, the
// cases only one run has, the large changes both ways and a closing
// verdict. Warnings (a failed run, different world sizes or backends) go
// to stderr.
func write(stdout, stderr io.Writer, o options, in [2]page.Input, c Comparison) error {
	a, b := in[0].Summary, in[1].Summary
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
	for _, note := range crowdedNotes(a, b) {
		fmt.Fprintf(stdout, "note: %s\n", note)
	}

	limit := strconv.FormatFloat(o.threshold, 'f', -1, 64)
	fmt.Fprintf(stdout, "%s time per operation (us), B/A > %s marked SLOWER when beyond A's spread, else within noise; inconclusive with too few samples\n",
		o.metricNames(), limit)
	header, caseCells := report.CaseColumns(append(slices.Clone(a.Timing), b.Timing...))
	for _, m := range o.metrics {
		if len(o.metrics) == 1 {
			header = append(header, "A us", "B us", "B/A")
		} else {
			header = append(header, "A "+m.Name, "B "+m.Name, "B/A "+m.Name)
		}
	}
	t := report.Table(stdout, append(header, "> "+limit)...)
	for _, r := range c.Rows {
		cells := caseCells(r.Case)
		for _, j := range r.Judged {
			cells = append(cells, fmt.Sprintf("%.2f", j.A), fmt.Sprintf("%.2f", j.B), fmt.Sprintf("%.3f", j.Ratio))
		}
		t.Append(append(cells, r.mark()))
	}
	if err := t.Render(); err != nil {
		return err
	}
	caseHeader, _ := report.CaseColumns(append(slices.Clone(a.Timing), b.Timing...))
	for _, only := range []struct {
		name  string
		stats []report.TimingStat
	}{{"A (" + o.a + ")", c.OnlyA}, {"B (" + o.b + ")", c.OnlyB}} {
		if len(only.stats) == 0 {
			continue
		}
		fmt.Fprintf(stdout, "Only in %s: %d case(s)\n", only.name, len(only.stats))
		t := report.Table(stdout, caseHeader...)
		for _, s := range only.stats {
			t.Append(caseCells(s.Case))
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	for _, line := range LargeLines(c, o.threshold) {
		fmt.Fprintln(stdout, line)
	}
	fmt.Fprintln(stdout, VerdictLine(c, o.metricNames(), o.threshold))
	return nil
}

// LargeLines point out every case whose B/A is beyond the threshold either
// way, faster ones too, whatever its verdict: "large change: 1K float32
// ... direct median B/A 0.142 (faster)". At most 10, then a count.
func LargeLines(c Comparison, threshold float64) []string {
	var out []string
	large := c.Large(threshold)
	for i, r := range large {
		if i == 10 {
			out = append(out, fmt.Sprintf("... and %d more large changes (the table lists them)", len(large)-10))
			break
		}
		var parts []string
		for _, j := range r.Judged {
			if j.Ratio > threshold || j.Ratio < 1/threshold {
				word := j.Mark()
				if j.Verdict == Inconclusive {
					word = "inconclusive"
				}
				parts = append(parts, fmt.Sprintf("%s B/A %.3f (%s)", j.Metric, j.Ratio, word))
			}
		}
		out = append(out, fmt.Sprintf("large change: %s: %s", r.Case.String(), strings.Join(parts, ", ")))
	}
	return out
}

// VerdictLine is the comparison's last line: it counts what the table
// shows, every row by its verdict.
func VerdictLine(c Comparison, metrics string, threshold float64) string {
	limit := strconv.FormatFloat(threshold, 'f', -1, 64)
	n := len(c.Rows)
	counts := fmt.Sprintf("%d slower beyond A's spread, %d inconclusive (too few samples), %d within noise, %d faster", c.Slower, c.Inconclusive, c.Noise, c.Faster)
	switch {
	case c.Slower > 0:
		return fmt.Sprintf("FAIL: %d of %d common case(s) slower in B than %s x A (%s): %s", c.Slower, n, limit, metrics, counts)
	case c.Inconclusive > 0:
		return fmt.Sprintf("INCONCLUSIVE: %d of %d common case(s) above %s x A (%s) have too few samples to judge; none is slower beyond A's spread: %s",
			c.Inconclusive, n, limit, metrics, counts)
	case c.Noise+c.Faster > 0:
		return fmt.Sprintf("ok: none of %d common case(s) slower in B than %s x A (%s) beyond A's spread: %s", n, limit, metrics, counts)
	}
	return fmt.Sprintf("ok: all %d common case(s) within %s x A (%s)", n, limit, metrics)
}

func describe(path string, s report.Summary) string {
	return fmt.Sprintf("%s (rsag %s, commit %s; %s on %d ranks; started %s)",
		path, s.RSAG.Version, s.RSAG.Commit, s.Backend, s.WorldSize, s.Started)
}

// incompleteWarnings say which runs did not complete, compared only
// because -incomplete was given.
func incompleteWarnings(in [2]page.Input) []string {
	var out []string
	for i, x := range in {
		if !x.Complete() {
			out = append(out, fmt.Sprintf("WARNING: %s %s; compared only because -incomplete was given", "AB"[i:i+1], x.Incomplete()))
		}
	}
	return out
}

// crowdedNotes say which run's ranks took turns on shared processors:
// identical runs then differ by the scheduler's luck, not the collectives.
func crowdedNotes(a, b report.Summary) []string {
	var out []string
	for _, r := range []struct {
		name string
		s    report.Summary
	}{{"A", a}, {"B", b}} {
		if note := report.CrowdedNote(r.s.Nodes); note != "" {
			out = append(out, r.name+"'s "+note)
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
func writePage(o options, in [2]page.Input, c Comparison) error {
	a, b := in[0].Summary, in[1].Summary
	warnings := incompleteWarnings(in)
	if w := setupWarning(a, b); w != "" {
		warnings = append(warnings, w)
	}
	warnings = append(warnings, crowdedNotes(a, b)...)
	pc := page.Comparison{PathA: o.a, PathB: o.b, A: a, B: b, Metric: o.metricNames(), Threshold: o.threshold,
		OnlyA: c.OnlyA, OnlyB: c.OnlyB, Warnings: warnings, Verdict: VerdictLine(c, o.metricNames(), o.threshold),
		Large: LargeLines(c, o.threshold), Slower: c.Slower, Inconclusive: c.Inconclusive, Noise: c.Noise, Faster: c.Faster}
	for _, m := range o.metrics {
		pc.Metrics = append(pc.Metrics, m.Name)
	}
	for _, r := range c.Rows {
		cc := page.ComparedCase{Case: r.TimingStat, Mark: r.mark(), Slower: r.Verdict == Slower, Inconclusive: r.Verdict == Inconclusive}
		for _, j := range r.Judged {
			cc.A, cc.B, cc.Ratio = append(cc.A, j.A), append(cc.B, j.B), append(cc.Ratio, j.Ratio)
		}
		pc.Rows = append(pc.Rows, cc)
	}
	var buf bytes.Buffer
	if err := page.WriteComparison(&buf, pc); err != nil {
		return err
	}
	var inputs []string
	for _, x := range in {
		inputs = append(inputs, x.Files()...)
	}
	return page.WriteBytes(o.html, buf.Bytes(), page.Writing{Fix: "choose a file in a directory you can write", Overwrite: o.overwrite, Inputs: inputs})
}
