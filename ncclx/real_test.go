package ncclx

import (
	"os"
	"runtime"
	"testing"

	"rsag/coll"
	"rsag/phases"
)

// oneRank is the coll.Comm of a world of one rank.
type oneRank struct{}

func (oneRank) Rank() int      { return 0 }
func (oneRank) Size() int      { return 1 }
func (oneRank) Barrier() error { return nil }
func (oneRank) AllTrue(ok bool) (bool, []int, error) {
	if ok {
		return true, nil, nil
	}
	return false, []int{0}, nil
}
func (oneRank) MaxFloat64s([]float64) error { return nil }

// TestRealNCCLOneRank runs on a GPU machine only (RSAG_REAL_GPU=1; CI and
// this repository's machines have no GPU): against the real libcuda and
// libnccl, one rank, it proves what the fakes cannot, that the real NCCL
// takes our hand-written ncclConfig_t for every CTA policy, registers
// buffers and symmetric windows, splits, and that every variant's outputs
// are right, through the timing phase's own checks.
func TestRealNCCLOneRank(t *testing.T) {
	if os.Getenv("RSAG_REAL_GPU") != "1" {
		t.Skip("RSAG_REAL_GPU=1 runs this against a real GPU and NCCL")
	}
	// CUDA's current context is per thread, as in rsag's main.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b, err := New(fakeBoot{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	}()
	t.Logf("%+v", b.Info())
	var run coll.Sweep
	for _, v := range allVariants() {
		if err := b.SupportsVariant(v); err != nil {
			t.Errorf("%s refused: %v", v, err)
			continue
		}
		run.Buffers = appendOnce(run.Buffers, v.Buffers)
		run.CTAPolicies = appendOnce(run.CTAPolicies, v.CTAPolicy)
	}
	run.Name, run.SizesBytes = "real", []int64{4 << 10, 1 << 20, 64 << 20}
	run.DTypes, run.Ops = []coll.DType{coll.Float32, coll.BFloat16}, []coll.Op{coll.Sum}
	run.Placements, run.Methods = coll.Placements, coll.Methods
	run.Modes = []coll.Mode{coll.Direct, coll.Decomposed, coll.ReduceScatterAlone, coll.AllGatherAlone}
	run.Batch, run.Warmups, run.Cycles = 20, 2, 5
	samples, err := phases.RunTiming(b, oneRank{}, []coll.Sweep{run}, nil, func(line string) { t.Log(line) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d samples, every output checked", len(samples))
	g, err := b.Split(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if g.Rank() != 0 || g.WorldSize() != 1 {
		t.Errorf("split: rank %d of %d", g.Rank(), g.WorldSize())
	}
	if err := g.Close(); err != nil {
		t.Error(err)
	}
}

func appendOnce[T comparable](s []T, v T) []T {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}
