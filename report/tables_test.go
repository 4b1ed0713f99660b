package report

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report -run Golden -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (if intended, rerun with -update and review the diff):\n%s", path, firstDifference(string(want), string(got)))
	}
}

// The tables of the fixed summary: a failed contract, the seed's two
// modes, memory with and without a device count.
func TestTablesGolden(t *testing.T) {
	var b bytes.Buffer
	if err := WriteTables(&b, fixedSummary(), Phases{Contracts: true, Timing: true, Memory: true}); err != nil {
		t.Fatal(err)
	}
	golden(t, "tables.golden.txt", b.Bytes())
}

// Every timed mode side by side, in phases' order whatever the rows'
// order, with a case that lacks some modes shown with dashes.
func TestTimingsTableEveryModeGolden(t *testing.T) {
	var rows []TimingRow
	for _, size := range []int64{4096, 1 << 20} {
		for i, mode := range []string{"all-gather", "direct", "reduce-scatter", "decomposed"} {
			if size == 4096 && (mode == "all-gather" || mode == "reduce-scatter") {
				continue
			}
			for cycle := range 3 {
				for rank := range 2 {
					rows = append(rows, TimingRow{Rank: rank, SizeBytes: size, Mode: mode, Cycle: cycle,
						DurationUS: float64(size)/1e3*float64(i+1) + float64(cycle+rank), Correct: true, Run: "default",
						DType: "float32", Op: "sum", Placement: "out-of-place", Method: "batched", Batch: 20})
				}
			}
		}
	}
	var b bytes.Buffer
	if err := TimingsTable(&b, TimingStats(rows, 2, 0), 2); err != nil {
		t.Fatal(err)
	}
	golden(t, "timings-every-mode.golden.txt", b.Bytes())
}
