package history

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"rsag/internal/exitcode"
	"rsag/internal/quantile"
	"rsag/report"
	"rsag/report/page"
	"rsag/report/plot"
)

const usage = `usage: rsag history [-append DIR]... [-accept RUN]... [-upgrade] [-last N] [-html PAGE [-overwrite]] FILE
       (FILE is a history database; -append adds a finished run's output dir to it)

Prints the last N runs in FILE (oldest first, by start), each case's median
over those of them that completed with every check held, per kind of run
(world size, nodes, backend, config), and each node's record as a suspect;
-html PAGE writes them as a page too (the style of report.html,
self-contained), with a figure per case and kind of its median over the
runs and per node of its count as a suspect over the runs. -append adds
runs (each said on its own; one refused does not stop the others) and
-accept RUN (a run's id or output dir) takes back rsag check's flag on a
run, so that it is a baseline again; both are recorded. -upgrade turns a
file of schema_version 1 into this rsag's (an append does too); reading
makes no file and writes nothing.
Exit status: 0, or 2 on bad input or when some -append or -accept failed.

`

type dirs []string

func (d *dirs) String() string     { return fmt.Sprint(*d) }
func (d *dirs) Set(v string) error { *d = append(*d, v); return nil }

// Command is rsag history with args (after "history").
func Command(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rsag history", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	var add, accept dirs
	fs.Var(&add, "append", "append the finished run in output `DIR` (repeatable)")
	fs.Var(&accept, "accept", "accept the `RUN` (id or output dir) rsag check flagged: a baseline again (repeatable)")
	html := fs.String("html", "", "write the history's page to `PAGE` too")
	overwrite := fs.Bool("overwrite", false, "replace a file at -html that rsag did not write")
	last := fs.Int("last", DefaultLast, fmt.Sprintf("show the last `N` runs (at most %d)", MaxLast))
	upgrade := fs.Bool("upgrade", false, fmt.Sprintf("upgrade a history of schema_version 1 to %d", SchemaVersion))
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return exitcode.New(2, err)
	}
	if fs.NArg() != 1 {
		return exitcode.New(2, fmt.Errorf("want one history file, got %d (rsag history results/history.db)", fs.NArg()))
	}
	if *last < 1 || *last > MaxLast {
		return exitcode.New(2, fmt.Errorf("-last %d: give from 1 to %d runs", *last, MaxLast))
	}
	mode := ReadOnly
	switch {
	case len(add) > 0:
		mode = Create
	case len(accept) > 0 || *upgrade:
		mode = Existing
	}
	db, err := OpenWaiting(fs.Arg(0), mode, func() {
		fmt.Fprintf(stderr, "rsag history: %s is held by another writer: waiting up to %v\n", fs.Arg(0), BusyTimeout)
	})
	if err != nil {
		return exitcode.New(2, err)
	}
	defer db.Close()
	if *upgrade {
		fmt.Fprintf(stdout, "%s is of schema_version %d\n", fs.Arg(0), SchemaVersion)
	}
	failed := 0
	for _, dir := range add {
		id, status, err := appendDir(db, dir)
		if err != nil {
			failed++
			fmt.Fprintf(stderr, "rsag history: %s not appended: %v\n", dir, err)
			continue
		}
		fmt.Fprintf(stdout, "appended %s as run %d (%s)\n", dir, id, status)
	}
	for _, run := range accept {
		if err := acceptRun(db, run, stdout); err != nil {
			failed++
			fmt.Fprintf(stderr, "rsag history: %s not accepted: %v\n", run, err)
		}
	}
	if failed > 0 {
		return exitcode.Silent(2)
	}
	if len(add)+len(accept) > 0 || *upgrade && *html == "" {
		return nil
	}
	runs, err := db.Runs(*last)
	if err != nil {
		return exitcode.New(2, err)
	}
	if len(add)+len(accept) == 0 {
		if err := print(stdout, db, runs); err != nil {
			return err
		}
	}
	if *html == "" {
		return nil
	}
	var b bytes.Buffer
	h, err := pageOf(db, runs)
	if err == nil {
		err = page.WriteHistory(&b, h)
	}
	if err != nil {
		return exitcode.New(2, err)
	}
	if err := page.WriteBytes(*html, b.Bytes(), page.Writing{Fix: "choose a file in a directory you can write", Overwrite: *overwrite,
		Inputs: []string{fs.Arg(0)}}); err != nil {
		return exitcode.New(2, err)
	}
	fmt.Fprintf(stdout, "wrote %s\n", *html)
	return nil
}

// appendDir appends the finished run in dir.
func appendDir(db *DB, dir string) (int64, string, error) {
	r, err := LoadRun(dir)
	if err != nil {
		return 0, "", err
	}
	id, err := db.Append(r)
	return id, r.Status, err
}

// acceptRun records the operator's acceptance of run (an id in the
// history, or an output dir), taking back rsag check's flag.
func acceptRun(db *DB, run string, stdout io.Writer) error {
	var key, dir string
	if id, err := strconv.ParseInt(run, 10, 64); err == nil {
		if key, dir, err = db.KeyOf(id); err != nil {
			return err
		}
	} else {
		r, err := LoadRun(run)
		if err != nil {
			return err
		}
		key, dir = r.Key(), r.Dir
	}
	if err := db.Record(key, VerdictAccepted, "accepted with rsag history -accept "+run, dir); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "accepted %s: it may be a baseline again (recorded)\n", run)
	return nil
}

// stepAbove is how far above the median of the runs before it a run's
// median is marked on its case's figure: a hint of a step, which rsag
// check judges from the samples.
const stepAbove = 1.05

// pageOf is the history as its page shows it: the tables print shows,
// a figure per case of its median over the runs (a run more than 5% above
// the median of those before it marked) and per node of the number of
// runs that named it a suspect, up to each run it was in (those runs
// marked).
func pageOf(db *DB, runs []RunRow) (page.History, error) {
	h := page.History{Path: db.Path(), RunHead: []string{"run", "started", "status", "baseline", "ranks", "hosts", "reason"},
		CaseHead: []string{"case", "runs", "first µs", "last µs", "last / before"},
		NodeHead: []string{"node", "runs", "suspect in", "intermittent in", "suspect in runs"}}
	h.Runs = len(runs)
	complete := 0
	for _, r := range runs {
		if r.BaselineOK {
			complete++
		}
		h.RunRows = append(h.RunRows, []string{strconv.FormatInt(r.ID, 10), r.Started, r.Status, baselineWord(r), strconv.Itoa(r.WorldSize),
			strings.Join(r.Hosts, " "), r.Reason})
	}
	h.About = []string{fmt.Sprintf("%d runs (the last of %d), %d of them complete with every check held (the ones a trend and a baseline take); "+
		"a trend is drawn per kind of run", len(runs), total(db, len(runs)), complete)}
	trends, err := db.Trends(runs)
	if err != nil {
		return h, err
	}
	title := func(tr Trend) string { return tr.Text }
	if len(trends) > 0 && kinds(trends) > 1 {
		title = func(tr Trend) string { return tr.Text + " (" + tr.Kind.String() + ")" }
	}
	for i, tr := range trends {
		var pts []plot.TrendPoint
		var before []float64
		for _, p := range tr.Points {
			mark := len(before) > 0 && p.MedianUS > stepAbove*quantile.Median(before)
			pts = append(pts, plot.TrendPoint{Run: p.RunID, Value: p.MedianUS, Mark: mark})
			before = append(before, p.MedianUS)
		}
		last := tr.Points[len(tr.Points)-1].MedianUS
		ratio := "-"
		if n := len(before); n > 1 {
			ratio = fmt.Sprintf("%.3f", last/quantile.Median(before[:n-1]))
		}
		h.CaseRows = append(h.CaseRows, []string{title(tr), strconv.Itoa(len(tr.Points)), fmt.Sprintf("%.2f", tr.Points[0].MedianUS), fmt.Sprintf("%.2f", last), ratio})
		f, err := plot.Trend(fmt.Sprintf("case-%d", i+1), title(tr), "median µs per operation (log)", pts, true)
		if err != nil {
			return h, err
		}
		h.Figures = append(h.Figures, f)
	}
	nodes, err := db.Nodes(runs)
	if err != nil {
		return h, err
	}
	for i, n := range nodes {
		var ids []string
		for _, id := range n.Suspect {
			ids = append(ids, strconv.FormatInt(id, 10))
		}
		h.NodeRows = append(h.NodeRows, []string{n.Host, strconv.Itoa(len(n.Runs)), strconv.Itoa(len(n.Suspect)), strconv.Itoa(len(n.Intermittent)), strings.Join(ids, " ")})
		var pts []plot.TrendPoint
		count := 0
		for _, id := range n.Runs {
			suspect := slices.Contains(n.Suspect, id)
			if suspect {
				count++
			}
			pts = append(pts, plot.TrendPoint{Run: id, Value: float64(count), Mark: suspect})
		}
		f, err := plot.Trend(fmt.Sprintf("node-%d", i+1), "node "+n.Host+": runs that named it a suspect", "runs named a suspect, so far", pts, false)
		if err != nil {
			return h, err
		}
		h.Figures = append(h.Figures, f)
	}
	return h, nil
}

func print(w io.Writer, db *DB, runs []RunRow) error {
	fmt.Fprintf(w, "the last %d of %d runs, oldest first (-last N shows more)\n", len(runs), total(db, len(runs)))
	t := report.Table(w, "run", "started", "status", "baseline", "ranks", "hosts")
	for _, r := range runs {
		t.Append([]string{strconv.FormatInt(r.ID, 10), r.Started, r.Status, baselineWord(r), strconv.Itoa(r.WorldSize), clip(strings.Join(r.Hosts, " "), 40)})
	}
	if err := t.Render(); err != nil {
		return err
	}
	trends, err := db.Trends(runs)
	if err != nil {
		return exitcode.New(2, err)
	}
	for i, tr := range trends {
		if i == 0 || tr.Kind != trends[i-1].Kind {
			if i > 0 {
				if err := t.Render(); err != nil {
					return err
				}
			}
			fmt.Fprintf(w, "median us per operation over the complete runs of %s\n", tr.Kind)
			t = report.Table(w, "case", "runs", "first", "last", "trend")
		}
		p := tr.Points
		t.Append([]string{tr.Text, strconv.Itoa(len(p)), fmt.Sprintf("%.2f", p[0].MedianUS), fmt.Sprintf("%.2f", p[len(p)-1].MedianUS), spark(p)})
	}
	if len(trends) > 0 {
		if err := t.Render(); err != nil {
			return err
		}
	}
	nodes, err := db.Nodes(runs)
	if err != nil {
		return exitcode.New(2, err)
	}
	t = report.Table(w, "node", "runs", "suspect in", "intermittent in")
	for _, n := range nodes {
		t.Append([]string{n.Host, strconv.Itoa(len(n.Runs)), strconv.Itoa(len(n.Suspect)), strconv.Itoa(len(n.Intermittent))})
	}
	return t.Render()
}

// kinds is the number of kinds of run among trends.
func kinds(trends []Trend) int {
	n := 0
	for i, tr := range trends {
		if i == 0 || tr.Kind != trends[i-1].Kind {
			n++
		}
	}
	return n
}

// total is the number of runs in the history (shown when it can be read).
func total(db *DB, shown int) int {
	if n, err := db.RunCount(); err == nil {
		return n
	}
	return shown
}

// baselineWord is whether a run may be a baseline, in a word.
func baselineWord(r RunRow) string {
	switch {
	case r.BaselineOK && r.Flagged:
		return r.Held // flagged or held: no baseline until accepted
	case r.BaselineOK:
		return "yes"
	}
	return "no"
}

// spark is the last 16 medians as a line of block characters.
func spark(p []Point) string {
	if len(p) > 16 {
		p = p[len(p)-16:]
	}
	lo, hi := p[0].MedianUS, p[0].MedianUS
	for _, x := range p {
		lo, hi = min(lo, x.MedianUS), max(hi, x.MedianUS)
	}
	bars := []rune("▁▂▃▄▅▆▇█")
	var out []rune
	for _, x := range p {
		i := 0
		if hi > lo {
			i = int((x.MedianUS - lo) / (hi - lo) * float64(len(bars)-1))
		}
		out = append(out, bars[i])
	}
	return string(out)
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
