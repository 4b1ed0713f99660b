package report

import (
	"os"
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestRunRoundTripsAtomically(t *testing.T) {
	dir := t.TempDir()
	want := Run{Status: StatusFailed, Reason: "signal SIGTERM", Version: "v1", Commit: "abc", Backend: "mpi",
		WorldSize: 4, Config: "configs/ch7.toml", Host: "node7", PID: 4242, Started: "2025-01-01T00:00:00Z",
		Heartbeat: "2025-01-01T00:00:05Z"}
	if err := WriteRun(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadRun(dir)
	want.Files = []string{}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, %v; want %+v", got, err, want)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("a temporary file was left: %v", entries)
	}
}

// Only rsag's own names count as results; a user's look-alikes do not.
func TestResultNames(t *testing.T) {
	for _, n := range []string{"run.json", "contracts.csv", "timings.csv", "memory.csv", "rank0_contracts.csv",
		"rank12_timings.csv", "rank3_memory.csv", "summary.json", "time_vs_size.png", "memory_by_mode.svg",
		"busbw_vs_size_matrix.png", "ratio_vs_size_nccl-tests.svg", "report.html"} {
		if !IsResultFile(n) {
			t.Errorf("%s is rsag's, but IsResultFile says not", n)
		}
		if _, ok := TempFor(n); ok {
			t.Errorf("%s is not a temporary file", n)
		}
	}
	for _, n := range []string{"notes.txt", "rank0_contracts.csv.bak", "my_timings.csv", "rankx_memory.csv", "plot.png",
		"time_vs_size.pdf", "time_vs_size_.png", ".rsag.lock", "../run.json", "sub/run.json", "report.htm", "my_report.html"} {
		if IsResultFile(n) {
			t.Errorf("%s is not rsag's, but IsResultFile says it is", n)
		}
	}
	for temp, want := range map[string]string{".run.json.tmp123": "run.json", ".rank0_timings.csv.tmp9": "rank0_timings.csv",
		".time_vs_size_avg.png.tmp77": "time_vs_size_avg.png", ".summary.json.tmp": "summary.json", ".report.html.tmp42": "report.html"} {
		if got, ok := TempFor(temp); !ok || got != want {
			t.Errorf("TempFor(%q) = %q, %v; want %q", temp, got, ok, want)
		}
	}
	for _, n := range []string{".notes.txt.tmp1", "run.json.tmp1", ".run.json.tmpx", ".run.json"} {
		if got, ok := TempFor(n); ok {
			t.Errorf("TempFor(%q) = %q; it is no temporary of rsag's", n, got)
		}
	}
}

// A reader tells a dead "running" run from a live one by its heartbeat.
func TestStale(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	beat := func(ago time.Duration) string { return now.Add(-ago).Format(time.RFC3339) }
	for _, c := range []struct {
		run   Run
		stale bool
	}{
		{Run{Status: StatusRunning, Heartbeat: beat(0)}, false},
		{Run{Status: StatusRunning, Heartbeat: beat(HeartbeatEvery)}, false},
		{Run{Status: StatusRunning, Heartbeat: beat(StaleAfter)}, false},
		{Run{Status: StatusRunning, Heartbeat: beat(StaleAfter + time.Second)}, true},
		{Run{Status: StatusRunning, Heartbeat: beat(time.Hour)}, true},
		{Run{Status: StatusRunning}, true},                         // no heartbeat: nothing says it lives
		{Run{Status: StatusRunning, Heartbeat: "yesterday"}, true}, // unreadable likewise
		{Run{Status: StatusComplete, Heartbeat: beat(time.Hour)}, false},
		{Run{Status: StatusFailed}, false},
	} {
		if got := Stale(c.run, now); got != c.stale {
			t.Errorf("Stale(%+v) = %v, want %v", c.run, got, c.stale)
		}
	}
}

func TestResultFiles(t *testing.T) {
	got := ResultFiles(2, Phases{Contracts: true, Memory: true})
	want := []string{"rank0_contracts.csv", "rank0_memory.csv", "rank1_contracts.csv", "rank1_memory.csv", "contracts.csv", "memory.csv"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
