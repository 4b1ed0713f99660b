package phases

import (
	"math"
	"slices"
	"testing"

	"rsag/coll"
	"rsag/internal/testkit/inmem"
)

func TestSamplesPerSlice(t *testing.T) {
	for _, c := range []struct {
		seconds float64
		want    int
	}{
		{0.001, 5}, {0.0012, 4}, {0.0025, 2}, {0.005, 1}, {0.01, 1}, {3, 1},
		{1e-6, 5000}, {1e-12, 1 << 20},
		{0, 1}, {-1, 1}, {math.NaN(), 1}, {math.Inf(1), 1},
	} {
		if got := samplesPerSlice(c.seconds); got != c.want {
			t.Errorf("samplesPerSlice(%v) = %d, want %d", c.seconds, got, c.want)
		}
	}
}

// TestPacerYieldsEveryNth: a pacer of every 3 yields after samples 3, 6
// and 9 of 10, and nowhere else.
func TestPacerYieldsEveryNth(t *testing.T) {
	var at []int
	n := 0
	defer func(old func()) { yield = old }(yield)
	yield = func() { at = append(at, n) }
	p := &pacer{every: 3}
	for n = 1; n <= 10; n++ {
		p.between()
	}
	if len(at) != 3 || at[0] != 3 || at[1] != 6 || at[2] != 9 {
		t.Errorf("yields after samples %v, want [3 6 9]", at)
	}
}

// TestAgreePace: ranks whose warm-ups took different times all pace by
// the slowest rank's median, and a case without warm-ups yields after
// every sample.
func TestAgreePace(t *testing.T) {
	spent := [][]float64{
		{0.0001, 0.0001, 0.0001},
		{0.002, 0.0009, 0.0011}, // median 1.1 ms, the slowest: 4 samples a slice
		{0.5, 0.0002, 0.0003},   // one slow warm-up does not count
	}
	every := make([]int, len(spent))
	errs := inmem.Launch(len(spent), inmem.Faults{}, func(be coll.Backend, comm coll.Comm) error {
		p, err := agreePace(comm, spent[be.Rank()])
		if err == nil {
			every[be.Rank()] = p.every
		}
		return err
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	for r, e := range every {
		if e != 4 {
			t.Errorf("rank %d yields every %d samples, want 4 (5 ms at the slowest median, 1.1 ms)", r, e)
		}
	}
	if p, err := agreePace(nil, nil); err != nil || p.every != 1 {
		t.Errorf("no warm-ups: every %d, %v; want every sample", p.every, err)
	}
}

// countingComm counts the collectives that agree maxima.
type countingComm struct {
	coll.Comm
	calls *int
}

func (c countingComm) MaxFloat64s(v []float64) error {
	*c.calls++
	return c.Comm.MaxFloat64s(v)
}

// TestSlowestMediansAgreeACaseInOneCollective: each mode's median is over
// the slowest rank of each cycle past discard (a rank slow in one cycle
// only moves that cycle), and the whole case is agreed in one collective,
// not one a sample: at a thousand ranks each is a latency.
func TestSlowestMediansAgreeACaseInOneCollective(t *testing.T) {
	modes := []coll.TimedMode{{Name: "direct"}, {Name: "decomposed"}}
	// us[rank][mode][cycle]; cycle 0 is discarded.
	us := [][][]float64{
		{{900, 10, 10, 10, 50}, {900, 20, 30, 20, 20}},
		{{900, 40, 10, 10, 10}, {900, 20, 20, 90, 20}},
		{{900, 10, 30, 10, 10}, {900, 20, 20, 20, 80}},
	}
	// Slowest per cycle: direct 40 30 10 50 (median 35), decomposed 20 30 90 80 (median 55).
	want := []float64{35, 55}
	calls := make([]int, len(us))
	got := make([][]float64, len(us))
	errs := inmem.Launch(len(us), inmem.Faults{}, func(be coll.Backend, comm coll.Comm) error {
		r := be.Rank()
		var samples []TimingSample
		for cycle := range us[r][0] {
			for i, m := range modes { // interleaved, as the timed loop makes them
				s := TimingSample{Cycle: cycle, DurationUS: us[r][i][cycle]}
				s.Mode = m.Name
				samples = append(samples, s)
			}
		}
		var err error
		got[r], err = slowestMedians(countingComm{comm, &calls[r]}, modes, samples, 1)
		return err
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		if !slices.Equal(got[r], want) {
			t.Errorf("rank %d: medians %v, want %v", r, got[r], want)
		}
		if calls[r] != 1 {
			t.Errorf("rank %d agreed its case in %d collectives, want 1", r, calls[r])
		}
	}
}
