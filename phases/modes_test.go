package phases_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"rsag/coll"
	"rsag/internal/testkit/inmem"
	"rsag/phases"
)

// everyMode is one case of every timed mode, both placements, two methods.
func everyMode(modes ...coll.Mode) []coll.Sweep {
	return []coll.Sweep{{Name: "modes", SizesBytes: []int64{3 * 4 * 64}, DTypes: []coll.DType{coll.Float32},
		Ops: []coll.Op{coll.Sum}, Placements: []coll.Placement{coll.OutOfPlace, coll.InPlace},
		Methods: []coll.Method{coll.PerOp, coll.Batched}, Modes: modes, Batch: 2, Warmups: 1, Cycles: 3}}
}

// Every timed mode runs, in place and out of place, and its own output is
// checked: a sample per mode per cycle, in rotating order.
// flatModes are the modes that run on the whole world.
func flatModes() []coll.Mode {
	var out []coll.Mode
	for _, name := range coll.Modes {
		if m, _ := coll.ModeOf(name); !m.NeedsGroups() {
			out = append(out, name)
		}
	}
	return out
}

func TestEveryTimedModeIsChecked(t *testing.T) {
	const world = 3
	flat := flatModes()
	runs := everyMode(flat...)
	samples := make([][]phases.TimingSample, world)
	errs := inmem.Launch(world, inmem.Faults{}, func(be coll.Backend, comm coll.Comm) error {
		s, err := phases.RunTiming(be, comm, runs, nil, nil)
		samples[be.Rank()] = s
		return err
	})
	noErrors(t, errs)
	for rank, s := range samples {
		count := map[coll.Mode]int{}
		for _, x := range s {
			if !x.Correct {
				t.Errorf("rank %d: %+v", rank, x)
			}
			count[x.Mode]++
		}
		for _, m := range flat {
			// 2 placements x 2 methods x 3 cycles.
			if count[m] != 12 {
				t.Errorf("rank %d: %d samples of %s, want 12", rank, count[m], m)
			}
		}
	}
	// The cycles rotate which mode goes first.
	var firsts []coll.Mode
	for i := 0; i < 3*len(flat); i += len(flat) {
		firsts = append(firsts, samples[0][i].Mode)
	}
	if fmt.Sprint(firsts) != fmt.Sprint(flat[:3]) {
		t.Errorf("first modes of cycles 0..2: %v, want %v", firsts, flat[:3])
	}
}

// Each fault fails exactly the modes whose collectives it breaks: a
// rotated gather is invisible to ReduceScatter alone, and max-for-sum to
// AllGather alone (it reduces nothing).
func TestModeChecksCatchTheirFaults(t *testing.T) {
	const world = 3
	for _, c := range []struct {
		fault  inmem.Faults
		mode   coll.Mode
		caught bool
	}{
		{inmem.Faults{RotatedGather: true}, coll.AllGatherAlone, true},
		{inmem.Faults{RotatedGather: true}, coll.Decomposed, false}, // every shard is the same full sum
		{inmem.Faults{RotatedGather: true}, coll.ReduceScatterAlone, false},
		{inmem.Faults{RotatedGather: true}, coll.Direct, false},
		{inmem.Faults{SumAsMax: true}, coll.ReduceScatterAlone, true},
		{inmem.Faults{SumAsMax: true}, coll.Direct, true},
		{inmem.Faults{SumAsMax: true}, coll.AllGatherAlone, false},
		{inmem.Faults{DropLastRank: true}, coll.Decomposed, true},
	} {
		name := fmt.Sprintf("%+v %s", c.fault, c.mode)
		errs := inmem.Launch(world, c.fault, func(be coll.Backend, comm coll.Comm) error {
			_, err := phases.RunTiming(be, comm, everyMode(c.mode), nil, nil)
			return err
		})
		for rank, err := range errs {
			var ce *phases.CheckError
			switch {
			case !c.caught && err != nil:
				t.Errorf("%s: rank %d: %v", name, rank, err)
			case c.caught && (!errors.As(err, &ce) || !strings.Contains(ce.What, string(c.mode)+" output")):
				t.Errorf("%s: rank %d: %v, want the %s output's check to fail", name, rank, err, c.mode)
			}
		}
	}
}

// The records' derived facts: bus factors sum the collectives', and the
// footprint is every buffer out of place, one full buffer in place.
func TestTimedModeFacts(t *testing.T) {
	const w, n = 4, 1 << 20
	for _, c := range []struct {
		mode    coll.Mode
		bus     float64
		out, in int64
		dtype   coll.DType
	}{
		{coll.Direct, 1.5, 2 * n, n, coll.Float32},
		{coll.Decomposed, 1.5, 2*n + n/w, n, coll.Float32},
		{coll.ReduceScatterAlone, 0.75, n + n/w, n, coll.Float32},
		{coll.AllGatherAlone, 0.75, n/w + n, n, coll.Int64},
	} {
		m, ok := coll.ModeOf(c.mode)
		if !ok {
			t.Fatalf("%s has no record", c.mode)
		}
		if got := m.BusFactor(coll.Layout{World: w}); got != c.bus {
			t.Errorf("%s: bus factor %v, want %v", c.mode, got, c.bus)
		}
		if got := m.Footprint(coll.Case{SizeBytes: n, DType: c.dtype, Placement: coll.OutOfPlace}, coll.Layout{World: w}); got != c.out {
			t.Errorf("%s: out-of-place footprint %d, want %d", c.mode, got, c.out)
		}
		if got := m.Footprint(coll.Case{SizeBytes: n, DType: c.dtype, Placement: coll.InPlace}, coll.Layout{World: w}); got != c.in {
			t.Errorf("%s: in-place footprint %d, want %d", c.mode, got, c.in)
		}
	}
}
