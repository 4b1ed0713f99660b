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
	"slices"
	"strconv"
	"strings"

	"rsag/coll"
	"rsag/history"
	"rsag/internal/exitcode"
	"rsag/internal/fold"
	"rsag/internal/termsafe"
	"rsag/outdir"
	"rsag/report"
	"rsag/report/page"
)

// Exit codes of rsag check and rsag compare (docs/running.md).
const (
	ExitOK           = 0 // no case slower, and every one beyond the tolerance could be judged
	ExitSlower       = 1 // some case slower than the baseline
	ExitBadInput     = 2 // bad flags, an unreadable run or baseline, a baseline of another kind, nothing to compare
	ExitInconclusive = 3 // none slower, but some case beyond the tolerance could not be judged
)

// MaxLast bounds -last: the baseline's samples are read whole.
const MaxLast = 100

// The one explanation of the judge, which both usages end with.
const how = `Judges each timing case of RUN against a baseline of its kind only (the same
world size, nodes, backend, config and GPU sharing; another kind is refused,
naming the difference), from each case's samples (timings.csv beside
summary.json). With several baseline runs, a case is SLOWER or faster when
RUN's median is beyond the baseline runs' spread from run to run (a t
prediction interval at 95% over all the cases) and beyond the tolerance. One
baseline run cannot separate the run from the machine: a case is then called
only when its samples put it beyond 1.5x, and a smaller change is
inconclusive, as is one with fewer than 3 samples a side. -html FILE writes
RUN's page with a section "Against the baseline"; -junit FILE the verdicts
as JUnit XML (a test case per case, failed when SLOWER) and -metrics FILE in
Prometheus' text format (node_exporter's textfile collector). A file already
there is replaced only when rsag wrote it, or with -overwrite. Exit status:
0 when no case is slower, 1 when some is, 2 on bad input, 3 when none is
slower but some case beyond the tolerance is inconclusive.

`

var usages = map[string]string{
	"check": `usage: rsag check -baseline DIR|FILE [-last N] [-tolerance 0.05] [-html FILE] [-junit FILE] [-metrics FILE] [-overwrite] RUN
       (RUN and DIR are output dirs; FILE is a history database, rsag history)

The baseline is one run's output dir, or the last N complete runs of RUN's
kind in a history database (failed runs, and runs rsag check flagged and no
one accepted, are never a baseline). With a history, the verdict is recorded
in it against RUN: a flagged run is left out of later baselines until rsag
history -accept RUN FILE.
` + how,
	"compare": `usage: rsag compare [-tolerance 0.05] [-html FILE] [-junit FILE] [-metrics FILE] [-overwrite] A B
       (A and B are output dirs, or their summary.json; the same as rsag check -baseline A B)

B against A, case by case: A is a baseline of one run.
` + how,
}

type options struct {
	name                                string // the front-end: check or compare
	baseline, run, html, junit, metrics string
	overwrite                           bool
	last                                int
	gate                                Options
}

// Command is rsag check with args (after "check"); its error carries the
// exit status (internal/exitcode).
func Command(args []string, stdout, stderr io.Writer) error {
	return judge("check", args, stdout, stderr)
}

// Compare is rsag compare A B: rsag check -baseline A B, one judge with two
// front-ends.
func Compare(args []string, stdout, stderr io.Writer) error {
	return judge("compare", args, stdout, stderr)
}

// judge runs either front-end. Every string of the inputs reaches the
// terminal through termsafe, the errors too, so they are said here.
func judge(name string, args []string, stdout, stderr io.Writer) error {
	stdout, stderr = termsafe.NewWriter(stdout), termsafe.NewWriter(stderr)
	err := check(name, args, stdout, stderr)
	if code, say := exitcode.Of(err); say {
		fmt.Fprintf(stderr, "rsag %s: %v\n", name, err)
		return exitcode.Silent(code)
	}
	return err
}

func check(name string, args []string, stdout, stderr io.Writer) error {
	o, err := parse(name, args, stderr)
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
		return exitcode.New(ExitBadInput, fmt.Errorf("%s has no %s: the judge needs the run's samples (a run with its timing phase on, its output dir whole)", o.run, history.TimingsFile))
	}
	if err := Validate(filepath.Join(run.Dir, history.TimingsFile), run.Samples); err != nil {
		return exitcode.New(ExitBadInput, err)
	}
	base, what, crowds, err := loadBaseline(o, run)
	if err != nil {
		return exitcode.New(ExitBadInput, err)
	}
	var order []coll.Case
	for _, s := range run.Summary.Timing {
		order = append(order, s.Case)
	}
	cases := Judge(order, run.Samples, base, o.gate)
	r := Result{Baseline: what, Run: o.run, Options: o.gate, Cases: cases, Runs: len(base)}
	var why []string
	r.Notes, why = crowdedNotes(append([]crowding{{"the run's", run.Summary.Nodes}}, crowds...))
	if len(why) > 0 {
		r.Held = crowded(cases, strings.Join(why, " and "))
	}
	if r.Compared() == 0 {
		return exitcode.New(ExitBadInput, fmt.Errorf("%s and the baseline (%s) have no timing case in common", o.run, what))
	}
	if err := r.Write(stdout); err != nil {
		return exitcode.New(ExitBadInput, err)
	}
	if history.IsSQLite(o.baseline) {
		record(o.baseline, run, r, stdout, stderr)
	}
	if o.html != "" {
		var b bytes.Buffer
		if err := page.WriteAgainst(&b, run.Summary, r.Page()); err != nil {
			return exitcode.New(ExitBadInput, err)
		}
		if err := page.WriteBytes(o.html, b.Bytes(), page.Writing{Fix: "choose a file in a directory you can write", Overwrite: o.overwrite, Inputs: inputs(o)}); err != nil {
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
			Inputs: inputs(o), What: "the " + out.what, Ours: out.ours}); err != nil {
			return exitcode.New(ExitBadInput, err)
		}
		fmt.Fprintf(stdout, "wrote %s\n", out.path)
	}
	switch {
	case r.Count(Slower) > 0:
		return exitcode.Silent(ExitSlower)
	case r.Count(Inconclusive) > 0:
		return exitcode.Silent(ExitInconclusive)
	}
	return nil
}

// inputs are the files the command reads, never to be written over: the
// run's and a baseline dir's summary, run.json and timings, or the history.
func inputs(o options) []string {
	var out []string
	for _, p := range []string{o.run, o.baseline} {
		out = append(out, p)
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			for _, f := range []string{report.SummaryFile, outdir.RunFile, history.TimingsFile} {
				out = append(out, filepath.Join(p, f))
			}
		} else if !history.IsSQLite(p) {
			for _, f := range []string{outdir.RunFile, history.TimingsFile} {
				out = append(out, filepath.Join(filepath.Dir(p), f))
			}
		}
	}
	return out
}

// record writes the verdict into the history against the run (appended
// already or not yet): a flagged run is no baseline until accepted. A
// history rsag cannot write is said, and the verdict stands.
func record(file string, run history.Run, r Result, stdout, stderr io.Writer) {
	verdict := history.VerdictOK
	switch {
	case r.Count(Slower) > 0:
		verdict = history.VerdictFlagged
	case r.Held > 0:
		verdict = history.VerdictHeld
	case r.Count(Inconclusive) > 0:
		verdict = history.VerdictInconclusive
	}
	db, err := history.OpenWaiting(file, history.Existing, func() {
		fmt.Fprintf(stderr, "rsag check: %s is held by another writer: waiting up to %v to record the verdict\n", file, history.BusyTimeout)
	})
	if err == nil {
		err = db.Record(run.Key(), verdict, r.Verdict(), run.Dir)
		if cerr := db.Close(); err == nil {
			err = cerr
		}
	}
	say := func(format string, a ...any) { fmt.Fprintln(stdout, fold.Line(fmt.Sprintf(format, a...), fold.Width)) }
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "rsag check: the verdict above stands, but it was not recorded in %s: %v\n", file, err)
	case verdict == history.VerdictFlagged:
		say("recorded in %s: the run is flagged, and no baseline until: rsag history -accept %s %s", file, run.Dir, file)
	case verdict == history.VerdictHeld:
		say("recorded in %s: inconclusive, and held back: %d case(s) looked slower on crowded ranks; no baseline until: "+
			"rsag history -accept %s %s", file, r.Held, run.Dir, file)
	default:
		say("recorded in %s: %s", file, verdict)
	}
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
		if c.Verdict == Missing || c.Verdict == Inconclusive {
			why := "not in the baseline"
			if c.Verdict == Inconclusive {
				why = "inconclusive: " + c.Why
			}
			st.Cases = append(st.Cases, report.JUnitCase{Name: name, ClassName: "rsag.baseline", Skipped: &report.JUnitFailure{Message: why}})
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
	g.Set("rsag_baseline_inconclusive_cases", "Cases beyond the tolerance that could not be judged (too few samples, one baseline run).",
		nil, nil, float64(r.Count(Inconclusive)))
	for _, c := range r.Cases {
		if c.Verdict == Missing {
			continue
		}
		g.SetCase("rsag_baseline_ratio", "The case's median over the baseline's median.", c.Case, c.Ratio)
		if c.Lo != 0 || c.Hi != 0 {
			g.SetCase("rsag_baseline_ratio_low", "The low end of the interval on the ratio.", c.Case, c.Lo)
			g.SetCase("rsag_baseline_ratio_high", "The high end of the interval on the ratio.", c.Case, c.Hi)
		}
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

func parse(name string, args []string, stderr io.Writer) (options, error) {
	o := options{name: name, gate: Defaults, last: 1}
	fs := flag.NewFlagSet("rsag "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usages[name])
		fs.PrintDefaults()
	}
	if name == "check" {
		fs.StringVar(&o.baseline, "baseline", "", "the baseline: a run's output `DIR`, or a history database FILE")
		fs.IntVar(&o.last, "last", 5, fmt.Sprintf("with a history FILE: the baseline is its last `N` complete runs of the run's kind (at most %d)", MaxLast))
	}
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
	case name == "compare" && len(runs) != 2:
		return o, fmt.Errorf("want two output dirs (or their summary.json), got %d (rsag compare results/a results/b)", len(runs))
	case name == "compare":
		o.baseline, runs = runs[0], runs[1:]
	case len(runs) != 1:
		return o, fmt.Errorf("want one run's output dir, got %d (rsag check -baseline results/last-week results/today)", len(runs))
	case o.baseline == "":
		return o, errors.New("-baseline is missing: give a run's output dir or a history database")
	}
	switch {
	case o.last < 1 || o.last > MaxLast:
		return o, fmt.Errorf("-last %d: give from 1 to %d runs", o.last, MaxLast)
	case !(o.gate.Tolerance >= 0 && o.gate.Tolerance < 1) || math.IsNaN(o.gate.Tolerance):
		return o, fmt.Errorf("-tolerance %v: give a fraction from 0 to below 1, e.g. 0.05 for 5%%", o.gate.Tolerance)
	}
	o.run = runs[0]
	return o, nil
}

// crowding is a run's nodes, for what crowded their ranks
// (report.CrowdedNote), and whose they are: "the run's", "the baseline's",
// "baseline run 12's".
type crowding struct {
	whose string
	nodes []report.SummaryNode
}

// maxCrowdedNotes is how many runs' crowding the notes say at length (the
// run's first); a history's -last 100 of a busy machine says the rest in a
// count.
const maxCrowdedNotes = 3

// crowdedNotes are the notes on the runs whose ranks shared processors
// or waited for them, and why, in a few words each, once
// (report.CrowdedWhy).
func crowdedNotes(runs []crowding) (notes, why []string) {
	more := 0
	for _, c := range runs {
		n := report.CrowdedNote(c.nodes)
		if n == "" {
			continue
		}
		if len(notes) < maxCrowdedNotes {
			notes = append(notes, c.whose+" "+n)
		} else {
			more++
		}
		for _, w := range report.CrowdedWhy(c.nodes) {
			if !slices.Contains(why, w) {
				why = append(why, w)
			}
		}
	}
	if more > 0 {
		notes = append(notes, fmt.Sprintf("and %d more baseline run(s) whose ranks shared processors or waited for them", more))
	}
	return notes, why
}

// loadBaseline reads the baseline's samples, of the run's kind only, and
// says what it is, with each baseline run's nodes for how far it can be
// trusted (crowdedNotes).
func loadBaseline(o options, run history.Run) ([]map[coll.Case][]float64, string, []crowding, error) {
	kind := run.Kind()
	if !history.IsSQLite(o.baseline) {
		b, err := history.LoadRun(o.baseline)
		if err != nil {
			return nil, "", nil, err
		}
		if !b.BaselineOK() {
			return nil, "", nil, fmt.Errorf("%s is from a run that did not complete or whose checks failed: a baseline is a complete run", o.baseline)
		}
		if len(b.Samples) == 0 {
			return nil, "", nil, fmt.Errorf("%s has no %s: a baseline needs its samples", o.baseline, history.TimingsFile)
		}
		if d := kind.Differ(b.Kind()); d != "" {
			return nil, "", nil, fmt.Errorf("%s is not a run of %s's kind (%s): its timings are not comparable; give a baseline run with the same world size, nodes, backend and config",
				o.baseline, o.run, d)
		}
		if err := Validate(filepath.Join(o.baseline, history.TimingsFile), b.Samples); err != nil {
			return nil, "", nil, err
		}
		return []map[coll.Case][]float64{b.Samples}, filepath.Clean(o.baseline), []crowding{{"the baseline's", b.Summary.Nodes}}, nil
	}
	db, err := history.OpenReadOnly(o.baseline)
	if err != nil {
		return nil, "", nil, err
	}
	defer db.Close()
	runs, other, err := db.Baseline(o.last, run.Key(), run.Summary.Started, kind)
	if err != nil {
		return nil, "", nil, err
	}
	if len(runs) == 0 {
		if other.ID != 0 {
			return nil, "", nil, fmt.Errorf("%s has no complete run of %s's kind (%s) to be a baseline; its newest is run %d, of another kind (%s): judge runs against their own kind",
				o.baseline, o.run, kind, other.ID, kind.Differ(other.Kind))
		}
		return nil, "", nil, fmt.Errorf("%s has no complete run started before %s to be a baseline (other than it, and none flagged by rsag check and not accepted)",
			o.baseline, o.run)
	}
	var out []map[coll.Case][]float64
	for _, r := range runs {
		if err := Validate(fmt.Sprintf("%s, run %d", o.baseline, r.ID), r.Samples); err != nil {
			return nil, "", nil, err
		}
		out = append(out, r.Samples)
	}
	var ids []string // oldest first
	var crowds []crowding
	for i := len(runs) - 1; i >= 0; i-- {
		ids = append(ids, strconv.FormatInt(runs[i].ID, 10))
		crowds = append(crowds, crowding{fmt.Sprintf("baseline run %d's", runs[i].ID), runs[i].Nodes})
	}
	return out, fmt.Sprintf("%s's last %d complete run(s) of this kind (runs %s): %s", o.baseline, len(runs), strings.Join(ids, " "), kind), crowds, nil
}

// Result is the judge's outcome.
type Result struct {
	Baseline, Run string
	Options       Options
	Cases         []Case
	Runs          int      // baseline runs
	Notes         []string // what makes the comparison less fair: ranks that took turns on processors, or waited for them
	// Held is how many cases would have been called slower but for
	// crowded ranks (crowded): the run is then no baseline until accepted,
	// as a flagged one, or the slowdown would become its own baseline.
	Held int
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

// Write prints the table and the verdict line, prose folded to the
// terminal's width; an inconclusive case's reason is a note under the
// table, each reason once, so that the table stays within 120 columns.
func (r Result) Write(w io.Writer) error {
	w = report.Terminal(w)
	fmt.Fprintf(w, "baseline: %s\nrun: %s\n", r.Baseline, r.Run)
	if r.Runs == 1 {
		fmt.Fprintf(w, oneRunNote+"\n", r.Options.OneRun)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	fmt.Fprintf(w, "median us per operation, run / baseline with its interval (%.0f%% over all cases: the baseline runs' spread from run to run, "+
		"or the samples' when wider); SLOWER or faster beyond %.3g%% when the interval excludes 1\n", r.Options.Level*100, r.Options.Tolerance*100)
	var stats []report.TimingStat
	for _, c := range r.Cases {
		stats = append(stats, report.TimingStat{Case: c.Case})
	}
	header, cells := report.CaseColumns(stats)
	if !slices.ContainsFunc(r.Cases, func(c Case) bool { return c.Case.Run != "default" }) {
		// The config's one run of cases, unnamed: its column says nothing.
		all := cells
		header, cells = header[1:], func(k coll.Case) []string { return all(k)[1:] }
	}
	t := report.Table(w, append(header, "n", "base us", "run us", "ratio", "interval", "verdict")...)
	var whys []string // the inconclusive cases' reasons, each once
	for _, c := range r.Cases {
		row := append(cells(c.Case), strconv.Itoa(c.Samples))
		if c.Verdict == Missing {
			row = append(row, "-", fmt.Sprintf("%.2f", c.RunUS), "-", "-", "not in the baseline")
		} else {
			v := verdictText(c, r.Options.Tolerance)
			if c.Verdict == Inconclusive {
				i := slices.Index(whys, c.Why)
				if i < 0 {
					whys, i = append(whys, c.Why), len(whys)
				}
				v = fmt.Sprintf("inconclusive [%d]", i+1)
			}
			row = append(row, fmt.Sprintf("%.2f", c.BaseUS), fmt.Sprintf("%.2f", c.RunUS), fmt.Sprintf("%.3f", c.Ratio),
				intervalText(c), v)
		}
		t.Append(row)
	}
	if err := t.Render(); err != nil {
		return err
	}
	for i, why := range whys {
		fmt.Fprintf(w, "[%d] inconclusive: %s\n", i+1, why)
	}
	fmt.Fprintln(w, r.Verdict())
	return nil
}

// crowded makes every case judged slower or faster inconclusive, for why
// ("ranks shared processors"): the run's ranks, or a baseline run's,
// outnumbered their node's processors, or waited for one a share of the
// timing phase (report.WaitedShare), so that a median measures the ranks'
// turn-taking as much as the collective. Beside a CPU hog, 4 ranks on 2
// processors called identical runs 2 to 4 times slower in 2 of 20 pairs,
// and 2 ranks in 2 of 20 too (docs/history.md); a gate acts only on
// evidence that survives the machine's noise. It returns how many cases
// it took from slower.
func crowded(cases []Case, why string) (held int) {
	for i, c := range cases {
		if c.Verdict == Slower || c.Verdict == Faster {
			if c.Verdict == Slower {
				held++
			}
			cases[i].Verdict = Inconclusive
			cases[i].Why = fmt.Sprintf("%.3gx, %s", c.Ratio, why)
		}
	}
	return held
}

// oneRunNote is said of every judgement against one baseline run.
const oneRunNote = "one baseline run: it cannot separate the run from the machine (how much a median moves from run to run here is unknown), " +
	"so only a change beyond %.3gx is called; judge against a history's last runs (rsag check -baseline FILE -last 5) for more"

// Verdict is the closing line.
func (r Result) Verdict() string {
	slower, faster, unsure := r.Count(Slower), r.Count(Faster), r.Count(Inconclusive)
	switch {
	case slower > 0:
		return fmt.Sprintf("FAIL: %d of %d case(s) slower than the baseline beyond %.3g%% (%d faster, %d inconclusive)",
			slower, r.Compared(), r.Options.Tolerance*100, faster, unsure)
	case unsure > 0:
		return fmt.Sprintf("inconclusive: none of %d case(s) slower beyond %.3g%%, but %d could not be judged (%d faster)",
			r.Compared(), r.Options.Tolerance*100, unsure, faster)
	}
	wide := 0
	for _, c := range r.Cases {
		if verdictText(c, r.Options.Tolerance) == "within the spread" {
			wide++
		}
	}
	return fmt.Sprintf("ok: none of %d case(s) slower than the baseline beyond %.3g%% (%d faster, %d within a spread wider than that)",
		r.Compared(), r.Options.Tolerance*100, faster, wide)
}

// intervalText is a case's interval, "-" when it has none.
func intervalText(c Case) string {
	if c.Lo == 0 && c.Hi == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f..%.2f", c.Lo, c.Hi)
}

// verdictText is a case's verdict as the table and the page say it: a
// case the same whose interval reaches beyond the tolerance is within the
// spread (no change shown, none ruled out).
func verdictText(c Case, tolerance float64) string {
	switch {
	case c.Verdict == Inconclusive:
		return "inconclusive: " + c.Why
	case c.Verdict == Same && (c.Lo != 0 || c.Hi != 0) && (c.Hi > 1+tolerance || c.Lo < 1-tolerance):
		return "within the spread"
	}
	return verdictWord(c.Verdict)
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
			Ratio: c.Ratio, Lo: c.Lo, Hi: c.Hi, Verdict: verdictText(c, r.Options.Tolerance), Missing: c.Verdict == Missing})
	}
	return a
}
