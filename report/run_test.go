package report

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

func TestRunRoundTripsAtomically(t *testing.T) {
	dir := t.TempDir()
	want := Run{Status: StatusFailed, Reason: "signal SIGTERM", Version: "v1", Commit: "abc", Backend: "mpi",
		WorldSize: 4, Config: "configs/ch7.toml", Started: "2025-01-01T00:00:00Z"}
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

// Only rsag's own files count as results and are removed; a user's files
// in the same directory are never touched.
func TestFindAndRemoveOnlyOurFiles(t *testing.T) {
	dir := t.TempDir()
	ours := []string{"run.json", "contracts.csv", "timings.csv", "memory.csv", "rank0_contracts.csv",
		"rank12_timings.csv", "rank3_memory.csv", "summary.json", "time_vs_size.png", "memory_by_mode.svg",
		"busbw_vs_size_matrix.png", "ratio_vs_size_nccl-tests.svg"}
	theirs := []string{"notes.txt", "rank0_contracts.csv.bak", "my_timings.csv", "rankx_memory.csv", "plot.png",
		"time_vs_size.pdf", "time_vs_size_.png"}
	temps := []string{".run.json.tmp123", ".rank0_timings.csv.tmp9", ".time_vs_size_avg.png.tmp77"}
	for _, n := range append(append(append([]string(nil), ours...), theirs...), temps...) {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	found, err := FindResults(dir)
	slices.Sort(found)
	want := slices.Sorted(slices.Values(ours))
	if err != nil || !slices.Equal(found, want) {
		t.Errorf("FindResults = %v, %v; want %v", found, err, want)
	}
	if err := RemoveResults(dir); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if !slices.Equal(left, slices.Sorted(slices.Values(theirs))) {
		t.Errorf("after RemoveResults: %v; want only %v", left, theirs)
	}
	if found, _ := FindResults(filepath.Join(dir, "missing")); found != nil {
		t.Errorf("a missing dir has results %v", found)
	}
}

func TestResultFiles(t *testing.T) {
	got := ResultFiles(2, Phases{Contracts: true, Memory: true})
	want := []string{"rank0_contracts.csv", "rank0_memory.csv", "rank1_contracts.csv", "rank1_memory.csv", "contracts.csv", "memory.csv"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
