package history

import (
	"context"
	"database/sql"
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Two runs alike but for rank 0's process id (one command started twice
// in one second) are two runs; the same run twice is one.
func TestTheRunKeyIsRankZerosProcess(t *testing.T) {
	a, b := synthetic(1), synthetic(1)
	a.Host, a.PID, b.Host, b.PID = "n1", 100, "n1", 101
	if a.Key() == b.Key() {
		t.Error("two processes' runs share a key")
	}
	db, err := Open(filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, r := range []Run{a, b} {
		if _, err := db.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Append(a); err == nil {
		t.Error("a run appended twice was taken")
	}
}

// A baseline is of the run's kind, started no later, and leaves out a run
// rsag check flagged until it is accepted; with none of its kind, the
// newest of another kind is named with the difference.
func TestBaselineIsOfTheRunsKindAndLeavesFlaggedRunsOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var keys []string
	for i := range 4 {
		r := synthetic(i)
		r.PID = 100 + i
		if _, err := db.Append(r); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, r.Key())
	}
	run := synthetic(9)
	run.PID = 999
	ids := func(runs []BaselineRun) (out []int64) {
		for _, r := range runs {
			out = append(out, r.ID)
		}
		return out
	}
	got, _, err := db.Baseline(5, run.Key(), run.Summary.Started, run.Kind())
	if err != nil || len(got) != 4 || got[0].ID != 4 || len(got[0].Samples) != 1 {
		t.Fatalf("baseline %v, %v; want runs 4 to 1", ids(got), err)
	}
	// Only runs started before: run 2's start leaves 3 and 4 out.
	if got, _, _ := db.Baseline(5, keys[1], synthetic(1).Summary.Started, run.Kind()); len(got) != 1 || got[0].ID != 1 {
		t.Errorf("baseline of run 2: %v, want run 1", ids(got))
	}
	if err := db.Record(keys[3], VerdictFlagged, "FAIL", ""); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := db.Baseline(5, run.Key(), run.Summary.Started, run.Kind()); len(got) != 3 || got[0].ID != 3 {
		t.Errorf("with run 4 flagged: %v, want 3 to 1", ids(got))
	}
	runs, _ := db.Runs(0)
	if !runs[3].Flagged || runs[2].Flagged {
		t.Errorf("flagged: %+v", runs)
	}
	var out strings.Builder
	if err := Command([]string{"-accept", "4", path}, &out, io.Discard); err != nil || !strings.Contains(out.String(), "accepted 4") {
		t.Fatalf("-accept 4: %v %s", err, out.String())
	}
	if got, _, _ := db.Baseline(5, run.Key(), run.Summary.Started, run.Kind()); len(got) != 4 {
		t.Errorf("with run 4 accepted: %v, want 4 runs", ids(got))
	}
	// Held (a case looked slower on crowded ranks) is left out as flagged
	// is; an inconclusive run is not.
	if err := db.Record(keys[2], VerdictHeld, "inconclusive", ""); err != nil {
		t.Fatal(err)
	}
	if err := db.Record(keys[1], VerdictInconclusive, "inconclusive", ""); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := db.Baseline(5, run.Key(), run.Summary.Started, run.Kind()); len(got) != 3 || got[1].ID != 2 {
		t.Errorf("with run 3 held, run 2 inconclusive: %v, want 4, 2, 1", ids(got))
	}
	if runs, _ := db.Runs(0); !runs[2].Flagged || runs[2].Held != VerdictHeld || baselineWord(runs[2]) != "held" || runs[1].Flagged {
		t.Errorf("run 3 held, run 2 inconclusive: %+v and %+v; want run 3 no baseline, said held", runs[2], runs[1])
	}
	if err := Command([]string{"-accept", "3", path}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := db.Baseline(5, run.Key(), run.Summary.Started, run.Kind()); len(got) != 4 {
		t.Errorf("with run 3 accepted: %v, want 4 runs", ids(got))
	}
	// A run of 4 ranks against a history of 2.
	four := run
	four.Summary.WorldSize = 4
	got, other, err := db.Baseline(5, four.Key(), four.Summary.Started, four.Kind())
	if err != nil || len(got) != 0 || other.ID != 4 || four.Kind().Differ(other.Kind) != "world size 4, not 2" {
		t.Errorf("a 4-rank run: baseline %v, other %+v (%q), %v", ids(got), other, four.Kind().Differ(other.Kind), err)
	}
}

// rsag history -append DIR... says each on its own: one refused leaves the
// others appended, and the command fails.
func TestEachAppendIsSaidOnItsOwn(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "h.db")
	var stdout, stderr strings.Builder
	missing := filepath.Join(dir, "no-such-run")
	err := Command([]string{"-append", missing, "-append", missing + "2", path}, &stdout, &stderr)
	if err == nil || strings.Count(stderr.String(), "not appended") != 2 {
		t.Errorf("%v\n%s", err, stderr.String())
	}
}

// The run's start-up check never waits on a lock; a writer says it waits,
// and then does.
func TestALockIsNeverWaitedOnSilently(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	sq, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	conn, err := sq.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := Check(path); err != nil {
		t.Errorf("Check of a held history: %v", err)
	}
	if took := time.Since(start); took > BusyTimeout/2 {
		t.Errorf("Check waited %v on the lock", took)
	}
	var waited atomic.Bool
	done := make(chan error, 1)
	go func() {
		w, err := OpenWaiting(path, Create, func() { waited.Store(true) })
		if err == nil {
			_, err = w.Append(synthetic(1))
			w.Close()
		}
		done <- err
	}()
	for !waited.Load() {
		select {
		case err := <-done:
			t.Fatalf("the writer did not say it waits: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("the append after the wait: %v", err)
	}
}

// rsag history shows the last N runs, oldest first by their start (not
// by the order they were appended), hosts as words, the case unclipped.
func TestHistoryShowsTheLastRunsByStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{4, 1, 3, 0, 2} {
		r := synthetic(i)
		r.PID = 100 + i
		if _, err := db.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	var out strings.Builder
	if err := Command([]string{"-last", "3", path}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if !strings.Contains(text, "the last 3 of 5 runs, oldest first") || strings.Contains(text, "[n1]") {
		t.Errorf("stdout:\n%s", text)
	}
	// Appended 4 1 3 0 2: ids 1-5; by start, the last three are ids 5, 3, 1 (starts 2, 3, 4).
	var order []string
	for _, line := range strings.Split(text, "\n") {
		if f := strings.Fields(line); len(f) > 3 && f[0] == "|" && strings.HasPrefix(f[3], "2026-") {
			order = append(order, f[1])
		}
	}
	if strings.Join(order, " ") != "5 3 1" {
		t.Errorf("runs in order %v, want 5 3 1\n%s", order, text)
	}
	if !strings.Contains(text, "default 1K float32 sum out-of-place per-op direct") {
		t.Errorf("the case is clipped:\n%s", text)
	}
	for _, bad := range []string{"0", "10001"} {
		if err := Command([]string{"-last", bad, path}, io.Discard, io.Discard); err == nil {
			t.Errorf("-last %s taken", bad)
		}
	}
}
