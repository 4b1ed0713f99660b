package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"rsag/coll"
	"rsag/model"
)

func TestBytesText(t *testing.T) {
	for b, want := range map[int64]string{
		0: "0 B", 1000: "1000 B", 1024: "1 KiB", 268435456: "256 MiB", 1075200: "1050 KiB", 268800: "262.5 KiB",
		1344000: "1.28 MiB", 793269348: "757 MiB", 3 << 30: "3 GiB", 1536 << 20: "1536 MiB", -2048: "-2 KiB",
	} {
		if got := BytesText(b); got != want {
			t.Errorf("BytesText(%d) = %q; want %q", b, got, want)
		}
	}
}

func TestUSText(t *testing.T) {
	for us, want := range map[float64]string{0.237: "0.24", 24.394: "24.39", 346.09: "346.1", 1618.48: "1618", 120034.4: "120034"} {
		if got := USText(us); got != want {
			t.Errorf("USText(%v) = %q; want %q", us, got, want)
		}
	}
}

// Prose is folded at spaces to the width, indented under itself; table
// lines and short lines are left alone, and a line a Write leaves open is
// not folded mid-way.
func TestTerminalFoldsProse(t *testing.T) {
	var b bytes.Buffer
	w := Terminal(&b)
	long := "  note: " + strings.Repeat("word ", 40)
	table := "|" + strings.Repeat("-", 150) + "|"
	fmt.Fprintf(w, "%s\n%s\nshort\n", long, table)
	for _, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		if len(l) > TerminalWidth && l != table {
			t.Errorf("a line of %d columns: %q", len(l), l)
		}
		if !strings.HasPrefix(l, "  ") && l != table && l != "short" {
			t.Errorf("a folded line loses its indentation: %q", l)
		}
	}
	if got := strings.Join(strings.Fields(b.String()), " "); got != strings.Join(strings.Fields(long+table+" short"), " ") {
		t.Errorf("folding changed the words:\n%s", b.String())
	}
	b.Reset()
	fmt.Fprint(w, "partial ")
	fmt.Fprint(w, strings.Repeat("x ", 100)+"\n")
	if strings.Count(b.String(), "\n") != 1 {
		t.Errorf("a line begun by an earlier Write was folded:\n%s", b.String())
	}
}

// A table too wide for the terminal is split by its first dimension, a
// table per value named above it, until it fits.
func TestFoldTableSplitsByDimension(t *testing.T) {
	var rows [][]string
	for _, d := range []string{"int8", "float32"} {
		for _, p := range []string{"in-place", "out-of-place"} {
			rows = append(rows, []string{d, p, strings.Repeat("x", 60), strings.Repeat("y", 30)})
		}
	}
	var b bytes.Buffer
	if err := foldTable(&b, []string{"dtype", "placement"}, []string{"a", "b"}, rows); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if tableWidth(out) > TerminalWidth || strings.Count(out, "dtype int8\n") != 1 || strings.Count(out, "dtype float32\n") != 1 ||
		strings.Contains(out, "| dtype") {
		t.Errorf("want a table per dtype under its name, each within %d columns:\n%s", TerminalWidth, out)
	}
	b.Reset()
	if err := foldTable(&b, []string{"dtype", "placement"}, []string{"a"}, [][]string{{"int8", "in-place", "1"}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| dtype | placement |") {
		t.Errorf("a narrow table was split:\n%s", b.String())
	}
}

// Rows that repeat every cell past their dimensions, three or more, are
// one row that says how many cases it stands for; fewer are kept.
func TestCollapseRows(t *testing.T) {
	var rows [][]string
	for _, d := range []string{"int8", "int32", "float32", "float64"} {
		rows = append(rows, []string{d, "sum", "direct", "no fit [1]"}, []string{d, "sum", "decomposed", "no fit [1]"})
	}
	rows = append(rows, []string{"float64", "max", "direct", "1.00"}, []string{"float64", "min", "direct", "1.00"})
	got := collapseRows(rows, 2)
	want := [][]string{{"4 cases", "*", "direct", "no fit [1]"}, {"4 cases", "*", "decomposed", "no fit [1]"},
		{"float64", "max", "direct", "1.00"}, {"float64", "min", "direct", "1.00"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("collapsed %v\nwant %v", got, want)
	}
	if got := collapseRows(rows[:6], 2); got[0][0] != "all 3 cases" {
		t.Errorf("rows that stand for every case: %v", got)
	}
}

// The sweep-mpi shape: 128 cases of two sizes, none of which has a fit.
// The model says so in a row per mode and one note, not 256 rows, and
// the Crossover table's 128 identical rows are one, with one note each.
func TestModelTableSaysOnceWhatManyCasesShare(t *testing.T) {
	var rows []TimingRow
	for _, d := range []coll.DType{coll.Int8, coll.Int32, coll.Float32, coll.Float64} {
		for _, op := range []coll.Op{coll.Sum, coll.Max} {
			for _, size := range []int64{6720, 215040} {
				for mode, slower := range map[coll.Mode]float64{coll.Direct: 1, coll.Decomposed: 2} {
					for rank := range 2 {
						rows = append(rows, TimingRow{Case: coll.Case{SizeBytes: size, Mode: mode, Run: "default", DType: d, Op: op,
							Placement: "out-of-place", Method: "per-op", Batch: 1}, Rank: rank,
							DurationUS: slower * (10 + float64(size)/1e3), Correct: Right})
					}
				}
			}
		}
	}
	var b bytes.Buffer
	if err := ModelTable(&b, NewSummary(SummaryInput{Rows: Rows{Timings: rows}, World: 2})); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"| all 8 cases |  * |     direct |", "| all 8 cases |  * | decomposed |",
		"[1] no fit: 2 sizes; a fit needs at least 3 spanning 16x", "[1] decomposed, measured: not within the measured range"} {
		if strings.Count(out, want) != 1 {
			t.Errorf("want %q once:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n"); n > 25 {
		t.Errorf("%d lines for what 4 rows and 3 notes say:\n%s", n, out)
	}
}

// The terminal prints the model's split decision: a share that noise makes
// impossible is "not split [N]" with one note for every such row.
func TestBreakdownTableSaysNotSplit(t *testing.T) {
	s := NewSummary(SummaryInput{Rows: Rows{Timings: hockneyRows()}, World: 2})
	whole := model.PartTime{Mode: coll.Decomposed, MedianUS: 1000, P10US: 900, P90US: 1200}
	noisy := model.SplitOf(whole, []model.PartTime{{Mode: coll.ReduceScatterAlone, MedianUS: 1900, P10US: 1700, P90US: 2100},
		{Mode: coll.AllGatherAlone, MedianUS: 160, P10US: 150, P90US: 170}})
	noisy.SizeBytes = 1 << 20
	s.Breakdown[0].Shares = []model.Share{noisy, noisy}
	var b bytes.Buffer
	if err := ModelTable(&b, s); err != nil {
		t.Fatal(err)
	}
	out := b.String()[strings.Index(b.String(), "Where the decomposition"):]
	if strings.Count(out, "| RS 1900 + AG 160.0 | not split [1] |") != 2 || strings.Count(out, "[1] not split: ") != 1 ||
		strings.Contains(out, "%") {
		t.Errorf("want two rows 'not split [1]', one note, no share:\n%s", out)
	}
}
