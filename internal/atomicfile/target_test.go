package atomicfile

import "testing"

// TargetOf knows Write's temporary files, and nothing else.
func TestTargetOf(t *testing.T) {
	for temp, want := range map[string]string{".run.json.tmp123": "run.json", ".rank0_timings.csv.tmp9": "rank0_timings.csv",
		".time_vs_size_avg.png.tmp77": "time_vs_size_avg.png", ".summary.json.tmp": "summary.json", ".notes.txt.tmp1": "notes.txt"} {
		if got, ok := TargetOf(temp); !ok || got != want {
			t.Errorf("TargetOf(%q) = %q, %v; want %q", temp, got, ok, want)
		}
	}
	for _, n := range []string{"run.json.tmp1", ".run.json.tmpx", ".run.json", ".tmp1"} {
		if got, ok := TargetOf(n); ok {
			t.Errorf("TargetOf(%q) = %q; it is no temporary of Write's", n, got)
		}
	}
}
