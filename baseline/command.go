package baseline

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

	"rsag/coll"
	"rsag/history"
	"rsag/internal/exitcode"
	"rsag/report"
	"rsag/report/page"
)

// Exit codes of rsag check.
const (
	ExitOK       = 0 // no case slower
	ExitSlower   = 1 // some case slower than the baseline
	ExitBadInput = 2 // bad flags, an unreadable run or baseline, nothing to compare
)

const usage = `usage: rsag check -baseline DIR|FILE [-last N] [-tolerance 0.05] [-html FILE] [-junit FILE] [-metrics FILE] [-overwrite] RUN
       (RUN and DIR are output dirs; FILE is a history database, rsag history)

Judges each timing case of RUN against a baseline: one run's output dir, or
the median of the last N complete runs in a history database (failed runs
are never a baseline). From the samples of timings.csv it bootstraps a 95%
interval on the ratio RUN median / baseline median (seeded: the same inputs
give the same result); a case is SLOWER or faster only when the interval
excludes 1 and the ratio is beyond the tolerance. -html FILE writes RUN's
page with a section "Against the baseline"; -junit FILE the verdicts as
JUnit XML (a test case per case, failed when SLOWER) and -metrics FILE in
Prometheus' text format (node_exporter's textfile collector). A file
already there is replaced only when rsag wrote it, or with -overwrite.
Exit status: 0 when no case is slower, 1 when some is, 2 on bad input.

`

type options struct {
	baseline, run, html, junit, metrics string
	overwrite                           bool
	last                                int
	gate                                Options
}

// Command is rsag check with args (after "check"); its error carries the
// exit status (internal/exitcode).
func Command(args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return exitcode.New(ExitBadInput, err)
	}
	run, err := history.LoadRun(o.run)
	if err != nil {
		return exitcode.New(ExitBadInput, err)
	}
	if run.Status != "complete" {
		return exitcode.New(ExitBadInput, fmt.Errorf("%s is from a run that did not complete (%s): its timings may be partial; check a complete run", o.run, run.Reason))
	}
	if len(run.Samples) == 0 {
		return exitcode.New(ExitBadInput, fmt.Errorf("%s has no %s: the gate needs the run's samples (a run with its timing phase on)", o.run, history.TimingsFile))
	}
	base, what, err := loadBaseline(o, run)
	if err != nil {
		return exitcode.New(ExitBadInput, err)
	}
	var order []coll.Case
	for _, s := range run.Summary.Timing {
		order = append(order, s.Case)
	}
	cases := Judge(order, run.Samples, base, o.gate)
	r := Result{Baseline: what, Run: o.run, Options: o.gate, Cases: cases}
	if r.Compared() == 0 {
		return exitcode.New(ExitBadInput, fmt.Errorf("%s and the baseline (%s) have no timing case in common", o.run, what))
	}
	if err := r.Write(stdout); err != nil {
		return exitcode.New(ExitBadInput, err)
	}
	if o.html != "" {
		var b bytes.Buffer
		if err := page.WriteAgainst(&b, run.Summary, r.Page()); err != nil {
			return exitcode.New(ExitBadInput, err)
		}
		if err := page.WriteBytes(o.html, b.Bytes(), page.Writing{Fix: "choose a file in a directory you can write", Overwrite: o.overwrite, Inputs: []string{o.run, o.baseline}}); err != nil {
			return exitcode.New(ExitBadInput, err)
		}
		fmt.Fprintf(stdout, "wrote %s\n", o.html)
	}
	for _, out := range []struct {
		path, what string
		encode     func(*bytes.Buffer) error
		ours       func([]byte) bool
	}{
		{o.junit, "JUnit XML", func(b *bytes.Buffer) error { return report.EncodeJUnit(b, r.JUnit()) }, isJUnit},
		{o.metrics, "metrics", r.EncodeMetrics, isMetrics},
	} {
		if out.path == "" {
			continue
		}
		var b bytes.Buffer
		if err := out.encode(&b); err != nil {
			return exitcode.New(ExitBadInput, err)
		}
		if err := page.WriteBytes(out.path, b.Bytes(), page.Writing{Fix: "choose a file in a directory you can write", Overwrite: o.overwrite,
			Inputs: []string{o.run, o.baseline}, What: "the " + out.what, Ours: out.ours}); err != nil {
			return exitcode.New(ExitBadInput, err)
		}
		fmt.Fprintf(stdout, "wrote %s\n", out.path)
	}
	if r.Count(Slower) > 0 {
		return exitcode.Silent(ExitSlower)
	}
	return nil
}

// The heads of the files rsag check writes.
func isJUnit(head []byte) bool   { return bytes.Contains(head, []byte(`<testsuites name="rsag check"`)) }
func isMetrics(head []byte) bool { return bytes.HasPrefix(head, []byte("# HELP rsag_baseline_")) }

// JUnit is the verdicts as one test suite, "baseline": a case per timing
// case, failed when it is SLOWER.
func (r Result) JUnit() report.JUnitSuites {
	st := report.JUnitSuite{Name: "baseline"}
	for _, c := range r.Cases {
		name := report.GateResult{Stat: report.TimingStat{Case: c.Case}}.Name() + " " + string(c.Case.Mode)
		if c.Verdict == Missing {
			st.Cases = append(st.Cases, report.JUnitCase{Name: name, ClassName: "rsag.baseline", Skipped: &report.JUnitFailure{Message: "not in the baseline"}})
			st.Tests++
			st.Skipped++
			continue
		}
		st.Add(name, c.Verdict == Slower, "regression", fmt.Sprintf("%s: %.3fx the baseline's median (%.3f..%.3f), beyond %.3g%%: %.2f us against %.2f",
			name, c.Ratio, c.Lo, c.Hi, r.Options.Tolerance*100, c.RunUS, c.BaseUS))
	}
	return report.NewJUnit("rsag check", st)
}

// EncodeMetrics writes the verdicts as gauges: per case its ratio to the
// baseline and the interval's ends, and whether it is slower; and how
// many cases are.
func (r Result) EncodeMetrics(b *bytes.Buffer) error {
	g := report.NewGauges()
	g.Set("rsag_baseline_slower_cases", "Cases slower than the baseline beyond the tolerance.", nil, nil, float64(r.Count(Slower)))
	g.Set("rsag_baseline_compared_cases", "Cases judged against the baseline.", nil, nil, float64(r.Compared()))
	for _, c := range r.Cases {
		if c.Verdict == Missing {
			continue
		}
		g.SetCase("rsag_baseline_ratio", "The case's median over the baseline's median.", c.Case, c.Ratio)
		g.SetCase("rsag_baseline_ratio_low", "The low end of the bootstrap interval on the ratio.", c.Case, c.Lo)
		g.SetCase("rsag_baseline_ratio_high", "The high end of the bootstrap interval on the ratio.", c.Case, c.Hi)
		g.SetCase("rsag_baseline_slower", "1 when the case is slower than the baseline beyond the tolerance.", c.Case, boolFloat(c.Verdict == Slower))
	}
	return g.Encode(b)
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func parse(args []string, stderr io.Writer) (options, error) {
	o := options{gate: Defaults}
	fs := flag.NewFlagSet("rsag check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.baseline, "baseline", "", "the baseline: a run's output `DIR`, or a history database FILE")
	fs.IntVar(&o.last, "last", 5, "with a history FILE: the baseline is the median of its last `N` complete runs")
	fs.Float64Var(&o.gate.Tolerance, "tolerance", Defaults.Tolerance, "a change smaller than this `fraction` is never reported")
	fs.Uint64Var(&o.gate.Seed, "seed", Defaults.Seed, "the bootstrap's `seed`")
	fs.StringVar(&o.html, "html", "", "write RUN's page with the section \"Against the baseline\" to `FILE`")
	fs.StringVar(&o.junit, "junit", "", "write the verdicts as JUnit XML to `FILE`")
	fs.StringVar(&o.metrics, "metrics", "", "write the verdicts in Prometheus' text format to `FILE`")
	fs.BoolVar(&o.overwrite, "overwrite", false, "replace a file at -html, -junit or -metrics that rsag did not write")
	var runs []string
	for {
		if err := fs.Parse(args); err != nil {
			return o, err
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		runs, args = append(runs, args[0]), args[1:]
	}
	switch {
	case len(runs) != 1:
		return o, fmt.Errorf("want one run's output dir, got %d (rsag check -baseline results/last-week results/today)", len(runs))
	case o.baseline == "":
		return o, errors.New("-baseline is missing: give a run's output dir or a history database")
	case o.last < 1:
		return o, fmt.Errorf("-last %d: give at least 1 run", o.last)
	case !(o.gate.Tolerance >= 0 && o.gate.Tolerance < 1) || math.IsNaN(o.gate.Tolerance):
		return o, fmt.Errorf("-tolerance %v: give a fraction from 0 to below 1, e.g. 0.05 for 5%%", o.gate.Tolerance)
	}
	o.run = runs[0]
	return o, nil
}

// isHistory says whether path is an SQLite file (its header) rather than a
// run's dir or summary.
func isHistory(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 16)
	n, _ := io.ReadFull(f, head)
	return n == 16 && string(head) == "SQLite format 3\x00"
}

// loadBaseline reads the baseline's samples, and says what it is.
func loadBaseline(o options, run history.Run) ([]map[coll.Case][]float64, string, error) {
	if !isHistory(o.baseline) {
		b, err := history.LoadRun(o.baseline)
		if err != nil {
			return nil, "", err
		}
		if !b.BaselineOK() {
			return nil, "", fmt.Errorf("%s is from a run that did not complete or whose checks failed: a baseline is a complete run", o.baseline)
		}
		if len(b.Samples) == 0 {
			return nil, "", fmt.Errorf("%s has no %s: a baseline needs its samples", o.baseline, history.TimingsFile)
		}
		return []map[coll.Case][]float64{b.Samples}, filepath.Clean(o.baseline), nil
	}
	db, err := history.Open(o.baseline)
	if err != nil {
		return nil, "", err
	}
	defer db.Close()
	runs, err := db.Baseline(o.last, run.Key())
	if err != nil {
		return nil, "", err
	}
	if len(runs) == 0 {
		return nil, "", fmt.Errorf("%s has no complete run to be a baseline (other than %s)", o.baseline, o.run)
	}
	var out []map[coll.Case][]float64
	for _, r := range runs {
		out = append(out, r.Samples)
	}
	ids := strconv.FormatInt(runs[len(runs)-1].ID, 10)
	if len(runs) > 1 {
		ids += "-" + strconv.FormatInt(runs[0].ID, 10)
	}
	return out, fmt.Sprintf("the median of %s's last %d complete runs (%s)", o.baseline, len(runs), ids), nil
}

// Result is the gate's outcome.
type Result struct {
	Baseline, Run string
	Options       Options
	Cases         []Case
}

// Count is the number of cases with verdict v.
func (r Result) Count(v string) int {
	n := 0
	for _, c := range r.Cases {
		if c.Verdict == v {
			n++
		}
	}
	return n
}

// Compared is the number of cases judged.
func (r Result) Compared() int { return len(r.Cases) - r.Count(Missing) }

// Write prints the table and the verdict line.
func (r Result) Write(w io.Writer) error {
	fmt.Fprintf(w, "baseline: %s\nrun: %s\n", r.Baseline, r.Run)
	fmt.Fprintf(w, "median us per operation, run / baseline with its %.0f%% bootstrap interval; SLOWER or faster beyond %.3g%% when the interval excludes 1\n",
		r.Options.Level*100, r.Options.Tolerance*100)
	var stats []report.TimingStat
	for _, c := range r.Cases {
		stats = append(stats, report.TimingStat{Case: c.Case})
	}
	header, cells := report.CaseColumns(stats)
	t := report.Table(w, append(header, "n", "base us", "run us", "ratio", "interval", "verdict")...)
	for _, c := range r.Cases {
		row := append(cells(c.Case), strconv.Itoa(c.Samples))
		if c.Verdict == Missing {
			row = append(row, "-", fmt.Sprintf("%.2f", c.RunUS), "-", "-", "not in the baseline")
		} else {
			row = append(row, fmt.Sprintf("%.2f", c.BaseUS), fmt.Sprintf("%.2f", c.RunUS), fmt.Sprintf("%.3f", c.Ratio),
				fmt.Sprintf("%.3f..%.3f", c.Lo, c.Hi), verdictWord(c.Verdict))
		}
		t.Append(row)
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintln(w, r.Verdict())
	return nil
}

// Verdict is the closing line.
func (r Result) Verdict() string {
	slower, faster := r.Count(Slower), r.Count(Faster)
	if slower > 0 {
		return fmt.Sprintf("FAIL: %d of %d case(s) slower than the baseline beyond %.3g%% (%d faster)", slower, r.Compared(), r.Options.Tolerance*100, faster)
	}
	return fmt.Sprintf("ok: none of %d case(s) slower than the baseline beyond %.3g%% (%d faster)", r.Compared(), r.Options.Tolerance*100, faster)
}

func verdictWord(v string) string {
	switch v {
	case Slower:
		return "SLOWER"
	case Faster:
		return "faster"
	}
	return ""
}

// Page is the result as the run's page shows it.
func (r Result) Page() page.Against {
	a := page.Against{Baseline: r.Baseline, Tolerance: r.Options.Tolerance, Level: r.Options.Level, Verdict: r.Verdict(), Slower: r.Count(Slower)}
	for _, c := range r.Cases {
		a.Cases = append(a.Cases, page.AgainstCase{Case: report.TimingStat{Case: c.Case, Samples: c.Samples}, BaseUS: c.BaseUS, RunUS: c.RunUS,
			Ratio: c.Ratio, Lo: c.Lo, Hi: c.Hi, Verdict: verdictWord(c.Verdict), Missing: c.Verdict == Missing})
	}
	return a
}
