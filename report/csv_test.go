package report

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"rsag/coll"
)

// The seed's reference CSVs from a real 2 x H200 run, copied in unchanged.
const seedDir = "testdata/seed-2xH200"

func readSeed(t *testing.T, name string) (raw []byte, records [][]string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(seedDir, name))
	if err != nil {
		t.Fatalf("the seed's reference files (testdata): %v", err)
	}
	records, err = csv.NewReader(bytes.NewReader(raw)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return raw, records
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Our per-rank files must be the seed's byte for byte: re-encoding the
// seed's own rows through our writer gives back the same file.
func TestPerRankFilesMatchTheSeedByteForByte(t *testing.T) {
	for _, rank := range []string{"0", "1"} {
		raw, recs := readSeed(t, "rank"+rank+"_contracts.csv")
		var contracts []ContractRow
		for _, r := range recs[1:] {
			contracts = append(contracts, ContractRow{Rank: int(atoi(t, r[0])), Name: r[1], Correct: r[2] == "True", Detail: r[3], Host: "ignored"})
		}
		assertSame(t, "contracts", raw, contracts)

		raw, recs = readSeed(t, "rank"+rank+"_timings.csv")
		var timings []TimingRow
		for _, r := range recs[1:] {
			d, err := strconv.ParseFloat(r[4], 64)
			if err != nil {
				t.Fatal(err)
			}
			timings = append(timings, TimingRow{Case: coll.Case{SizeBytes: atoi(t, r[1]), Mode: coll.Mode(r[2])}, Rank: int(atoi(t, r[0])),
				Cycle: int(atoi(t, r[3])), DurationUS: d, Correct: VerdictOf(true, r[5] == "True"), Host: "ignored"})
		}
		assertSame(t, "timings", raw, timings)

		raw, recs = readSeed(t, "rank"+rank+"_memory.csv")
		var memory []MemoryRow
		for _, r := range recs[1:] {
			memory = append(memory, MemoryRow{Rank: int(atoi(t, r[0])), Mode: r[1], PayloadBytes: atoi(t, r[2]),
				BaselineBytes: atoi(t, r[3]), SteadyDeltaBytes: atoi(t, r[4]), PeakDeltaBytes: atoi(t, r[5]),
				Correct: r[6] == "True", Host: "ignored", AnalyticPeak: 7})
		}
		assertSame(t, "memory", raw, memory)
	}
}

func assertSame[R any](t *testing.T, what string, want []byte, rows []R) {
	t.Helper()
	var got bytes.Buffer
	if err := WriteCSV(&got, rows, SeedColumns, true); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("%s: our encoding differs from the seed's file:\n got %q\nwant %q", what, firstDiffLine(got.String(), string(want)), "")
	}
}

func firstDiffLine(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return al[i] + " <> " + bl[i]
		}
	}
	return "(lengths differ)"
}

func TestCombinedColumnsExtendTheSeeds(t *testing.T) {
	for _, c := range []struct {
		row  any
		seed string
	}{
		{ContractRow{}, "rank,name,correct,detail"},
		{TimingRow{}, "rank,size_bytes,mode,cycle,duration_us,correct"},
		{MemoryRow{}, "rank,mode,payload_bytes,baseline_bytes,steady_delta_bytes,peak_delta_bytes,correct"},
	} {
		seed := strings.Join(Header(c.row, SeedColumns), ",")
		all := strings.Join(Header(c.row, AllColumns), ",")
		if seed != c.seed || !strings.HasPrefix(all, seed+",") || !strings.Contains(all, ",host") {
			t.Errorf("%T: seed columns %q, all %q", c.row, seed, all)
		}
	}
}

func TestPyFloat(t *testing.T) {
	for f, want := range map[float64]string{1000: "1000.0", 78.33600044250488: "78.33600044250488", 0.5: "0.5",
		1e-05: "1e-05", 1e16: "1e+16", 0: "0.0", -2: "-2.0"} {
		if got := PyFloat(f); got != want {
			t.Errorf("PyFloat(%v) = %q, want %q", f, got, want)
		}
	}
}

func TestTimingsTableAndGate(t *testing.T) {
	var rows []TimingRow
	for cycle, d := range []float64{10, 30, 20, 40} {
		for rank := range 2 {
			// Rank 1 is slower by 1 us: each sample is rank 1's time.
			common := TimingRow{Case: coll.Case{SizeBytes: 1 << 20, Run: "default", DType: coll.Float32, Op: coll.Sum, Placement: "out-of-place", Method: "per-op", Batch: 1}, Rank: rank, Cycle: cycle, Correct: Right}
			direct, decomp := common, common
			direct.Mode, direct.DurationUS = "direct", d+float64(rank)
			decomp.Mode, decomp.DurationUS = "decomposed", 2*d+float64(rank)
			rows = append(rows, direct, decomp)
		}
	}
	stats := TimingStats(rows, 2, 0)
	var out strings.Builder
	if err := TimingsTable(&out, stats, 2, 1); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "across") {
		t.Errorf("a one-node run is said to span nodes:\n%s", out.String())
	}
	// Median of 11,21,31,41 is 26; 1 MiB / 26 us = 40.33 GB/s, factor 1 on 2 ranks.
	for _, want := range []string{"default float32 sum out-of-place per-op", "| 1M ", "26.00 [14.00..38.00]",
		"51.00 [27.00..75.00]", "1.962", "40.33", "|       1 |\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	if got := BusBWGate(stats, map[string]Gate{"default": {MinGBps: 40}}); len(got) != 0 {
		t.Errorf("40.33 GB/s passes a 40 GB/s gate: %v", got)
	}
	if got := BusBWGate(stats, map[string]Gate{"default": {MinGBps: 50}}); len(got) != 1 || !strings.Contains(got[0], "40.33 GB/s < min_busbw_gbps 50.00") {
		t.Errorf("a 50 GB/s gate: %v", got)
	}
	// The slowest rank's samples are 11, 21, 31, 41: p99 = 40.7 us, so the
	// p99's busbw is 40.33 x 26 / 40.7 = 25.76 GB/s, and a 40 GB/s gate
	// that the median passes fails at p99.
	if got := BusBWGate(stats, map[string]Gate{"default": {MinGBps: 40, Statistic: "p99"}}); len(got) != 1 || !strings.Contains(got[0], "busbw at p99 25.76 GB/s < min_busbw_gbps 40.00") {
		t.Errorf("a 40 GB/s gate at p99 on a tail: %v", got)
	}
	if got := BusBWGate(stats, map[string]Gate{"default": {MinGBps: 25, Statistic: "p99"}}); len(got) != 0 {
		t.Errorf("25.76 GB/s at p99 passes a 25 GB/s gate: %v", got)
	}
}
