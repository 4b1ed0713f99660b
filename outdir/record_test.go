package outdir

import (
	"os"
	"reflect"
	"testing"
	"time"
)

func TestRecordRoundTripsAtomically(t *testing.T) {
	dir := t.TempDir()
	want := Record{Status: StatusFailed, Reason: "signal SIGTERM", Version: "v1", Commit: "abc", Backend: "mpi",
		WorldSize: 4, Config: "configs/ch7.toml", Host: "node7", PID: 4242, Started: "2025-01-01T00:00:00Z",
		Heartbeat: "2025-01-01T00:00:05Z"}
	if err := WriteRecord(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadRecord(dir)
	want.Files = []string{}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, %v; want %+v", got, err, want)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("a temporary file was left: %v", entries)
	}
}

// A reader tells a dead "running" run from a live one by its heartbeat.
func TestStale(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	beat := func(ago time.Duration) string { return now.Add(-ago).Format(time.RFC3339) }
	for _, c := range []struct {
		run   Record
		stale bool
	}{
		{Record{Status: StatusRunning, Heartbeat: beat(0)}, false},
		{Record{Status: StatusRunning, Heartbeat: beat(HeartbeatEvery)}, false},
		{Record{Status: StatusRunning, Heartbeat: beat(StaleAfter)}, false},
		{Record{Status: StatusRunning, Heartbeat: beat(StaleAfter + time.Second)}, true},
		{Record{Status: StatusRunning, Heartbeat: beat(time.Hour)}, true},
		{Record{Status: StatusRunning}, true},                         // no heartbeat: nothing says it lives
		{Record{Status: StatusRunning, Heartbeat: "yesterday"}, true}, // unreadable likewise
		{Record{Status: StatusComplete, Heartbeat: beat(time.Hour)}, false},
		{Record{Status: StatusFailed}, false},
	} {
		if got := Stale(c.run, now); got != c.stale {
			t.Errorf("Stale(%+v) = %v, want %v", c.run, got, c.stale)
		}
	}
}
