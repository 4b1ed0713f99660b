package phases_test

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"rsag/coll"
	"rsag/internal/testkit/inmem"
	"rsag/phases"
)

// smallSweep has every placement and method, integer and float dtypes, at
// sizes that divide into equal shards of 8-byte elements on 2, 3 and 4 ranks.
func smallSweep(world int) []coll.Sweep {
	runs := []coll.Sweep{{
		Name: "small", SizesBytes: []int64{1536, 6144},
		DTypes: []coll.DType{coll.Float32, coll.Int64}, Ops: []coll.Op{coll.Sum, coll.Prod, coll.Max, coll.Min},
		Placements: coll.Placements, Methods: coll.Methods, Batch: 3, Warmups: 1, Cycles: 2,
	}}
	if world&(world-1) == 0 {
		// Avg is exact on a power of two of ranks only (CheckExact).
		runs = append(runs, coll.Sweep{
			Name: "halves", SizesBytes: []int64{1536}, DTypes: []coll.DType{coll.Float16, coll.BFloat16, coll.Float64},
			Ops: []coll.Op{coll.Sum, coll.Avg}, Placements: coll.Placements, Methods: []coll.Method{coll.PerOp},
			Batch: 1, Cycles: 1,
		})
	}
	return runs
}

// cases is the number of cases of r: one per size, dtype, op, placement
// and method.
func cases(r coll.Sweep) int {
	return len(r.SizesBytes) * len(r.DTypes) * len(r.Ops) * len(r.Placements) * len(r.Methods)
}

func sweepSamples(runs []coll.Sweep) int {
	n := 0
	for _, r := range runs {
		n += cases(r) * r.Cycles * len(coll.DefaultModes)
	}
	return n
}

func TestTimingChecksPass(t *testing.T) {
	for _, world := range []int{2, 3, 4} {
		runs := smallSweep(world)
		samples := make([][]phases.TimingSample, world)
		var progress []string
		errs := inmem.Launch(world, inmem.Faults{}, func(be coll.Backend, comm coll.Comm) error {
			report := func(string) {}
			if be.Rank() == 0 {
				report = func(s string) { progress = append(progress, s) }
			}
			for _, r := range runs {
				for _, d := range r.DTypes {
					for _, o := range r.Ops {
						if err := coll.CheckExact(d, o, world); err != nil {
							return err
						}
					}
				}
			}
			if err := phases.CheckSupport(be, runs, nil); err != nil {
				return err
			}
			s, err := phases.RunTiming(be, comm, runs, nil, report)
			samples[be.Rank()] = s
			return err
		})
		noErrors(t, errs)
		for rank, s := range samples {
			if len(s) != sweepSamples(runs) {
				t.Errorf("%d ranks, rank %d: %d samples, want %d", world, rank, len(s), sweepSamples(runs))
			}
			for _, x := range s {
				batch := 3 // the only run with other methods than per-op
				if x.Method == coll.PerOp {
					batch = 1
				}
				if !x.Correct || !(x.DurationUS > 0) || x.Batch != batch {
					t.Fatalf("%d ranks, rank %d: sample %+v", world, rank, x)
				}
			}
		}
		// One progress line per case, on the rank that asked for them;
		// past 32 cases, one per eighth of them, numbered, the last one too.
		total := 0
		for _, r := range runs {
			total += cases(r)
		}
		want := total
		if total > 32 {
			want = 8
		}
		if len(progress) != want || total > 32 && !strings.HasPrefix(progress[len(progress)-1], fmt.Sprintf("[%d/%d] timing ", total, total)) {
			t.Errorf("%d ranks: %d progress lines (last %q), want %d", world, len(progress), progress[len(progress)-1], want)
		}
	}
}

// TestTimingFaults: a reduction that is wrong fails the run on every rank
// with a CheckError naming the first case, whose samples are marked wrong.
func TestTimingFaults(t *testing.T) {
	const world = 3
	runs := smallSweep(world)
	for name, faults := range map[string]inmem.Faults{
		"max for sum":    {SumAsMax: true},
		"dropped rank":   {DropLastRank: true},
		"both, reversed": {SumAsMax: true, ReversedReduceScatter: true},
	} {
		samples := make([][]phases.TimingSample, world)
		errs := inmem.Launch(world, faults, func(be coll.Backend, comm coll.Comm) error {
			s, err := phases.RunTiming(be, comm, runs, nil, nil)
			samples[be.Rank()] = s
			return err
		})
		for rank, err := range errs {
			var ce *phases.CheckError
			if !errors.As(err, &ce) {
				t.Fatalf("%s: rank %d: %v, want a *phases.CheckError", name, rank, err)
			}
			if ce.Phase != "timing" || !slices.Equal(ce.Ranks, []int{0, 1, 2}) {
				t.Errorf("%s: rank %d: %+v", name, rank, ce)
			}
			// The first case: the first size, dtype, op, placement and method.
			for _, want := range []string{"small", "1536", "float32", "sum", "out-of-place", "per-op", "element 0"} {
				if !strings.Contains(ce.What, want) {
					t.Errorf("%s: rank %d: %q does not name %q", name, rank, ce.What, want)
				}
			}
			s := samples[rank]
			if len(s) != runs[0].Cycles*len(coll.DefaultModes) || slices.ContainsFunc(s, func(x phases.TimingSample) bool { return x.Correct }) {
				t.Errorf("%s: rank %d: samples %+v, want the first case's, all wrong", name, rank, s)
			}
		}
		t.Logf("%s: %v", name, errs[0])
	}
}

// TestTimingGraphNeedsCapture: the graph method refuses a backend that
// cannot capture, naming the method and the backend, before any collective.
func TestTimingGraphNeedsCapture(t *testing.T) {
	runs := []coll.Sweep{{Name: "g", SizesBytes: []int64{64}, DTypes: []coll.DType{coll.Float32},
		Ops: []coll.Op{coll.Sum}, Placements: []coll.Placement{coll.OutOfPlace},
		Methods: []coll.Method{coll.GraphReplay}, Batch: 2, Cycles: 1}}
	errs := inmem.Launch(2, inmem.Faults{}, func(be coll.Backend, comm coll.Comm) error {
		plain := struct{ coll.Backend }{be} // hides CaptureGraph
		if err := phases.CheckSupport(be, runs, nil); err != nil {
			return fmt.Errorf("inmem captures graphs, yet: %w", err)
		}
		err := phases.CheckSupport(plain, runs, nil)
		if err == nil || !strings.Contains(err.Error(), "graph method") || !strings.Contains(err.Error(), "inmem") {
			return fmt.Errorf("CheckSupport without capture: %v", err)
		}
		return nil
	})
	noErrors(t, errs)
}

// slowSamples is a backend whose timed samples each take at least pause
// longer.
type slowSamples struct {
	coll.Backend
	pause time.Duration
}

func (s slowSamples) Time(op func() error) (float64, error) {
	time.Sleep(s.pause)
	return s.Backend.Time(op)
}

func (s slowSamples) Unwrap() coll.Backend { return s.Backend }

// TestTimingYieldsOnEveryRankAlike: the timed loop yields to Go's
// scheduler between timed samples, never after a warm-up, as paced: here
// rank 2's samples take 3 ms (the others wait for it in each collective),
// more than half the pace's slice, so every rank yields after every timed
// sample. (That the ranks agree on the pace is TestAgreePace's.)
func TestTimingYieldsOnEveryRankAlike(t *testing.T) {
	var yields atomic.Int64
	defer phases.SetYield(func() { yields.Add(1) })()
	sw := []coll.Sweep{{Name: "paced", SizesBytes: []int64{1536}, DTypes: []coll.DType{coll.Float32},
		Ops: []coll.Op{coll.Sum}, Placements: []coll.Placement{coll.OutOfPlace}, Methods: []coll.Method{coll.Batched},
		Batch: 2, Warmups: 2, Cycles: 4}}
	const world = 3
	errs := inmem.Launch(world, inmem.Faults{}, func(be coll.Backend, comm coll.Comm) error {
		if be.Rank() == 2 {
			be = slowSamples{be, 3 * time.Millisecond}
		}
		_, err := phases.RunTiming(be, comm, sw, nil, nil)
		return err
	})
	noErrors(t, errs)
	if want := world * sw[0].Cycles * len(coll.DefaultModes); yields.Load() != int64(want) {
		t.Errorf("%d yields, want %d: one per timed sample of each mode on each of %d ranks", yields.Load(), want, world)
	}
}

// TestTheTimedLoopHoldsNothingTheCollectorScans: the timed loop's records
// of a case are allocated before its first sample, for every cycle, and
// hold no pointers, so the garbage collector has nothing of them to scan.
// Rows of a million cycles allocated up front (a TimingSample holds
// strings) would be 320 MB a rank that every collection scans, faulting in
// pages the loop never touched: a run of 20 million cycles spent its
// processors there. Each rank's backend fails its third sample, after a
// collection, to end the case early; the heap the collector could scan
// (the process's: both ranks') is read then.
func TestTheTimedLoopHoldsNothingTheCollectorScans(t *testing.T) {
	const cycles = 1_000_000
	sw := []coll.Sweep{{Name: "long", SizesBytes: []int64{1536}, DTypes: []coll.DType{coll.Float32},
		Ops: []coll.Op{coll.Sum}, Placements: []coll.Placement{coll.OutOfPlace}, Methods: []coll.Method{coll.PerOp},
		Batch: 1, Cycles: cycles}}
	scannable := make([]uint64, 2)
	errs := inmem.Launch(2, inmem.Faults{}, func(be coll.Backend, comm coll.Comm) error {
		_, err := phases.RunTiming(&stopsAtSample{Backend: be, at: 3, scannable: &scannable[be.Rank()]}, comm, sw, nil, nil)
		return err
	})
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "planted stop") {
			t.Fatalf("rank %d: %v, want the planted stop", r, err)
		}
	}
	rows := uint64(cycles * len(coll.DefaultModes) * int(unsafe.Sizeof(phases.TimingSample{})))
	for r, b := range scannable {
		if b > rows/8 {
			t.Errorf("at rank %d's third sample of %d cycles, the process (both ranks) had %d MB of heap to scan: the loop's records are scanned (a rank's rows of every cycle would be %d MB)",
				r, cycles, b>>20, rows>>20)
		}
	}
}

// stopsAtSample is a backend whose at-th timed sample collects the
// garbage, reads how much of the heap the collector could scan, and fails.
type stopsAtSample struct {
	coll.Backend
	at, taken int
	scannable *uint64
}

func (s *stopsAtSample) Time(op func() error) (float64, error) {
	if s.taken++; s.taken < s.at {
		return s.Backend.Time(op)
	}
	runtime.GC()
	m := []metrics.Sample{{Name: "/gc/scan/heap:bytes"}}
	metrics.Read(m)
	*s.scannable = m[0].Value.Uint64()
	return 0, errors.New("planted stop")
}

func (s *stopsAtSample) Unwrap() coll.Backend { return s.Backend }

// The per-op loop's records come a chunk at a time, not for every cycle
// before the first sample: up front, 50 million cycles were 4 GB a rank,
// which Go clears first where it reuses freed memory (seconds before the
// first sample). With 10 million cycles, what both ranks have allocated
// by their third sample must be far below one rank's records of every
// cycle (800 MB).
func TestTheTimedLoopAllocatesItsRecordsAsItGoes(t *testing.T) {
	const cycles = 10_000_000
	sw := []coll.Sweep{{Name: "long", SizesBytes: []int64{1536}, DTypes: []coll.DType{coll.Float32},
		Ops: []coll.Op{coll.Sum}, Placements: []coll.Placement{coll.OutOfPlace}, Methods: []coll.Method{coll.PerOp},
		Batch: 1, Cycles: cycles}}
	allocs := func() uint64 {
		m := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
		metrics.Read(m)
		return m[0].Value.Uint64()
	}
	before := allocs()
	third := make([]uint64, 2)
	errs := inmem.Launch(2, inmem.Faults{}, func(be coll.Backend, comm coll.Comm) error {
		at := &allocsAtSample{Backend: be, at: 3, read: allocs, got: &third[be.Rank()]}
		_, err := phases.RunTiming(at, comm, sw, nil, nil)
		return err
	})
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "planted stop") {
			t.Fatalf("rank %d: %v, want the planted stop", r, err)
		}
	}
	upFront := uint64(cycles * len(coll.DefaultModes) * 40)
	for r, a := range third {
		if got := a - before; got > upFront/8 {
			t.Errorf("by rank %d's third sample of %d cycles, %d MB allocated: the records of every cycle were allocated up front (%d MB a rank)",
				r, cycles, got>>20, upFront>>20)
		}
	}
}

// allocsAtSample is a backend whose at-th timed sample reads how much the
// process has allocated, and fails.
type allocsAtSample struct {
	coll.Backend
	at, taken int
	read      func() uint64
	got       *uint64
}

func (s *allocsAtSample) Time(op func() error) (float64, error) {
	if s.taken++; s.taken < s.at {
		return s.Backend.Time(op)
	}
	*s.got = s.read()
	return 0, errors.New("planted stop")
}

func (s *allocsAtSample) Unwrap() coll.Backend { return s.Backend }

// A case longer than a chunk of records keeps every sample, in the order
// taken: cycle by cycle, the modes taking turns going first.
func TestTheTimedLoopKeepsEverySampleAcrossChunks(t *testing.T) {
	defer phases.SetRecordChunk(3)()
	const cycles = 10
	sw := []coll.Sweep{{Name: "chunks", SizesBytes: []int64{1536}, DTypes: []coll.DType{coll.Float32},
		Ops: []coll.Op{coll.Sum}, Placements: []coll.Placement{coll.OutOfPlace}, Methods: []coll.Method{coll.PerOp},
		Batch: 1, Warmups: 1, Cycles: cycles}}
	samples := make([][]phases.TimingSample, 2)
	errs := inmem.Launch(2, inmem.Faults{}, func(be coll.Backend, comm coll.Comm) error {
		s, err := phases.RunTiming(be, comm, sw, nil, nil)
		samples[be.Rank()] = s
		return err
	})
	noErrors(t, errs)
	modes := coll.DefaultModes
	for rank, s := range samples {
		if len(s) != cycles*len(modes) {
			t.Fatalf("rank %d: %d samples, want %d", rank, len(s), cycles*len(modes))
		}
		for i, x := range s {
			cycle, turn := i/len(modes), i%len(modes)
			want := modes[(turn+cycle)%len(modes)]
			if x.Cycle != cycle || x.Mode != want || !x.Correct || !(x.DurationUS > 0) {
				t.Errorf("rank %d: sample %d is cycle %d of %s (correct %v, %v us), want cycle %d of %s, correct",
					rank, i, x.Cycle, x.Mode, x.Correct, x.DurationUS, cycle, want)
			}
		}
	}
}
