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

const usage = `usage: rsag history [-append DIR]... [-html PAGE] FILE
       (FILE is a history database; -append adds a finished run's output dir to it)

Prints the runs in FILE, each case's median over its complete runs, and
each node's record as a suspect; -html PAGE writes them as a page too (the
style of report.html, self-contained), with a figure per case of its
median over the runs and per node of its count as a suspect over the runs.
Exit status: 0, or 2 on bad input.

`

type dirs []string

func (d *dirs) String() string     { return fmt.Sprint(*d) }
func (d *dirs) Set(v string) error { *d = append(*d, v); return nil }

// Command is rsag history with args (after "history").
func Command(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rsag history", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	var add dirs
	fs.Var(&add, "append", "append the finished run in output `DIR` (repeatable)")
	html := fs.String("html", "", "write the history's page to `PAGE` too")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return exitcode.New(2, err)
	}
	if fs.NArg() != 1 {
		return exitcode.New(2, fmt.Errorf("want one history file, got %d (rsag history results/history.db)", fs.NArg()))
	}
	db, err := Open(fs.Arg(0))
	if err != nil {
		return exitcode.New(2, err)
	}
	defer db.Close()
	for _, dir := range add {
		r, err := LoadRun(dir)
		if err != nil {
			return exitcode.New(2, err)
		}
		id, err := db.Append(r)
		if err != nil {
			return exitcode.New(2, err)
		}
		fmt.Fprintf(stdout, "appended %s as run %d (%s)\n", dir, id, r.Status)
	}
	if len(add) > 0 && *html == "" {
		return nil
	}
	if len(add) == 0 {
		if err := print(stdout, db); err != nil {
			return err
		}
	}
	if *html == "" {
		return nil
	}
	var b bytes.Buffer
	h, err := pageOf(db)
	if err == nil {
		err = page.WriteHistory(&b, h)
	}
	if err != nil {
		return exitcode.New(2, err)
	}
	if err := page.WriteBytes(*html, b.Bytes(), page.Writing{Fix: "choose a file in a directory you can write", Inputs: []string{fs.Arg(0)}}); err != nil {
		return exitcode.New(2, err)
	}
	fmt.Fprintf(stdout, "wrote %s\n", *html)
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
func pageOf(db *DB) (page.History, error) {
	h := page.History{Path: db.Path(), RunHead: []string{"run", "started", "status", "baseline", "ranks", "hosts", "reason"},
		CaseHead: []string{"case", "runs", "first µs", "last µs", "last / before"},
		NodeHead: []string{"node", "runs", "suspect in", "intermittent in", "suspect in runs"}}
	runs, err := db.Runs()
	if err != nil {
		return h, err
	}
	h.Runs = len(runs)
	complete := 0
	for _, r := range runs {
		if r.BaselineOK {
			complete++
		}
		h.RunRows = append(h.RunRows, []string{strconv.FormatInt(r.ID, 10), r.Started, r.Status, yes(r.BaselineOK), strconv.Itoa(r.WorldSize),
			strings.Join(r.Hosts, " "), r.Reason})
	}
	h.About = []string{fmt.Sprintf("%d runs, %d of them complete with every check held (the ones a trend and a baseline take)", len(runs), complete)}
	trends, err := db.Trends()
	if err != nil {
		return h, err
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
		h.CaseRows = append(h.CaseRows, []string{tr.Text, strconv.Itoa(len(tr.Points)), fmt.Sprintf("%.2f", tr.Points[0].MedianUS), fmt.Sprintf("%.2f", last), ratio})
		f, err := plot.Trend(fmt.Sprintf("case-%d", i+1), tr.Text, "median µs per operation", pts)
		if err != nil {
			return h, err
		}
		h.Figures = append(h.Figures, f)
	}
	nodes, err := db.Nodes()
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
		f, err := plot.Trend(fmt.Sprintf("node-%d", i+1), "node "+n.Host+": runs that named it a suspect", "runs named a suspect, so far", pts)
		if err != nil {
			return h, err
		}
		h.Figures = append(h.Figures, f)
	}
	return h, nil
}

func print(w io.Writer, db *DB) error {
	runs, err := db.Runs()
	if err != nil {
		return exitcode.New(2, err)
	}
	t := report.Table(w, "run", "started", "status", "baseline", "ranks", "hosts")
	for _, r := range runs {
		t.Append([]string{strconv.FormatInt(r.ID, 10), r.Started, r.Status, yes(r.BaselineOK), strconv.Itoa(r.WorldSize), clip(fmt.Sprint(r.Hosts), 40)})
	}
	if err := t.Render(); err != nil {
		return err
	}
	trends, err := db.Trends()
	if err != nil {
		return exitcode.New(2, err)
	}
	fmt.Fprintln(w, "median us per operation over the complete runs")
	t = report.Table(w, "case", "runs", "first", "last", "trend")
	for _, tr := range trends {
		p := tr.Points
		t.Append([]string{clip(tr.Text, 60), strconv.Itoa(len(p)), fmt.Sprintf("%.2f", p[0].MedianUS), fmt.Sprintf("%.2f", p[len(p)-1].MedianUS), spark(p)})
	}
	if err := t.Render(); err != nil {
		return err
	}
	nodes, err := db.Nodes()
	if err != nil {
		return exitcode.New(2, err)
	}
	t = report.Table(w, "node", "runs", "suspect in", "intermittent in")
	for _, n := range nodes {
		t.Append([]string{n.Host, strconv.Itoa(len(n.Runs)), strconv.Itoa(len(n.Suspect)), strconv.Itoa(len(n.Intermittent))})
	}
	return t.Render()
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

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
