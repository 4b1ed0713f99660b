package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rsag/coll"
	"rsag/model"
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
	if err := WriteTables(&b, fixedSummary(), Ran(Contracts, Timing, Memory)); err != nil {
		t.Fatal(err)
	}
	golden(t, "tables.golden.txt", b.Bytes())
}

// Every timed mode side by side, in coll's order whatever the rows'
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
					rows = append(rows, TimingRow{Case: coll.Case{SizeBytes: size, Mode: coll.Mode(mode), Run: "default", DType: coll.Float32, Op: coll.Sum, Placement: "out-of-place", Method: "batched", Batch: 20}, Rank: rank, Cycle: cycle,
						DurationUS: float64(size)/1e3*float64(i+1) + float64(cycle+rank), Correct: Right})
				}
			}
		}
	}
	var b bytes.Buffer
	if err := TimingsTable(&b, TimingStats(rows, 2, 0), 2, 1); err != nil {
		t.Fatal(err)
	}
	golden(t, "timings-every-mode.golden.txt", b.Bytes())
}

// A sweep over buffers and CTA policies gets a line per size and mode that
// names the fastest configuration and its gain over plain/default; the
// seed's configuration alone gets none.
func TestFastestTableGolden(t *testing.T) {
	var rows []TimingRow
	configs := []struct {
		buffers, policy, method string
		batch                   int
		us                      float64
	}{
		{"plain", "default", "per-op", 1, 20}, {"plain", "default", "batched", 20, 16},
		{"symmetric", "default", "batched", 20, 12}, {"symmetric", "zero", "batched", 20, 8},
	}
	for _, c := range configs {
		for _, mode := range []string{"direct", "all-gather"} {
			us := c.us
			if mode == "all-gather" && c.policy == "zero" {
				us /= 2 // the copy engines
			}
			for cycle := range 3 {
				rows = append(rows, TimingRow{Case: coll.Case{SizeBytes: 1 << 20, Mode: coll.Mode(mode), Run: "default", DType: coll.Float32, Op: coll.Sum, Placement: "out-of-place", Method: coll.Method(c.method), Batch: c.batch, Buffers: coll.BufferKind(c.buffers), CTAPolicy: coll.CTAPolicy(c.policy)}, Rank: 0, Cycle: cycle, DurationUS: us,
					Correct: Right})
			}
		}
	}
	var b bytes.Buffer
	if err := FastestTable(&b, TimingStats(rows, 2, 0)); err != nil {
		t.Fatal(err)
	}
	golden(t, "fastest.golden.txt", b.Bytes())
	b.Reset()
	if err := FastestTable(&b, TimingStats(rows[:6], 2, 0)); err != nil || b.Len() != 0 {
		t.Errorf("the seed's configuration alone got %q, %v", b.String(), err)
	}
}

// hockneyRows are two ranks' rows of every flat mode over 1 KiB to 4 MiB
// whose times follow t = alpha + n/B exactly: direct 10 us + n / 20 GB/s,
// reduce-scatter 8 us + n / 40 GB/s, all-gather 6 us + n / 40 GB/s, and
// the decomposition 15 us + n / 19.5 GB/s (it overlaps its parts a little).
func hockneyRows() []TimingRow {
	models := map[string][2]float64{"direct": {10, 20}, "decomposed": {15, 19.5}, "reduce-scatter": {8, 40}, "all-gather": {6, 40}}
	var rows []TimingRow
	for size := int64(1 << 10); size <= 4<<20; size *= 4 {
		for _, mode := range []string{"direct", "decomposed", "reduce-scatter", "all-gather"} {
			m := models[mode]
			for cycle := range 3 {
				for rank := range 2 {
					rows = append(rows, TimingRow{Case: coll.Case{SizeBytes: size, Mode: coll.Mode(mode), Run: "default", DType: coll.Float32, Op: coll.Sum, Placement: "out-of-place", Method: "batched", Batch: 20, Buffers: "plain", CTAPolicy: "default"}, Rank: rank, Cycle: cycle,
						DurationUS: m[0] + float64(size)/(m[1]*1e3), Correct: Right})
				}
			}
		}
	}
	return rows
}

// The model's table on exact Hockney rows: every fit recovers its alpha
// and B, the crossover is where 15 + n/19.5 = 1.05 (10 + n/20) (the fitted
// one) and the first measured size past it, and the parts explain all of
// the decomposition but what it overlaps.
func TestModelTableGolden(t *testing.T) {
	s := NewSummary(SummaryInput{Rows: Rows{Timings: hockneyRows()}, World: 2})
	var b bytes.Buffer
	if err := ModelTable(&b, s); err != nil {
		t.Fatal(err)
	}
	golden(t, "model.golden.txt", b.Bytes())
	for _, f := range s.Fits {
		want := map[string][2]float64{"direct": {10, 20}, "decomposed": {15, 19.5}, "reduce-scatter": {8, 40}, "all-gather": {6, 40}}[string(f.Mode)]
		if !f.OK() || abs(f.AlphaUS-want[0]) > 1e-6 || abs(f.BandwidthGBps-want[1]) > 1e-6 {
			t.Errorf("%s: %+v, want alpha %v B %v", f.Mode, f, want[0], want[1])
		}
	}
	if len(s.Crossover) != 1 || !s.Crossover[0].Fitted.Found || len(s.Breakdown) != 1 {
		t.Errorf("crossover %+v, breakdown %+v", s.Crossover, s.Breakdown)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// A fit whose largest size was measured 7x slow, as on a loaded machine, is
// called out under the model table with its residual; the exact fits of the
// other modes are not.
func TestModelTableCallsOutPoorFit(t *testing.T) {
	rows := hockneyRows()
	for i := range rows {
		if rows[i].Mode == "direct" && rows[i].SizeBytes == 4<<20 {
			rows[i].DurationUS *= 7
		}
	}
	s := NewSummary(SummaryInput{Rows: Rows{Timings: rows}, World: 2})
	var b bytes.Buffer
	if err := ModelTable(&b, s); err != nil {
		t.Fatal(err)
	}
	var direct model.Fit
	for _, f := range s.Fits {
		if f.Mode == "direct" {
			direct = f
		}
	}
	if !(direct.MaxRelResidual > PoorFitResidual) {
		t.Fatalf("direct fit %+v: want a residual past %v", direct, PoorFitResidual)
	}
	want := fmt.Sprintf("note: the fit misses a measured median by more than 25%% (direct by %.0f%%)", 100*direct.MaxRelResidual)
	if got := strings.Count(b.String(), "note: the "); got != 1 || !strings.Contains(b.String(), want) {
		t.Errorf("want one note %q, got %d notes:\n%s", want, got, b.String())
	}
}

// The Crossover table fits an 80-column terminal however long the reasons
// are: a cell says "none [N]" and note N under the table says why, naming
// the decomposition by its own mode (hierarchical/direct, not
// decomposed/direct).
func TestCrossoverTableIsNarrowAndNamesEachMode(t *testing.T) {
	var rows []TimingRow
	for size := int64(1 << 10); size <= 4<<20; size *= 4 {
		for mode, slower := range map[coll.Mode]float64{coll.Direct: 1, coll.Decomposed: 2, coll.Hierarchical: 3} {
			for rank := range 4 {
				rows = append(rows, TimingRow{Case: coll.Case{SizeBytes: size, Mode: mode, Run: "default", DType: coll.Float32, Op: coll.Sum,
					Placement: "out-of-place", Method: "per-op", Batch: 1, Buffers: "plain", CTAPolicy: "default"}, Rank: rank,
					DurationUS: slower * (10 + float64(size)/20e3), Correct: Right})
			}
		}
	}
	s := NewSummary(SummaryInput{Rows: Rows{Timings: rows}, World: 4, GroupSize: 2})
	if len(s.Crossover) != 2 {
		t.Fatalf("crossovers %+v; want decomposed and hierarchical", s.Crossover)
	}
	var b bytes.Buffer
	if err := ModelTable(&b, s); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	table := text[strings.Index(text, "Crossover ("):]
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, "+") || strings.HasPrefix(line, "|") {
			if len(line) > 80 {
				t.Errorf("a line of %d columns: %s", len(line), line)
			}
		}
	}
	for _, want := range []string{"| decomposed    | none [1] |      none [2] |", "| hierarchical  | none [3] |      none [4] |",
		"[1] decomposed, measured: not within the measured range: decomposed/direct is above 1.05 at the largest size, 4M",
		"[3] hierarchical, measured: not within the measured range: hierarchical/direct is above 1.05 at the largest size, 4M",
		"[4] hierarchical, from the fits: the fits' asymptotic ratio B_direct/B_hierarchical = 3 exceeds 1.05"} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
}

// Above FoldRanksAbove ranks the Ranks table folds into a line: the Nodes
// table has a row a node.
func TestRanksTableFolds(t *testing.T) {
	var b strings.Builder
	infos := make([]coll.Info, FoldRanksAbove+1)
	if err := RanksTable(&b, infos); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "65, one row a node") {
		t.Errorf("%q", got)
	}
}

// A clause that several notes end with is said once, under their numbers
// (the hierarchy's crossover printed one explanation eight times).
func TestTableNotesSayACommonClauseOnce(t *testing.T) {
	n := tableNotes{"a, fits: ratio 1.5 exceeds 1.05: stays slower", "a, measured: above 1.05", "b, fits: ratio 2 exceeds 1.05: stays slower",
		"c: alone"}
	var b bytes.Buffer
	n.write(&b, "")
	want := "[1] a, fits: ratio 1.5 exceeds 1.05\n[2] a, measured: above 1.05\n[3] b, fits: ratio 2 exceeds 1.05\n[4] c: alone\n[1,3] stays slower\n"
	if b.String() != want {
		t.Errorf("notes:\n%s\nwant:\n%s", b.String(), want)
	}
}

// A fit whose alpha is below zero says so under the model table, once,
// naming it; a fit with a positive alpha is not named.
func TestModelTableSaysAlphaIsNegative(t *testing.T) {
	c := coll.SeedCase
	neg, pos := model.Fit{Case: c, AlphaUS: -3.66, BandwidthGBps: 10, R2: 0.99, SizesBytes: []int64{1024, 1 << 20}}, model.Fit{Case: c, AlphaUS: 2, BandwidthGBps: 10, R2: 0.99, SizesBytes: []int64{1024, 1 << 20}}
	neg.Mode, pos.Mode = coll.Direct, "decomposed"
	var b bytes.Buffer
	if err := ModelTable(&b, Summary{Fits: []model.Fit{neg, pos}}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(b.String(), "alpha < 0"); got != 1 || !strings.Contains(b.String(), "read B only (direct -3.66 us)") {
		t.Errorf("want one alpha < 0 note naming direct only:\n%s", b.String())
	}
}
