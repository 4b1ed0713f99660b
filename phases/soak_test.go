package phases_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"rsag/coll"
	"rsag/internal/testkit/inmem"
	"rsag/phases"
)

// soakSpec draws from every dtype the in-memory backend reduces exactly
// on world ranks, sums, maxima, minima and products, both placements, and
// misaligned offsets, at odd sizes up to 12 KiB.
func soakSpec(world, iterations int) phases.SoakSpec {
	s := phases.SoakSpec{Iterations: iterations, MinBytes: 1, MaxBytes: 12 << 10, Seed: 7, FailAfter: 1,
		Ops:        []coll.Op{coll.Sum, coll.Max, coll.Min, coll.Prod},
		Placements: coll.Placements, Offsets: []int64{0, 8, 64, 4096}}
	for _, d := range coll.AllDTypes {
		ok := true
		for _, o := range s.Ops {
			ok = ok && coll.CheckExact(d, o, world) == nil
		}
		if ok {
			s.DTypes = append(s.DTypes, d)
		}
	}
	return s
}

// soakOn runs the soak phase on world ranks with faults and groups.
func soakOn(world int, faults inmem.Faults, spec phases.SoakSpec, g *phases.Groups) ([]phases.SoakResult, []error) {
	res := make([]phases.SoakResult, world)
	errs := inmem.Launch(world, faults, func(be coll.Backend, comm coll.Comm) error {
		if err := phases.CheckSoak(be, spec, g); err != nil {
			return err
		}
		r, err := phases.RunSoak(be, comm, spec, g, nil, nil)
		res[be.Rank()] = r
		return err
	})
	return res, errs
}

// The draws are a pure function of the seed and the iteration, sizes a
// whole number of elements per rank (odd ones too) within the range.
func TestSoakDraws(t *testing.T) {
	spec := soakSpec(3, 0)
	seen := map[string]bool{}
	odd := 0
	for i := range 500 {
		c := spec.Draw(i, 3)
		if c != spec.Draw(i, 3) {
			t.Fatalf("iteration %d drew %v, then %v", i, c, spec.Draw(i, 3))
		}
		unit := int64(3 * c.DType.Size())
		if c.SizeBytes%unit != 0 || c.SizeBytes < unit || c.SizeBytes > max(spec.MaxBytes, unit) {
			t.Errorf("iteration %d: %d bytes of %s on 3 ranks", i, c.SizeBytes, c.DType)
		}
		if (c.SizeBytes/unit)%2 == 1 {
			odd++
		}
		seen[fmt.Sprint(c.DType, c.Op, c.Placement, c.Offset)] = true
	}
	if odd < 100 || len(seen) < 50 {
		t.Errorf("500 draws: %d with an odd count per rank, %d distinct kinds", odd, len(seen))
	}
	other := spec
	other.Seed++
	if spec.Draw(0, 3) == other.Draw(0, 3) && spec.Draw(1, 3) == other.Draw(1, 3) {
		t.Error("another seed drew the same cases")
	}
}

// With no fault, every output of every step of every mode holds on 2, 3
// and 4 ranks, and on 4 ranks in 2 groups with the hierarchical form.
func TestSoakPasses(t *testing.T) {
	for _, world := range []int{2, 3, 4} {
		res, errs := soakOn(world, inmem.Faults{}, soakSpec(world, 60), nil)
		noErrors(t, errs)
		if r := res[0]; len(r.Iterations) != 60 || r.Failed != 0 || r.BytesMoved <= 0 {
			t.Errorf("%d ranks: %d iterations, %d failed, %d bytes", world, len(r.Iterations), r.Failed, r.BytesMoved)
		}
	}
	g, err := phases.NewGroups([]string{"a", "a", "b", "b"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, errs := soakOn(4, inmem.Faults{}, soakSpec(4, 30), g)
	noErrors(t, errs)
}

// Each fault is caught at the iteration it strikes, and the verdict, the
// same on every rank, names the suspect rank, its host and the step, with
// the evidence.
func TestSoakLocalizes(t *testing.T) {
	spec := soakSpec(4, 20)
	spec.DTypes, spec.Ops, spec.MinBytes = []coll.DType{coll.Int32}, []coll.Op{coll.Sum}, 1<<10
	at := func(n int) func(int) bool { return func(call int) bool { return call == n } }
	for _, c := range []struct {
		name     string
		flip     inmem.Flip
		suspects []int
		want     []string
	}{
		{"AllReduce on rank 1", inmem.Flip{Collective: coll.AllReduce.Name, Rank: 1, Element: 5, Calls: at(3)}, []int{1},
			[]string{"iteration 2 (", "AllReduce (direct) wrong, ReduceScatter + AllGather right, on the same input", "suspect rank 1 on inmem",
				"rank 1 on inmem's AllReduce (direct) output was wrong in chunk 0 while every other rank's was right: a reduction fault on rank 1 on inmem",
				"rank 1 (inmem) AllReduce (direct): 1 of ", "the first is element 5 (byte 20 of the output"}},
		{"ReduceScatter shard on rank 2", inmem.Flip{Collective: coll.ReduceScatter.Name, Rank: 2, Element: 1, Calls: at(2)}, []int{2},
			[]string{"iteration 1 (", "ReduceScatter + AllGather wrong, AllReduce (direct) right", "suspect rank 2 on inmem",
				"rank 2 on inmem's ReduceScatter (decomposed, step 1 of 2) output was wrong in chunk 2 while every other rank's was right: a reduction fault on rank 2 on inmem",
				"AllGather (decomposed, step 2 of 2) then was wrong on every rank, in chunk 2", "the first is element 1 "}},
		{"AllGather from rank 3", inmem.Flip{Collective: coll.AllGather.Name, Rank: 3, Element: 0, Send: true, Calls: at(1)}, []int{3},
			[]string{"iteration 0 (", "ReduceScatter + AllGather wrong, AllReduce (direct) right", "suspect rank 3 on inmem",
				"in AllGather (decomposed, step 2 of 2) every rank's output was wrong in chunk 3, the part rank 3 on inmem holds",
				"a transfer from that chunk's owner"}},
		{"AllGather into rank 0", inmem.Flip{Collective: coll.AllGather.Name, Rank: 0, Element: 7, Chunk: 2, Calls: at(4)}, []int{0},
			[]string{"iteration 3 (", "rank 0 on inmem's AllGather (decomposed, step 2 of 2) output was wrong in chunk 2 while every other rank's was right: rank 0 on inmem received it wrong"}},
		{"AllGather's own chunk on rank 0", inmem.Flip{Collective: coll.AllGather.Name, Rank: 0, Element: 3, Calls: at(2)}, []int{0},
			[]string{"iteration 1 (", "rank 0 on inmem's AllGather (decomposed, step 2 of 2) output was wrong in chunk 0 while every other rank's was right: rank 0 on inmem held it right before this step and not after it"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			flip := c.flip
			res, errs := soakOn(4, inmem.Faults{Flip: &flip}, spec, nil)
			for rank, err := range errs {
				var ce *phases.CheckError
				if !errors.As(err, &ce) || ce.Phase != "soak" || !slices.Equal(ce.Ranks, c.suspects) {
					t.Fatalf("rank %d: %v, want a soak CheckError naming rank(s) %v", rank, err, c.suspects)
				}
				if err.Error() != errs[0].Error() {
					t.Errorf("rank %d said %q, rank 0 %q", rank, err, errs[0])
				}
			}
			for _, w := range c.want {
				if !strings.Contains(errs[0].Error(), w) {
					t.Errorf("the verdict does not say %q:\n%s", w, errs[0])
				}
			}
			// fail_after = 1: it stopped at the failed iteration.
			r := res[0]
			if last := r.Iterations[len(r.Iterations)-1]; r.Failed != 1 || last.Verdict == "" || last.First == nil || r.Verdict != last.Verdict {
				t.Errorf("result %+v, want one failed iteration, the last", r)
			}
			t.Logf("%v", errs[0])
		})
	}
}

// With fail_after = 0 the soak runs to its end and counts: a flip in
// every 4th AllReduce of rank 1 fails exactly a quarter of the iterations.
func TestSoakCountsTheRate(t *testing.T) {
	spec := soakSpec(2, 40)
	spec.FailAfter = 0
	flip := inmem.Flip{Collective: coll.AllReduce.Name, Rank: 1, Calls: func(n int) bool { return n%4 == 0 }}
	res, errs := soakOn(2, inmem.Faults{Flip: &flip}, spec, nil)
	var ce *phases.CheckError
	if !errors.As(errs[0], &ce) || !strings.Contains(ce.What, "(10 of 40 iterations found a wrong element)") {
		t.Errorf("%v, want 10 of 40 failed", errs[0])
	}
	if r := res[0]; len(r.Iterations) != 40 || r.Failed != 10 || len(r.Faults) != 10 {
		t.Errorf("%d iterations, %d failed, %d faults; want 40, 10, 10", len(r.Iterations), r.Failed, len(r.Faults))
	}
}

// In the hierarchy, a rank's shard of the ReduceScatter within its group
// is the hierarchical form's first wrong step, on that rank alone; a
// reduction wrong everywhere points at no one rank.
func TestSoakLocalizesInTheHierarchy(t *testing.T) {
	g, err := phases.NewGroups([]string{"a", "a", "b", "b"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	spec := soakSpec(4, 5)
	spec.DTypes, spec.Ops, spec.Placements = []coll.DType{coll.Float32}, []coll.Op{coll.Sum}, []coll.Placement{coll.OutOfPlace}
	// Iteration 0's ReduceScatters on rank 3: the decomposed form's, then
	// the hierarchical form's, in its group.
	flip := inmem.Flip{Collective: coll.ReduceScatter.Name, Rank: 3, Calls: func(n int) bool { return n == 2 }}
	_, errs := soakOn(4, inmem.Faults{Flip: &flip}, spec, g)
	for _, w := range []string{"hierarchical RS + AR + AG wrong, AllReduce (direct) and ReduceScatter + AllGather right",
		"suspect rank 3 on inmem", "rank 3 on inmem's ReduceScatter (hierarchical, step 1 of 3) output was wrong in chunk 2"} {
		if errs[0] == nil || !strings.Contains(errs[0].Error(), w) {
			t.Errorf("%v\ndoes not say %q", errs[0], w)
		}
	}
	_, errs = soakOn(4, inmem.Faults{DropLastRank: true}, spec, g)
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "no single rank stands out") {
		t.Errorf("a reduction wrong everywhere: %v", errs[0])
	}
}

// On a width where a pair's reduction is exact only for inputs all 1 (int8
// products on 16 ranks), the soak skips that pair, says so, and draws the
// others; int8 sums, whose inputs shrink to 1..7, are still drawn and
// hold. A spec of such pairs alone is refused before any collective.
func TestSoakSkipsWhatItCannotCheckAtWidth(t *testing.T) {
	spec := phases.SoakSpec{Iterations: 40, MinBytes: 16, MaxBytes: 4 << 10, Seed: 3, FailAfter: 1,
		DTypes: []coll.DType{coll.Int8, coll.Int32}, Ops: []coll.Op{coll.Sum, coll.Prod},
		Placements: []coll.Placement{coll.OutOfPlace}}
	drawn, skipped := spec.Pairs(16)
	if fmt.Sprint(drawn) != "[int8 sum int32 sum int32 prod]" || fmt.Sprint(skipped) != "[int8 prod]" {
		t.Fatalf("on 16 ranks: drawn %v, skipped %v; want int8 prod alone skipped", drawn, skipped)
	}
	if _, skipped := spec.Pairs(2); len(skipped) != 0 {
		t.Errorf("on 2 ranks: skipped %v, want none", skipped)
	}
	kinds := map[string]bool{}
	for i := range 200 {
		c := spec.Draw(i, 16)
		kinds[fmt.Sprint(c.DType, " ", c.Op)] = true
	}
	if kinds["int8 prod"] || !kinds["int8 sum"] || !kinds["int32 prod"] {
		t.Errorf("200 draws on 16 ranks drew %v", kinds)
	}
	res, errs := soakOn(16, inmem.Faults{}, spec, nil)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if res[0].Failed != 0 || len(res[0].Iterations) != 40 || fmt.Sprint(res[0].Skipped) != "[int8 prod]" {
		t.Errorf("16 ranks: %d of %d iterations failed, skipped %v", res[0].Failed, len(res[0].Iterations), res[0].Skipped)
	}
	only := spec
	only.DTypes, only.Ops = []coll.DType{coll.Int8}, []coll.Op{coll.Prod}
	_, errs = soakOn(16, inmem.Faults{}, only, nil)
	if err := errors.Join(errs...); err == nil || !strings.Contains(err.Error(), "no dtype and op of soak.dtypes and soak.ops can be checked on 16 ranks (int8 prod: ") {
		t.Errorf("int8 prod alone on 16 ranks: %v; want refused", err)
	}
}

// A soak by time says its closing line once: the iteration that ends it
// says no progress line of its own (with duration_s the progress period,
// both fell on the same iteration and the line was printed twice).
func TestSoakSaysItsLastLineOnce(t *testing.T) {
	spec := soakSpec(2, 0)
	spec.Duration, spec.FailAfter = 5*time.Second, 0
	lines := make([][]string, 2)
	errs := inmem.Launch(2, inmem.Faults{}, func(be coll.Backend, comm coll.Comm) error {
		_, err := phases.RunSoak(be, comm, spec, nil, func(l string) { lines[be.Rank()] = append(lines[be.Rank()], l) }, nil)
		return err
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	var said []string
	for _, l := range lines[0] {
		if strings.HasPrefix(l, "soak: ") && strings.Contains(l, " iterations in ") {
			said = append(said, l)
		}
	}
	if len(said) != 1 {
		t.Errorf("a 5 s soak said its progress %d times, want once (the closing line): %q", len(said), said)
	}
}

// inStep is a watch that knows whether a step is entered and not left.
type inStep struct{ in bool }

func (s *inStep) Arm(op string, bytes int64) { s.in = true }
func (s *inStep) Kick()                      {}
func (s *inStep) ArmSample(op *string, bytes int64, context *string, round int) {
	s.in = true
}
func (s *inStep) Leave() { s.in = false }
func (s *inStep) ArmSamples(op *string, bytes int64, context *string, round int, progress func() (int64, int64)) {
	s.in = true
}

// syncSpy counts the device waits made in a step and out of one.
type syncSpy struct {
	coll.Backend
	watch    *inStep
	in, outs int
}

// Prepare runs the collective past the watch, as NCCL's prepared calls do:
// the step the soak arms is the only one.
func (b *syncSpy) Prepare(c coll.Collective, send, recv coll.Buffer, op coll.Op) (func() error, error) {
	return func() error { return b.Backend.Run(c, send, recv, op) }, nil
}

func (b *syncSpy) Synchronize() error {
	if b.watch.in {
		b.in++
	} else {
		b.outs++
	}
	return b.Backend.Synchronize()
}

// A device's collective is only queued when its call returns; the soak
// waits for it (Synchronize) inside the collective's step, so that a rank's
// heartbeat says it waits in the collective, and a rank stopped inside NCCL
// is named early by the others' (seen on one shared H100: the others had
// left their step, and only the watchdog named it).
func TestTheSoakWaitsForTheDeviceInsideTheStep(t *testing.T) {
	spies := make([]*syncSpy, 2)
	errs := inmem.Launch(2, inmem.Faults{}, func(be coll.Backend, comm coll.Comm) error {
		spy := &syncSpy{Backend: be, watch: &inStep{}}
		spies[be.Rank()] = spy
		w := phases.Watch(spy, spy.watch)
		if err := phases.CheckSoak(w, soakSpec(2, 5), nil); err != nil {
			return err
		}
		_, err := phases.RunSoak(w, comm, soakSpec(2, 5), nil, nil, nil)
		return err
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for r, s := range spies {
		if s.in == 0 || s.outs != 0 {
			t.Errorf("rank %d waited for the device %d times inside a step and %d outside, want every wait inside", r, s.in, s.outs)
		}
	}
}
