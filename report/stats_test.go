package report

import (
	"math"
	"reflect"
	"testing"

	"rsag/coll"
)

// statRows is one case per mode on two ranks and four cycles. Per cycle, the
// slowest rank's time is: direct 100 (discarded), 12, 20, 40; decomposed
// 90 (discarded), 30, 30, 33.
func statRows() []TimingRow {
	row := func(rank, cycle int, mode string, us float64, ok bool) TimingRow {
		return TimingRow{Case: coll.Case{SizeBytes: 1 << 20, Mode: coll.Mode(mode), Run: "default", DType: coll.Float32, Op: coll.Sum, Placement: "out-of-place", Method: "per-op", Batch: 1, Buffers: "plain", CTAPolicy: "default"}, Rank: rank, Cycle: cycle, DurationUS: us, Correct: VerdictOf(true, ok),
			Host: []string{"a", "b"}[rank]}
	}
	var rows []TimingRow
	// Decomposed appears first: the output keeps that order.
	for c, us := range []float64{90, 30, 30, 33} {
		rows = append(rows, row(0, c, "decomposed", us, true), row(1, c, "decomposed", us-1, true))
	}
	// Rank 0's own median (20 over 10, 20, 30) is above rank 1's (18 over
	// 12, 18, 40) although rank 1 has the largest single sample.
	r0 := []float64{100, 10, 20, 30}
	r1 := []float64{50, 12, 18, 40}
	for c := range r0 {
		rows = append(rows, row(0, c, "direct", r0[c], c != 0), row(1, c, "direct", r1[c], true))
	}
	return rows
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestTimingStatsMaxOverRanksAndDiscard(t *testing.T) {
	stats := TimingStats(statRows(), 2, 1)
	if len(stats) != 2 || stats[0].Mode != "decomposed" || stats[1].Mode != "direct" {
		t.Fatalf("want decomposed then direct, got %+v", stats)
	}
	d := stats[1]
	// Kept samples: 12, 20, 40 (max over ranks of cycles 1..3).
	want := map[string][2]float64{
		"min":    {d.MinUS, 12},
		"p10":    {d.P10US, 13.6}, // 12 + 0.2*(20-12)
		"median": {d.MedianUS, 20},
		"p90":    {d.P90US, 36},   // 20 + 0.8*(40-20)
		"p99":    {d.P99US, 39.6}, // 20 + 0.98*(40-20)
		"max":    {d.MaxUS, 40},
		"mean":   {d.MeanUS, 24},
		"std":    {d.StdUS, math.Sqrt(208)}, // (144+16+256)/2
		"cv":     {d.CV, math.Sqrt(208) / 24},
		"algbw":  {d.AlgBWGBps, 1048576.0 / 20 / 1e3},
		"busbw":  {d.BusBWGBps, 1048576.0 / 20 / 1e3}, // factor 2(W-1)/W = 1 on 2 ranks
	}
	for name, v := range want {
		if !near(v[0], v[1]) {
			t.Errorf("direct %s = %v, want %v", name, v[0], v[1])
		}
	}
	if d.Samples != 3 || d.Discarded != 1 || d.Ranks != 2 {
		t.Errorf("samples/discarded/ranks = %d/%d/%d, want 3/1/2", d.Samples, d.Discarded, d.Ranks)
	}
	if d.SlowestRank != 0 || d.SlowestHost != "a" {
		t.Errorf("slowest = rank %d on %q, want rank 0 on a", d.SlowestRank, d.SlowestHost)
	}
	if d.Correct {
		t.Error("a False sample, even a discarded one, must make the case incorrect")
	}
	c := stats[0]
	if !near(c.MedianUS, 30) || !near(c.MaxUS, 33) || c.SlowestRank != 0 || !c.Correct {
		t.Errorf("decomposed: %+v", c)
	}
	if c.Run != "default" || c.DType != coll.Float32 || c.Op != coll.Sum || c.Placement != "out-of-place" ||
		c.Method != "per-op" || c.Batch != 1 || c.SizeBytes != 1<<20 {
		t.Errorf("case fields not carried: %+v", c)
	}
}

func TestTimingStatsOneSampleAndTooManyDiscarded(t *testing.T) {
	stats := TimingStats(statRows(), 2, 3)
	d := stats[1]
	if d.Samples != 1 || d.MinUS != 40 || d.P10US != 40 || d.MedianUS != 40 || d.P99US != 40 || d.StdUS != 0 || d.CV != 0 {
		t.Errorf("one sample: %+v", d)
	}
	if got := TimingStats(statRows(), 2, 4); len(got) != 0 {
		t.Errorf("discarding every cycle leaves no case, got %+v", got)
	}
	if got := TimingStats(nil, 2, 0); got != nil {
		t.Errorf("no rows: %+v", got)
	}
}

func TestTimingStatsCasesAreSeparate(t *testing.T) {
	rows := statRows()
	// The same cycles of another dtype must not fold into float32's maxima.
	for _, r := range statRows() {
		r.DType = coll.BFloat16
		r.DurationUS *= 10
		rows = append(rows, r)
	}
	stats := TimingStats(rows, 2, 1)
	if len(stats) != 4 {
		t.Fatalf("want 4 cases, got %d", len(stats))
	}
	if stats[1].MedianUS != 20 || stats[3].MedianUS != 200 || stats[3].DType != coll.BFloat16 {
		t.Errorf("cases mixed: %v %v", stats[1], stats[3])
	}
}

func TestBusFactor(t *testing.T) {
	for _, c := range []struct {
		mode  string
		world int
		want  float64
	}{{"direct", 2, 1}, {"decomposed", 2, 1}, {"direct", 4, 1.5}, {"decomposed", 4, 1.5}, {"direct", 8, 1.75}, {"other", 4, 0}} {
		if got := BusFactor(coll.Mode(c.mode), c.world, 0); !near(got, c.want) {
			t.Errorf("BusFactor(%s, %d) = %v, want %v", c.mode, c.world, got, c.want)
		}
	}
}

func TestRatios(t *testing.T) {
	stats := TimingStats(statRows(), 2, 1)
	// A direct-only case has no ratio.
	lone := stats[1]
	lone.SizeBytes = 1024
	stats = append(stats, lone)
	got := Ratios(stats)
	want := []Ratio{{Case: coll.Case{Run: "default", SizeBytes: 1 << 20, DType: coll.Float32, Op: coll.Sum, Placement: "out-of-place",
		Method: "per-op", Batch: 1, Buffers: "plain", CTAPolicy: "default"}, DirectMedianUS: 20, DecomposedMedianUS: 30, Ratio: 1.5}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Ratios = %+v, want %+v", got, want)
	}
}

func TestTimingStatsPerRun(t *testing.T) {
	rows := statRows()
	for _, r := range statRows() {
		r.Run = "tuned"
		rows = append(rows, r)
	}
	stats := TimingStatsPerRun(rows, coll.Layout{World: 2}, map[string]int{"default": 1, "tuned": 3})
	if len(stats) != 4 || stats[1].Discarded != 1 || stats[1].MedianUS != 20 ||
		stats[3].Run != "tuned" || stats[3].Discarded != 3 || stats[3].MedianUS != 40 {
		t.Errorf("per-run discard: %+v", stats)
	}
	if got := TimingStatsPerRun(statRows(), coll.Layout{World: 2}, nil); got[1].Discarded != 0 || got[1].MaxUS != 100 {
		t.Errorf("a run without a discard drops none: %+v", got[1])
	}
}
