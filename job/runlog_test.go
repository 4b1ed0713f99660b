package job

import (
	"errors"
	"os"
	"path/filepath"
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
	wrote := false
	if err := l.commit(outdir.StatusComplete, "", "2026-01-01T00:00:00Z", []string{"summary.json"}, func(string) error { wrote = true; return nil }); err != nil {
		t.Fatal(err)
	}
	l.plan("memory.csv")
	if r := read(); r.Status != outdir.StatusFailed || r.Reason != "signal SIGTERM" || r.Ended == "" || !slices.Equal(r.Files, want) || wrote {
		t.Errorf("after fail, then commit and plan: %+v (the last outputs written: %v)", r, wrote)
	}
	if l.status() != outdir.StatusFailed {
		t.Errorf("status() = %q", l.status())
	}
	var none *runLog // every rank but 0
	none.fail("x")
	if err := none.plan("x"); err != nil {
		t.Error(err)
	}
}

// The last outputs and run.json's final record are one step: a failure
// writing the last leaves run.json as it was, with no temporary; once they
// are written, run.json says the status, with the time given.
func TestCommit(t *testing.T) {
	dir := t.TempDir()
	l := &runLog{dir: dir, stop: make(chan struct{}), rec: outdir.Record{Files: []string{outdir.RunFile, "summary.json"}}}
	if err := l.start(); err != nil {
		t.Fatal(err)
	}
	last := func(ok bool) func(string) error {
		return func(dir string) error {
			if !ok {
				return errors.New("no space left on device")
			}
			return os.WriteFile(filepath.Join(dir, "summary.json"), []byte(`{"status":"complete"}`), 0o644)
		}
	}
	if err := l.commit(outdir.StatusComplete, "", "2026-01-01T00:00:00Z", []string{"summary.json"}, last(false)); err == nil {
		t.Fatal("commit succeeded though its last output failed")
	}
	if r, _ := outdir.ReadRecord(dir); r.Status != outdir.StatusRunning {
		t.Errorf("after a failed commit: %+v", r)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("after a failed commit: %v; want run.json alone", entries)
	}
	if err := l.commit(outdir.StatusComplete, "", "2026-01-01T00:00:00Z", []string{"summary.json"}, last(true)); err != nil {
		t.Fatal(err)
	}
	if r, _ := outdir.ReadRecord(dir); r.Status != outdir.StatusComplete || r.Ended != "2026-01-01T00:00:00Z" || l.status() != outdir.StatusComplete {
		t.Errorf("after commit: %+v", r)
	}
}

func TestSignalReason(t *testing.T) {
	for _, c := range []struct {
		gone  []goneRank
		notes []outdir.Note
		want  string
	}{
		{nil, nil, "signal SIGTERM: the job was stopped from outside"},
		{[]goneRank{{"rank 3 (n1, pid 9)", ""}}, nil, "signal SIGTERM from the launcher, after rank 3 (n1, pid 9) had already ended without leaving a note"},
		// Its last heartbeat said how: the reason says that, not a kill
		// (issue 34 class 14).
		{[]goneRank{{"rank 3 (n1, pid 9)", "received SIGTERM: stopping"}}, nil, "signal SIGTERM from the launcher, after rank 3 (n1, pid 9) had already ended (received SIGTERM: stopping)"},
		{[]goneRank{{"rank 3 (n1, pid 9)", ""}}, []outdir.Note{{Rank: 2, Text: "rank 2 (n2): watchdog: stuck"}},
			"signal SIGTERM from the launcher, after a rank failed on its own: rank 2 (n2): watchdog: stuck"},
	} {
		if got := signalReason("SIGTERM", c.gone, c.notes); !strings.HasPrefix(got, c.want) {
			t.Errorf("%v %v: %q, want %q...", c.gone, c.notes, got, c.want)
		}
	}
}
