package phases_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"rsag/coll"
	"rsag/internal/testkit/inmem"
	"rsag/phases"
)

// memoryDeltas are the seed's steady and peak deltas of each strategy for
// payload n and shard s = n/W, written out here rather than read from the
// phase, so that a wrong analytic formula fails too.
func memoryDeltas(n, s int64) map[string][2]int64 {
	return map[string][2]int64{
		"allreduce-full":           {n, n},
		"reduce-scatter-shard":     {s, n + s},
		"rs-ag-naive-lifetime":     {n, 2*n + s},
		"rs-ag-optimized-lifetime": {n, n + s},
		"rs-ag-in-place":           {n, n},
	}
}

func runMemory(world int, faults inmem.Faults, payload int64) ([][]phases.MemoryResult, []error) {
	results := make([][]phases.MemoryResult, world)
	errs := inmem.Launch(world, faults, func(be coll.Backend, comm coll.Comm) error {
		r, err := phases.RunMemory(be, comm, phases.MemoryRun{PayloadBytes: payload, Modes: phases.DefaultMemoryModes()}, nil)
		results[be.Rank()] = r
		return err
	})
	return results, errs
}

// TestMemoryMatchesAnalytic: the backend counts exactly what is allocated,
// so every strategy's measured deltas are its analytic ones, to the byte.
func TestMemoryMatchesAnalytic(t *testing.T) {
	const payload = 6144
	for _, world := range []int{2, 3, 4} {
		results, errs := runMemory(world, inmem.Faults{}, payload)
		noErrors(t, errs)
		want := memoryDeltas(payload, payload/int64(world))
		for rank, rs := range results {
			if len(rs) != len(want) {
				t.Fatalf("%d ranks, rank %d: %d results, want %d", world, rank, len(rs), len(want))
			}
			for _, r := range rs {
				w, ok := want[r.Mode]
				if !ok || !r.Correct || r.PayloadBytes != payload || r.BaselineBytes != 0 ||
					r.SteadyDeltaBytes != w[0] || r.PeakDeltaBytes != w[1] ||
					r.AnalyticSteady != w[0] || r.AnalyticPeak != w[1] ||
					r.DeviceSteadyDelta != -1 || r.DevicePeakDelta != -1 {
					t.Errorf("%d ranks, rank %d: %+v, want steady %d, peak %d", world, rank, r, w[0], w[1])
				}
			}
		}
	}
}

// TestMemoryFaults: a wrong reduction fails the first strategy's check on
// every rank.
func TestMemoryFaults(t *testing.T) {
	for name, faults := range map[string]inmem.Faults{"max for sum": {SumAsMax: true}, "dropped rank": {DropLastRank: true}} {
		results, errs := runMemory(4, faults, 4096)
		for rank, err := range errs {
			var ce *phases.CheckError
			if !errors.As(err, &ce) || ce.Phase != "memory" || !slices.Equal(ce.Ranks, []int{0, 1, 2, 3}) ||
				!strings.Contains(ce.What, "allreduce-full") || !strings.Contains(ce.What, "element 0") {
				t.Errorf("%s: rank %d: %v, want a memory CheckError for allreduce-full on every rank", name, rank, err)
			}
			if rs := results[rank]; len(rs) != 1 || rs[0].Correct {
				t.Errorf("%s: rank %d: results %+v", name, rank, rs)
			}
		}
	}
}

// TestMemoryCannotSeeShardOrder: the memory phase fills every rank with
// one constant, which a rotated AllGather leaves unchanged; guarding the
// shard order is the contracts' job (TestContractsRotatedGather).
func TestMemoryCannotSeeShardOrder(t *testing.T) {
	_, errs := runMemory(3, inmem.Faults{RotatedGather: true}, 6144)
	noErrors(t, errs)
}
