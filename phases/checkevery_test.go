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
		// Barrier: the same operations, each after a barrier.
		{"barrier cycle 2", coll.Barriered, coll.OutOfPlace, 12, 2, "direct output at cycle 2: element 5"},
		{"barrier in place cycle 1", coll.Barriered, coll.InPlace, 12, 1, "direct output at the validation operation after cycle 1: element 5"},
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

// directAlone is oneCase timing direct AllReduce alone with method m (batched
// or barrier) out of place: what a backend that takes samples in one call
// (the in-memory one here, MPI in C) takes so.
func directAlone(m coll.Method, checkLast bool) []coll.Sweep {
	runs := oneCase(m, coll.OutOfPlace, checkLast)
	runs[0].Modes = []coll.Mode{coll.Direct}
	return runs
}

// Samples taken in one call are checked as those taken one by one: a bit
// flipped in what a batch left fails the run naming its cycle, and rank
// 1's row of it alone says wrong; a flip the batch's next operation
// overwrote is not what it left, and passes. With check = "last" only the
// last sample is checked.
func TestSamplesInOneCallAreChecked(t *testing.T) {
	// 1 warm-up of 3 operations, then cycle k's last is call 3(k+2), for
	// the barrier method too: its barriers are no AllReduce.
	for _, method := range []coll.Method{coll.Batched, coll.Barriered} {
		for _, c := range []struct {
			call, cycle int // cycle -1: none fails
			checkLast   bool
		}{{6, 0, false}, {12, 2, false}, {7, -1, false}, {9, -1, true}, {15, 3, true}} {
			samples, errs := timeWith(flipAt(c.call), directAlone(method, c.checkLast))
			for rank, err := range errs {
				if c.cycle < 0 {
					if err != nil {
						t.Errorf("%s, flip at call %d: rank %d: %v", method, c.call, rank, err)
					}
					continue
				}
				want := fmt.Sprintf("timing check failed on rank(s) [1]: rank 1 (inmem): one 1536 float32 sum out-of-place %s, direct output at cycle %d: element 5 is ", method, c.cycle)
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%s, flip at call %d: rank %d: %v, want %q", method, c.call, rank, err, want)
				}
			}
			for rank, s := range samples {
				if len(s) != 4 {
					t.Fatalf("flip at call %d: rank %d: %d samples, want 4", c.call, rank, len(s))
				}
				for _, x := range s {
					// With check = "last", a failed case vouches for none of the
					// failing rank's rows.
					failed := c.cycle >= 0 && rank == 1
					checked := !c.checkLast || x.Cycle == 3 || failed
					wrong := failed && (x.Cycle == c.cycle || c.checkLast)
					if x.Checked != checked || x.Correct != (checked && !wrong) || !(x.DurationUS > 0) {
						t.Errorf("flip at call %d, check last %v: rank %d cycle %d: checked %v correct %v, %v us",
							c.call, c.checkLast, rank, x.Cycle, x.Checked, x.Correct, x.DurationUS)
					}
				}
			}
		}
	}
}

// parts records a watch over samples taken in one call.
type parts struct {
	armed []string
	last  func() (int64, int64)
}

func (p *parts) Arm(op string, bytes int64) { p.armed = append(p.armed, op) }
func (p *parts) Kick()                      {}
func (p *parts) ArmSample(op *string, bytes int64, context *string, round int) {
	p.armed = append(p.armed, *op+" sample")
}
func (p *parts) Leave() {}
func (p *parts) ArmSamples(op *string, bytes int64, context *string, round int, progress func() (int64, int64)) {
	p.armed = append(p.armed, fmt.Sprintf("%s samples from %s %d", *op, *context, round))
	p.last = progress
}

// The watch sees the run of samples as one step of parts, whose progress
// ends at the last cycle: the watchdog and a hang's diagnosis count each
// sample, as they would one by one.
func TestSamplesInOneCallAreWatched(t *testing.T) {
	trackers := []*parts{{}, {}}
	errs := inmem.Launch(2, inmem.Faults{}, func(be coll.Backend, comm coll.Comm) error {
		_, err := phases.RunTiming(phases.Watch(be, trackers[be.Rank()]), comm, directAlone(coll.Batched, false), nil, nil)
		return err
	})
	noErrors(t, errs)
	for rank, p := range trackers {
		if !slices.Contains(p.armed, "all-reduce samples from direct, cycle 0") || p.last == nil {
			t.Fatalf("rank %d armed %q, want one run of samples from cycle 0", rank, p.armed)
		}
		if part, began := p.last(); part != 3 || began <= 0 {
			t.Errorf("rank %d: the run's progress ended at sample %d (began %d), want 3", rank, part, began)
		}
		if n := strings.Count(strings.Join(p.armed, ";"), "all-reduce sample;"); n != 1 {
			t.Errorf("rank %d armed %d samples alone (%q), want its warm-up's alone", rank, n, p.armed)
		}
	}
}

// The line streamed as each case ends says what was checked: every cycle,
// or under timing.check = "last" the last sample only, never "checked"
// alone.
func TestProgressSaysWhatWasChecked(t *testing.T) {
	for _, last := range []bool{false, true} {
		lines := make([][]string, 2)
		errs := inmem.Launch(2, inmem.Faults{}, func(be coll.Backend, comm coll.Comm) error {
			_, err := phases.RunTiming(be, comm, oneCase(coll.PerOp, coll.OutOfPlace, last), nil, func(l string) { lines[be.Rank()] = append(lines[be.Rank()], l) })
			return err
		})
		for r, err := range errs {
			if err != nil {
				t.Fatalf("rank %d: %v", r, err)
			}
		}
		all := strings.Join(lines[0], "\n")
		want, not := "(4 cycles, checked)", "the last checked"
		if last {
			want, not = "(4 cycles, the last checked)", ", checked)"
		}
		if !strings.Contains(all, want) || strings.Contains(all, not) {
			t.Errorf("check last %v: the progress says %q; want %q, not %q", last, all, want, not)
		}
	}
}
