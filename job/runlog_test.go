package job

import (
	"slices"
	"strings"
	"testing"

	"rsag/outdir"
)

// run.json lists every file before it is written, and the first final
// status wins, whichever goroutine writes it.
func TestRunLog(t *testing.T) {
	dir := t.TempDir()
	l := &runLog{dir: dir, stop: make(chan struct{}), rec: outdir.Record{Host: "node1", PID: 42, Files: []string{outdir.RunFile, "timings.csv"}}}
	if err := l.start(); err != nil {
		t.Fatal(err)
	}
	read := func() outdir.Record {
		t.Helper()
		r, err := outdir.ReadRecord(dir)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := read(); r.Status != outdir.StatusRunning || r.Heartbeat == "" || r.Host != "node1" || r.PID != 42 {
		t.Errorf("started: %+v", r)
	}
	if err := l.plan("time_vs_size.png", "timings.csv", "time_vs_size.svg"); err != nil {
		t.Fatal(err)
	}
	want := []string{outdir.RunFile, "timings.csv", "time_vs_size.png", "time_vs_size.svg"}
	if r := read(); !slices.Equal(r.Files, want) {
		t.Errorf("planned: %v, want %v", r.Files, want)
	}
	l.fail("signal SIGTERM")
	if err := l.finish(outdir.StatusComplete, ""); err != nil {
		t.Fatal(err)
	}
	l.plan("memory.csv")
	if r := read(); r.Status != outdir.StatusFailed || r.Reason != "signal SIGTERM" || r.Ended == "" || !slices.Equal(r.Files, want) {
		t.Errorf("after fail, then finish and plan: %+v", r)
	}
	var none *runLog // every rank but 0
	none.fail("x")
	if err := none.plan("x"); err != nil {
		t.Error(err)
	}
}

func TestSignalReason(t *testing.T) {
	for _, c := range []struct {
		gone  []string
		notes []outdir.Note
		want  string
	}{
		{nil, nil, "signal SIGTERM: the job was stopped from outside"},
		{[]string{"rank 3 (n1, pid 9)"}, nil, "signal SIGTERM from the launcher, after rank 3 (n1, pid 9) had already ended without leaving a note"},
		{[]string{"rank 3 (n1, pid 9)"}, []outdir.Note{{Rank: 2, Text: "rank 2 (n2): watchdog: stuck"}},
			"signal SIGTERM from the launcher, after a rank failed on its own: rank 2 (n2): watchdog: stuck"},
	} {
		if got := signalReason("SIGTERM", c.gone, c.notes); !strings.HasPrefix(got, c.want) {
			t.Errorf("%v %v: %q, want %q...", c.gone, c.notes, got, c.want)
		}
	}
}
