package phases_test

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"rsag/coll"
	"rsag/internal/testkit/inmem"
	"rsag/phases"
)

var floatDTypes = []coll.DType{coll.Float16, coll.BFloat16, coll.Float32, coll.Float64}

// numericsSizes divide into equal shards of every float type on 2, 3 and 4 ranks.
var numericsSizes = []int64{3 << 10, 48 << 10}

// runNumerics runs the numerics phase on world ranks and returns each
// rank's results and error.
func runNumerics(world int, faults inmem.Faults, spec phases.NumericsSpec) ([][]phases.NumericsResult, []error) {
	results := make([][]phases.NumericsResult, world)
	errs := inmem.Launch(world, faults, func(be coll.Backend, comm coll.Comm) error {
		r, err := phases.RunNumerics(be, comm, spec)
		results[be.Rank()] = r
		return err
	})
	return results, errs
}

// checkResults checks what holds of every result: its identity, and that
// its errors are within its bound.
func checkResults(t *testing.T, world int, spec phases.NumericsSpec, results [][]phases.NumericsResult) {
	t.Helper()
	for rank, rs := range results {
		if len(rs) != len(spec.DTypes)*len(spec.SizesBytes) {
			t.Fatalf("rank %d: %d results, want %d", rank, len(rs), len(spec.DTypes)*len(spec.SizesBytes))
		}
		for i, r := range rs {
			d, size := spec.DTypes[i/len(spec.SizesBytes)], spec.SizesBytes[i%len(spec.SizesBytes)]
			ft, _ := coll.FloatTypeOf(d)
			if r.Rank != rank || r.DType != d || r.SizeBytes != size || r.Elements != int(size)/d.Size() || r.UnitRoundoff != ft.UnitRoundoff {
				t.Errorf("rank %d result %d: %+v", rank, i, r)
			}
			if !r.WithinBound || r.MaxBoundRatio > 1 || r.Bound <= 0 ||
				r.MaxAbsErrorDirect > r.Bound || r.MaxAbsErrorDecomposed > r.Bound {
				t.Errorf("rank %d %s %d: not within its bound: %+v", rank, d, size, r)
			}
			if r.BitwiseEqual != (r.DifferingElements == 0) || r.BitwiseEqual != (r.MaxULP == 0) {
				t.Errorf("rank %d %s %d: bitwise equal %v with %d differing, max %d ULP", rank, d, size, r.BitwiseEqual, r.DifferingElements, r.MaxULP)
			}
		}
	}
}

// TestNumericsCorrectBackend: a backend that adds in one order on both
// paths gives the same bits on both, within the bound.
func TestNumericsCorrectBackend(t *testing.T) {
	spec := phases.NumericsSpec{DTypes: floatDTypes, SizesBytes: numericsSizes, Seed: 1}
	for _, world := range []int{2, 3, 4} {
		results, errs := runNumerics(world, inmem.Faults{}, spec)
		noErrors(t, errs)
		checkResults(t, world, spec, results)
		for _, rs := range results {
			for _, r := range rs {
				if !r.BitwiseEqual {
					t.Errorf("%d ranks: %s %d: %s", world, r.DType, r.SizeBytes, r.Verdict())
				}
				if r.DType == coll.Float64 && world == 2 && (r.MaxAbsErrorDirect != 0 || r.MaxAbsErrorDecomposed != 0) {
					// One addition, correctly rounded, is the exact sum rounded.
					t.Errorf("2 ranks: float64 errors %g, %g, want 0", r.MaxAbsErrorDirect, r.MaxAbsErrorDecomposed)
				}
			}
		}
	}
}

// TestNumericsReferenceIsExact: on 3 ranks the backend's float64 sums in
// rank order round twice, so they are off the exact sum somewhere; a
// reference summed in float64 in that same order would see no error.
func TestNumericsReferenceIsExact(t *testing.T) {
	spec := phases.NumericsSpec{DTypes: []coll.DType{coll.Float64}, SizesBytes: []int64{48 << 10}, Seed: 1}
	results, errs := runNumerics(3, inmem.Faults{}, spec)
	noErrors(t, errs)
	r := results[0][0]
	if r.MaxAbsErrorDirect == 0 || r.MaxRelErrorDirect == 0 || r.MaxAbsErrorDirect > r.Bound {
		t.Errorf("float64 on 3 ranks: %+v; want an error above 0 within the bound", r)
	}
	t.Logf("float64 on 3 ranks, %d elements: largest error %.3g (relative %.3g), bound %.3g, ratio %.3f",
		r.Elements, r.MaxAbsErrorDirect, r.MaxRelErrorDirect, r.Bound, r.MaxBoundRatio)
}

// TestNumericsReorderedSum: ReduceScatter adding in the reverse order of
// AllReduce gives different bits on 3 and 4 ranks, within the bound; on 2
// ranks a+b = b+a and the bits agree.
func TestNumericsReorderedSum(t *testing.T) {
	spec := phases.NumericsSpec{DTypes: floatDTypes, SizesBytes: numericsSizes, Seed: 1}
	for _, world := range []int{2, 3, 4} {
		results, errs := runNumerics(world, inmem.Faults{ReversedReduceScatter: true}, spec)
		noErrors(t, errs)
		checkResults(t, world, spec, results)
		for rank, rs := range results {
			for _, r := range rs {
				if world == 2 != r.BitwiseEqual {
					t.Errorf("%d ranks, rank %d, %s %d: %s", world, rank, r.DType, r.SizeBytes, r.Verdict())
				}
				if rank == 0 {
					t.Logf("%d ranks %-8s %6d B: %s; errors %.3g / %.3g, bound %.3g, ratio %.3f",
						world, r.DType, r.SizeBytes, r.Verdict(), r.MaxAbsErrorDirect, r.MaxAbsErrorDecomposed, r.Bound, r.MaxBoundRatio)
				}
			}
		}
	}
}

// TestNumericsBeyondBound: dropping a rank's input, or taking max for sum,
// is far beyond rounding, and fails the run on every rank, naming dtype,
// size and element.
func TestNumericsBeyondBound(t *testing.T) {
	const world = 3
	spec := phases.NumericsSpec{DTypes: []coll.DType{coll.Float32, coll.Float64}, SizesBytes: numericsSizes, Seed: 1}
	// Element 0 fails first: rank 2's input there is far from zero.
	ft, _ := coll.FloatTypeOf(coll.Float32)
	if x := phases.NewRNG(1, 2).Value(ft, 0); math.Abs(x) < 0.01 {
		t.Fatalf("rank 2's element 0 is %v, too small for this test", x)
	}
	for name, faults := range map[string]inmem.Faults{
		"dropped rank": {DropLastRank: true},
		"max for sum":  {SumAsMax: true},
	} {
		results, errs := runNumerics(world, faults, spec)
		for rank, err := range errs {
			var ce *phases.CheckError
			if !errors.As(err, &ce) {
				t.Fatalf("%s: rank %d: %v, want a *phases.CheckError", name, rank, err)
			}
			if ce.Phase != "numerics" || !slices.Equal(ce.Ranks, []int{0, 1, 2}) {
				t.Errorf("%s: rank %d: %+v", name, rank, ce)
			}
			for _, want := range []string{"float32", "3K", "3072 bytes", "element 0:", "AllReduce", "beyond the bound"} {
				if !strings.Contains(ce.What, want) {
					t.Errorf("%s: rank %d: %q does not name %q", name, rank, ce.What, want)
				}
			}
			// The run stopped at the first case, which is in the results.
			if rs := results[rank]; len(rs) != 1 || rs[0].WithinBound || rs[0].MaxBoundRatio <= 1 {
				t.Errorf("%s: rank %d: results %+v", name, rank, rs)
			}
		}
		t.Logf("%s: %v", name, errs[0])
	}
}

// TestNumericsChunks: filling and reading in chunks that do not divide the
// buffer gives the same results as in one piece.
func TestNumericsChunks(t *testing.T) {
	spec := phases.NumericsSpec{DTypes: floatDTypes, SizesBytes: []int64{48 << 10}, Seed: 9}
	faults := inmem.Faults{ReversedReduceScatter: true}
	whole, errs := runNumerics(3, faults, spec)
	noErrors(t, errs)
	restore := phases.SetNumericsChunk(1000)
	chunked, errs := runNumerics(3, faults, spec)
	restore()
	noErrors(t, errs)
	if fmt.Sprint(whole) != fmt.Sprint(chunked) {
		t.Errorf("in one piece:\n%v\nin chunks of 1000:\n%v", whole, chunked)
	}
}

// supportsNot is a backend that refuses one dtype, as the MPI backend
// refuses float16.
type supportsNot struct {
	coll.Backend
	d     coll.DType
	world int
}

func (s supportsNot) Supports(d coll.DType, o coll.Op) error {
	if d == s.d {
		return fmt.Errorf("the test backend cannot run collectives on %s", d)
	}
	return s.Backend.Supports(d, o)
}

func (s supportsNot) WorldSize() int {
	if s.world != 0 {
		return s.world
	}
	return s.Backend.WorldSize()
}

func TestCheckNumerics(t *testing.T) {
	cases := []struct {
		name  string
		spec  phases.NumericsSpec
		world int // overrides the backend's
		want  string
	}{
		{"integer", phases.NumericsSpec{DTypes: []coll.DType{coll.Int32}, SizesBytes: []int64{96}},
			0, "numerics: int32 is not a floating-point type"},
		{"unsupported", phases.NumericsSpec{DTypes: []coll.DType{coll.Float32, coll.Float16}, SizesBytes: []int64{96}},
			0, "numerics: float16: the test backend cannot run collectives on float16"},
		{"indivisible", phases.NumericsSpec{DTypes: []coll.DType{coll.Float64}, SizesBytes: []int64{96, 100}},
			0, "numerics: 100 bytes does not divide by 3 ranks x 8 bytes (float64) = 24: use a multiple of 24, e.g. 96 or 120"},
		{"zero size", phases.NumericsSpec{DTypes: []coll.DType{coll.Float32}, SizesBytes: []int64{0}},
			0, "numerics: 0 bytes does not divide"},
		{"empty", phases.NumericsSpec{SizesBytes: []int64{96}}, 0, "no dtypes or no sizes"},
		{"bound meaningless", phases.NumericsSpec{DTypes: []coll.DType{coll.BFloat16}, SizesBytes: []int64{1 << 20}},
			300, "bfloat16 on 300 ranks: the summation error bound needs (ranks-1) x u < 1 with u = 2^-8"},
		{"fine", phases.NumericsSpec{DTypes: floatDTypes[2:], SizesBytes: []int64{96, 48}}, 0, ""},
	}
	errs := inmem.Launch(3, inmem.Faults{}, func(be coll.Backend, comm coll.Comm) error {
		for _, c := range cases {
			err := phases.CheckNumerics(supportsNot{Backend: be, d: coll.Float16, world: c.world}, c.spec)
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				return fmt.Errorf("%s: %v, want %q", c.name, err, c.want)
			}
		}
		// RunNumerics refuses the same way, before any collective.
		if _, err := phases.RunNumerics(be, comm, cases[0].spec); err == nil || !strings.Contains(err.Error(), cases[0].want) {
			return fmt.Errorf("RunNumerics: %v", err)
		}
		return nil
	})
	noErrors(t, errs)
}

func TestNumericsFootprint(t *testing.T) {
	spec := phases.NumericsSpec{SizesBytes: []int64{4 << 10, 64 << 20, 1 << 20}}
	if got, want := phases.NumericsFootprint(4, spec), int64(3*64<<20+16<<20); got != want {
		t.Errorf("NumericsFootprint = %d, want %d", got, want)
	}
}

func TestVerdict(t *testing.T) {
	if got := (phases.NumericsResult{BitwiseEqual: true, Elements: 8}).Verdict(); got != "bitwise equal" {
		t.Errorf("Verdict = %q", got)
	}
	r := phases.NumericsResult{Elements: 1024, DifferingElements: 12, MaxULP: 2}
	if got := r.Verdict(); got != "12 of 1024 elements differ, at most 2 ULP" {
		t.Errorf("Verdict = %q", got)
	}
}

// TestExactSum checks the reference sum against math/big, rounded once to
// nearest even, on sums built to cancel and to fall on halfway cases.
func TestExactSum(t *testing.T) {
	exact := func(xs []float64) float64 {
		s := new(big.Float).SetPrec(4000)
		for _, x := range xs {
			s.Add(s, new(big.Float).SetFloat64(x))
		}
		v, _ := s.Float64()
		return v
	}
	fixed := [][]float64{
		{},
		{1e-16, 1, 1e16},        // 1e16+2: the tiny term tips the tie
		{1, 1e100, 1, -1e100},   // 2
		{1, math.Ldexp(1, -53)}, // a tie: to even, 1
		{1, math.Ldexp(1, -53), math.Ldexp(1, -106)},
		{-0.5, 0.5}, {0.1, 0.2, 0.3, -0.6},
	}
	for _, xs := range fixed {
		if got, want := phases.ExactSum(xs), exact(xs); got != want {
			t.Errorf("ExactSum(%v) = %v, want %v", xs, got, want)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		xs := make([]float64, 1+rng.IntN(8))
		for i := range xs {
			xs[i] = math.Ldexp(rng.Float64()-0.5, rng.IntN(200)-100)
			if rng.IntN(4) == 0 && i > 0 {
				xs[i] = -xs[rng.IntN(i)] * (1 + math.Ldexp(rng.Float64(), -50))
			}
		}
		if got, want := phases.ExactSum(xs), exact(xs); got != want {
			t.Fatalf("ExactSum(%v) = %v, want %v", xs, got, want)
		}
	}
}
