package phases_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"rsag/coll"
	"rsag/internal/testkit/inmem"
	"rsag/phases"
)

// oneCase is one float32 sum case at 1536 bytes, its two modes timed with
// method m in placement p: 1 warm-up, 4 cycles, batches of 3.
func oneCase(m coll.Method, p coll.Placement, checkLast bool) []coll.Sweep {
	return []coll.Sweep{{Name: "one", SizesBytes: []int64{1536}, DTypes: []coll.DType{coll.Float32},
		Ops: []coll.Op{coll.Sum}, Placements: []coll.Placement{p}, Methods: []coll.Method{m},
		Batch: 3, Warmups: 1, Cycles: 4, CheckLast: checkLast}}
}

// flipAt is a fault of rank 1's AllReduce output at its call n alone.
func flipAt(n int) inmem.Faults {
	return inmem.Faults{Flip: &inmem.Flip{Collective: coll.AllReduce.Name, Rank: 1, Element: 5,
		Calls: func(call int) bool { return call == n }}}
}

// timeWith runs the timing phase on 2 ranks with faults.
func timeWith(faults inmem.Faults, runs []coll.Sweep) ([][]phases.TimingSample, []error) {
	samples := make([][]phases.TimingSample, 2)
	errs := inmem.Launch(2, faults, func(be coll.Backend, comm coll.Comm) error {
		s, err := phases.RunTiming(be, comm, runs, nil, nil)
		samples[be.Rank()] = s
		return err
	})
	return samples, errs
}

// A bit flipped in any one sample's output fails the run, whichever sample
// it is: the first warm-up, a middle cycle, the last; per-op, batched
// (what the batch left: its last operation) and, in place, the untimed
// validation operation that stands for a batched sample. Every rank gets
// the same error, naming rank 1, its host, the case, the mode and the
// cycle; rank 1's row of that sample alone says wrong.
func TestEverySampleIsChecked(t *testing.T) {
	for _, c := range []struct {
		name   string
		method coll.Method
		place  coll.Placement
		call   int    // rank 1's AllReduce call that is corrupted
		cycle  int    // the sample it falls in; -1: the warm-up
		when   string // how the error names it
	}{
		// Per-op: the warm-up is call 1, cycle k is call k+2.
		{"per-op warm-up", coll.PerOp, coll.OutOfPlace, 1, -1, "direct output at warm-up 0: element 5"},
		{"per-op cycle 1", coll.PerOp, coll.OutOfPlace, 3, 1, "direct output at cycle 1: element 5"},
		{"per-op last cycle", coll.PerOp, coll.OutOfPlace, 5, 3, "direct output at cycle 3: element 5"},
		{"per-op in place cycle 2", coll.PerOp, coll.InPlace, 4, 2, "direct output at cycle 2: element 5"},
		// Batched out of place, 3 operations a sample: cycle k's last is
		// call 3(k+2).
		{"batched cycle 0", coll.Batched, coll.OutOfPlace, 6, 0, "direct output at cycle 0: element 5"},
		{"batched cycle 2", coll.Batched, coll.OutOfPlace, 12, 2, "direct output at cycle 2: element 5"},
		// Batched in place: each sample's 3 operations, then one
		// validation operation: cycle k's is call 4(k+2).
		{"batched in place cycle 1", coll.Batched, coll.InPlace, 12, 1, "direct output at the validation operation after cycle 1: element 5"},
	} {
		t.Run(c.name, func(t *testing.T) {
			samples, errs := timeWith(flipAt(c.call), oneCase(c.method, c.place, false))
			for rank, err := range errs {
				var ce *phases.CheckError
				if !errors.As(err, &ce) || !slices.Equal(ce.Ranks, []int{1}) {
					t.Fatalf("rank %d: %v, want a CheckError on rank 1", rank, err)
				}
				for _, want := range []string{"timing check failed on rank(s) [1]: rank 1 (inmem): one 1536 float32 sum " + string(c.place) + " " + string(c.method), c.when} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("rank %d: %q does not say %q", rank, err, want)
					}
				}
			}
			for rank, s := range samples {
				if len(s) != 8 {
					t.Fatalf("rank %d: %d samples, want every one of the case's 8", rank, len(s))
				}
				for _, x := range s {
					wrong := rank == 1 && x.Mode == coll.Direct && x.Cycle == c.cycle
					if !x.Checked || x.Correct == wrong {
						t.Errorf("rank %d: %s cycle %d checked %v correct %v, want checked and correct %v", rank, x.Mode, x.Cycle, x.Checked, x.Correct, !wrong)
					}
				}
			}
		})
	}
}

// With check = "last", only the last sample of each mode is checked: a
// flip in an earlier one passes unseen, and the rows of every unchecked
// sample say so (never correct); a flip in the last fails the case, and no
// row of it is then vouched for.
func TestCheckLastChecksTheLastSampleOnly(t *testing.T) {
	samples, errs := timeWith(flipAt(3), oneCase(coll.PerOp, coll.OutOfPlace, true))
	noErrors(t, errs)
	for rank, s := range samples {
		for _, x := range s {
			last := x.Cycle == 3
			if x.Checked != last || x.Correct != last {
				t.Errorf("check last, rank %d: %s cycle %d checked %v correct %v, want both %v", rank, x.Mode, x.Cycle, x.Checked, x.Correct, last)
			}
		}
	}
	samples, errs = timeWith(flipAt(5), oneCase(coll.PerOp, coll.OutOfPlace, true))
	for rank, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "direct output at cycle 3") {
			t.Errorf("check last, flip in the last sample: rank %d: %v", rank, err)
		}
	}
	if slices.ContainsFunc(samples[1], func(x phases.TimingSample) bool { return x.Correct || !x.Checked }) {
		t.Errorf("check last, a failed case: rank 1's rows %+v, want every one checked and wrong", samples[1])
	}
	// Batched in place: the validation operation is not a sample; when it
	// holds, no row says correct.
	samples, errs = timeWith(inmem.Faults{}, oneCase(coll.Batched, coll.InPlace, true))
	noErrors(t, errs)
	for rank, s := range samples {
		if slices.ContainsFunc(s, func(x phases.TimingSample) bool { return x.Checked || x.Correct }) {
			t.Errorf("check last, batched in place, rank %d: %+v, want no row vouched for", rank, s)
		}
	}
}

// A check that fails on several ranks names what each found.
func TestAFailedCheckNamesEveryRank(t *testing.T) {
	faults := inmem.Faults{Flip: &inmem.Flip{Collective: coll.AllGather.Name, Rank: 0, Element: 2, Send: true,
		Calls: func(n int) bool { return n == 2 }}}
	_, errs := timeWith(faults, oneCase(coll.PerOp, coll.OutOfPlace, false))
	for rank, err := range errs {
		for r := range 2 {
			// Rank 0 sent its chunk wrong: both ranks' decomposed outputs hold it.
			want := fmt.Sprintf("rank %d (inmem): one 1536 float32 sum out-of-place per-op, decomposed output at cycle 0: element 2", r)
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "on rank(s) [0 1]") {
				t.Errorf("rank %d: %v, want %q", rank, err, want)
			}
		}
	}
}
