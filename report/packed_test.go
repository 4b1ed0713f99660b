package report

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"rsag/coll"
)

// packedRoundTrip sends r as the gather does (packed, as JSON) and
// merges it as rank 0 does, the one rank's.
func packedRoundTrip(t *testing.T, r Rows) (Rows, int) {
	t.Helper()
	data, err := json.Marshal(Pack(r))
	if err != nil {
		t.Fatal(err)
	}
	var p PackedRows
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	back, err := MergePacked([]PackedRows{p})
	if err != nil {
		t.Fatal(err)
	}
	return back, len(data)
}

// Every timing row comes back from the gather as it was, in order: cases
// interleaved as the modes take turns, a case again after others, rows of
// other ranks and hosts among them, every verdict, and durations that
// only an exact float encoding keeps. The other rows travel as they are.
func TestPackedRowsComeBackAsTheyWere(t *testing.T) {
	direct := coll.Case{Run: "default", SizeBytes: 1024, DType: coll.Float32, Op: coll.Sum, Placement: coll.OutOfPlace,
		Method: coll.PerOp, Batch: 1, Buffers: coll.PlainBuffers, CTAPolicy: coll.DefaultCTAPolicy, Mode: coll.Direct}
	decomposed := direct
	decomposed.Mode = coll.Decomposed
	big := direct
	big.SizeBytes, big.Run = 1<<30, "another run"
	cases := []coll.Case{direct, decomposed, big}
	durations := []float64{0.1, 1.0 / 3, math.SmallestNonzeroFloat64, math.MaxFloat64 / 2, 1e-300, 123456.789012345678}
	rng := rand.New(rand.NewPCG(1, 2))
	var rows Rows
	for i := range 5000 {
		rank := i / 2000 // three ranks' rows, as Merge would have them
		rows.Timings = append(rows.Timings, TimingRow{Rank: rank, Case: cases[rng.IntN(len(cases))], Cycle: i % 7,
			DurationUS: durations[rng.IntN(len(durations))] * (1 + rng.Float64()), Correct: Verdict(rng.IntN(3)),
			Host: []string{"node1", "node2"}[rank%2]})
	}
	rows.Contracts = []ContractRow{{Rank: 1, Name: "exact-sum-equivalence", Correct: true, Host: "node2"}}
	rows.Memory = []MemoryRow{{Rank: 1, Mode: "allreduce-full", PayloadBytes: 4096}}

	back, size := packedRoundTrip(t, rows)
	if !slices.Equal(back.Timings, rows.Timings) {
		for i := range min(len(back.Timings), len(rows.Timings)) {
			if back.Timings[i] != rows.Timings[i] {
				t.Fatalf("row %d came back as %+v; it was %+v", i, back.Timings[i], rows.Timings[i])
			}
		}
		t.Fatalf("%d timing rows came back of %d", len(back.Timings), len(rows.Timings))
	}
	if !slices.Equal(back.Contracts, rows.Contracts) || !slices.Equal(back.Memory, rows.Memory) {
		t.Errorf("the other rows came back as %+v, %+v", back.Contracts, back.Memory)
	}
	plain, err := json.Marshal(rows)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d timing rows: %d bytes packed, %d as rows", len(rows.Timings), size, len(plain))

	if back, _ := packedRoundTrip(t, Rows{}); len(back.Timings) != 0 {
		t.Errorf("no rows came back as %d", len(back.Timings))
	}
}

// What the gather exists to save: one case's samples, as a timing phase
// leaves them, travel in a tenth of the bytes of their rows or less.
func TestPackedTimingRowsAreATenthOfTheirRows(t *testing.T) {
	c := coll.Case{Run: "default", SizeBytes: 1 << 20, DType: coll.Float32, Op: coll.Sum, Placement: coll.OutOfPlace,
		Method: coll.PerOp, Batch: 1, Buffers: coll.PlainBuffers, CTAPolicy: coll.DefaultCTAPolicy, Mode: coll.Direct}
	var rows Rows
	for i := range 10000 {
		rows.Timings = append(rows.Timings, TimingRow{Rank: 4711, Case: c, Cycle: i, DurationUS: 1000 + float64(i)/7, Correct: Right, Host: "node0042.cluster.example"})
	}
	plain, err := json.Marshal(rows)
	if err != nil {
		t.Fatal(err)
	}
	packed, err := json.Marshal(Pack(rows))
	if err != nil {
		t.Fatal(err)
	}
	if len(packed)*10 > len(plain) {
		t.Errorf("10,000 samples: %d bytes packed against %d as rows; want a tenth or less", len(packed), len(plain))
	}
}

// The timing phase leaves a case's samples with its modes taking turns,
// cycle by cycle: they pack as well as one mode's alone, and keep their
// order.
func TestModesTakingTurnsPackAndKeepTheirOrder(t *testing.T) {
	c := coll.Case{Run: "default", SizeBytes: 1 << 20, DType: coll.Float32, Op: coll.Sum, Placement: coll.OutOfPlace,
		Method: coll.PerOp, Batch: 1, Buffers: coll.PlainBuffers, CTAPolicy: coll.DefaultCTAPolicy}
	var rows Rows
	for cycle := range 5000 {
		for k, m := range []coll.Mode{coll.Direct, coll.Decomposed} {
			c.Mode = m
			if cycle%2 == 1 {
				c.Mode = []coll.Mode{coll.Decomposed, coll.Direct}[k]
			}
			rows.Timings = append(rows.Timings, TimingRow{Rank: 3, Case: c, Cycle: cycle, DurationUS: 1000 + float64(cycle)/7, Correct: Right, Host: "node2"})
		}
	}
	back, size := packedRoundTrip(t, rows)
	if !slices.Equal(back.Timings, rows.Timings) {
		t.Fatal("the rows came back out of order or changed")
	}
	plain, err := json.Marshal(rows)
	if err != nil {
		t.Fatal(err)
	}
	if size*10 > len(plain) {
		t.Errorf("10,000 samples of two modes taking turns: %d bytes packed against %d as rows; want a tenth or less", size, len(plain))
	}
}

// A packed series that does not add up is refused, not read short, and
// the rank is named.
func TestMergePackedRefusesWhatDoesNotAddUp(t *testing.T) {
	good := func() PackedRows {
		return PackedRows{Timing: []TimingSeries{{Rank: 0, Host: "h", Cycles: []int{0, 1}, DurationsUS: []float64{1, 2}, Correct: []int8{2, 1}}},
			Order: []int{0, 0}}
	}
	if _, err := MergePacked([]PackedRows{good()}); err != nil {
		t.Fatalf("a good series: %v", err)
	}
	short := good()
	short.Timing[0].DurationsUS = short.Timing[0].DurationsUS[:1]
	bad := good()
	bad.Timing[0].Correct[1] = 7
	unread := good()
	unread.Order = unread.Order[:1]
	overread := good()
	overread.Order = append(overread.Order, 0)
	elsewhere := good()
	elsewhere.Order[1] = 1
	for name, c := range map[string]struct {
		p    PackedRows
		want string
	}{
		"a duration short":      {short, "rank 0's result rows: timing series 0: 2 cycles, 1 durations"},
		"a verdict of 7":        {bad, "7 is not a check's verdict"},
		"a row in no place":     {unread, "1 of its 2 rows are in no place"},
		"a row past the series": {overread, "timing row 2: its series 0"},
		"a series not there":    {elsewhere, "timing row 1: its series 1 is not there"},
	} {
		if _, err := MergePacked([]PackedRows{c.p}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error saying %q", name, err, c.want)
		}
	}
}

// Rank 0 merges what every rank sent as Merge merges their rows, in rank
// order; a rank whose rows do not add up is named.
func TestMergePackedIsMergeOfEveryRanksRows(t *testing.T) {
	c := coll.Case{Run: "default", SizeBytes: 4096, DType: coll.Float32, Op: coll.Sum, Placement: coll.OutOfPlace,
		Method: coll.PerOp, Batch: 1, Buffers: coll.PlainBuffers, CTAPolicy: coll.DefaultCTAPolicy}
	var ranks []Rows
	var sent []PackedRows
	for rank := range 3 {
		var r Rows
		r.Contracts = []ContractRow{{Rank: rank, Name: "exact-sum-equivalence", Correct: true}}
		for cycle := range 4 * (rank + 1) {
			for _, m := range []coll.Mode{coll.Direct, coll.Decomposed} {
				c.Mode = m
				r.Timings = append(r.Timings, TimingRow{Rank: rank, Case: c, Cycle: cycle, DurationUS: float64(100*rank + cycle), Correct: Right})
			}
		}
		ranks = append(ranks, r)
		sent = append(sent, Pack(r))
	}
	want := Merge(ranks)
	got, err := MergePacked(sent)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Timings, want.Timings) || !slices.Equal(got.Contracts, want.Contracts) {
		t.Errorf("merged %d timing rows and %d contracts; Merge gives %d and %d", len(got.Timings), len(got.Contracts), len(want.Timings), len(want.Contracts))
	}
	sent = nil
	for _, r := range ranks {
		sent = append(sent, Pack(r))
	}
	sent[2].Order = sent[2].Order[1:]
	if _, err := MergePacked(sent); err == nil || !strings.HasPrefix(err.Error(), "rank 2's result rows: ") {
		t.Errorf("rank 2's rows short of one: %v; want an error naming rank 2", err)
	}
}
