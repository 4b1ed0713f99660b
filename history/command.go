package history

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"

	"rsag/internal/exitcode"
	"rsag/report"
)

const usage = `usage: rsag history [-append DIR]... FILE
       (FILE is a history database; -append adds a finished run's output dir to it)

Prints the runs in FILE, each case's median over its complete runs, and
each node's record as a suspect. Exit status: 0, or 2 on bad input.

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
	if len(add) > 0 {
		return nil
	}
	return print(stdout, db)
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
