package phases

import (
	"errors"
	"fmt"
	"math"

	"rsag/coll"
)

// NumericsSpec is what the numerics phase runs: every dtype at every size,
// on inputs from NewRNG(Seed, rank).
type NumericsSpec struct {
	DTypes     []coll.DType
	SizesBytes []int64
	Seed       uint64
}

// NumericsResult is one dtype and size on one rank: how the two paths'
// outputs on this rank compare with each other and with the exact sum.
type NumericsResult struct {
	Rank      int
	DType     coll.DType
	SizeBytes int64
	Elements  int
	// BitwiseEqual says whether AllReduce and ReduceScatter+AllGather gave
	// the same bits in every element; DifferingElements counts those that
	// differ and MaxULP is the largest distance between the two, in units
	// in the last place of the dtype.
	BitwiseEqual      bool
	DifferingElements int
	MaxULP            uint64
	// The largest |result - reference| of each path, and the largest
	// |result - reference| / |reference| over the elements whose reference
	// is not zero.
	MaxAbsErrorDirect     float64
	MaxAbsErrorDecomposed float64
	MaxRelErrorDirect     float64
	MaxRelErrorDecomposed float64
	// UnitRoundoff is the dtype's u (2^-p for p significand bits).
	UnitRoundoff float64
	// Bound is the largest per-element error bound (see errorBound);
	// MaxBoundRatio the largest error / bound of either path over the
	// elements; WithinBound that no element of either path exceeds its own
	// bound (MaxBoundRatio <= 1).
	Bound         float64
	MaxBoundRatio float64
	WithinBound   bool
}

// Verdict says in words how the two paths compare: "bitwise equal", or
// "N of M elements differ, at most K ULP".
func (r NumericsResult) Verdict() string {
	if r.BitwiseEqual {
		return "bitwise equal"
	}
	return fmt.Sprintf("%d of %d elements differ, at most %d ULP", r.DifferingElements, r.Elements, r.MaxULP)
}

// numericsChunk bounds the host memory of filling and checking, as
// checkChunk does for the other phases (a variable so that tests can cross
// chunk boundaries at small sizes).
var numericsChunk = checkChunk

// CheckNumerics returns an error, before any collective, for a spec this
// backend cannot run on its world size: a dtype that is not a float or
// that the backend cannot reduce, a size that does not divide into equal
// shards, or a world too large for the dtype's error bound to mean
// anything. Every rank gets the same answer.
func CheckNumerics(be coll.Backend, spec NumericsSpec) error {
	world := be.WorldSize()
	if len(spec.DTypes) == 0 || len(spec.SizesBytes) == 0 {
		return errors.New("numerics: no dtypes or no sizes to run: list at least one float dtype and one size, or disable the phase")
	}
	for _, d := range spec.DTypes {
		ft, ok := coll.FloatTypeOf(d)
		if !ok {
			return fmt.Errorf("numerics: %s is not a floating-point type: the phase measures rounding, which integer sums have not; "+
				"list float types only (float32 and float64, and float16 and bfloat16 on the nccl backend)", d)
		}
		if err := be.Supports(d, coll.Sum); err != nil {
			return fmt.Errorf("numerics: %s: %w", d, err)
		}
		if float64(world-1)*ft.UnitRoundoff >= 1 {
			return fmt.Errorf("numerics: %s on %d ranks: the summation error bound needs (ranks-1) x u < 1 with u = 2^-%d, "+
				"so no check can be made; drop %s from the numerics dtypes or run on at most %d ranks",
				d, world, ft.Precision, d, 1<<ft.Precision)
		}
		unit := int64(world * d.Size())
		for _, s := range spec.SizesBytes {
			if s <= 0 || s%unit != 0 {
				lo := max(s/unit*unit, unit)
				return fmt.Errorf("numerics: %d bytes does not divide by %d ranks x %d bytes (%s) = %d: use a multiple of %d, e.g. %d or %d",
					s, world, d.Size(), d, unit, unit, lo, lo+unit)
			}
		}
	}
	return nil
}

// NumericsFootprint is the most memory the phase holds at once: at the
// largest size N, the input and both outputs (N each) and the shard (N/W).
func NumericsFootprint(world int, spec NumericsSpec) int64 {
	var n int64
	for _, s := range spec.SizesBytes {
		n = max(n, s)
	}
	return 3*n + n/int64(world)
}

// RunNumerics compares AllReduce with ReduceScatter+AllGather on seeded
// random floats, for every dtype and size of spec: every rank fills its
// input from its RNG, both paths run out of place on that input, and
// every rank reads both outputs back in chunks and compares every element
// with the other path (bits, ULP) and with the exact sum of every rank's
// regenerated input. Bitwise differences are the finding, not a failure;
// an error beyond the standard bound fails the run on every rank, naming
// dtype, size and element.
func RunNumerics(be coll.Backend, comm coll.Comm, spec NumericsSpec) ([]NumericsResult, error) {
	if err := CheckNumerics(be, spec); err != nil {
		return nil, err
	}
	var results []NumericsResult
	for _, d := range spec.DTypes {
		for _, size := range spec.SizesBytes {
			r, err := numericsCase(be, d, size, spec.Seed)
			var local *CheckError
			if err != nil && !errors.As(err, &local) {
				return results, fmt.Errorf("numerics %s at %d bytes on rank %d: %w", d, size, be.Rank(), err)
			}
			results = append(results, r)
			// Every rank gets here, so a bound exceeded on one rank ends
			// the run on all of them.
			if err := agree(comm, "numerics", fmt.Sprintf("%s %s", d, coll.SizeText(size)), local); err != nil {
				return results, err
			}
		}
	}
	return results, nil
}

func numericsCase(be coll.Backend, d coll.DType, size int64, seed uint64) (r NumericsResult, err error) {
	ft, _ := coll.FloatTypeOf(d)
	world, rank := be.WorldSize(), be.Rank()
	count := int(size / int64(d.Size()))
	r = NumericsResult{Rank: rank, DType: d, SizeBytes: size, Elements: count, UnitRoundoff: ft.UnitRoundoff}
	a := &arena{be: be}
	defer a.release(&err)
	var in, direct, shard, decomposed coll.Buffer
	for _, p := range []struct {
		b *coll.Buffer
		n int
	}{{&in, count}, {&direct, count}, {&shard, count / world}, {&decomposed, count}} {
		if *p.b, err = a.alloc(coll.Elems(d, p.n)); err != nil {
			return r, err
		}
	}
	streams := make([]RNG, world)
	for q := range streams {
		streams[q] = NewRNG(seed, q)
	}
	if err := fillRandom(be, in, ft, streams[rank]); err != nil {
		return r, err
	}
	if err := be.Run(coll.AllReduce, in, direct, coll.Sum); err != nil {
		return r, err
	}
	if err := be.Run(coll.ReduceScatter, in, shard, coll.Sum); err != nil {
		return r, err
	}
	if err := be.Run(coll.AllGather, shard, decomposed, coll.Sum); err != nil {
		return r, err
	}
	if err := be.Synchronize(); err != nil {
		return r, err
	}
	c := newComparison(ft, world, streams)
	if err := c.run(be, direct, decomposed); err != nil {
		return r, err
	}
	c.fill(&r)
	if c.first != nil {
		return r, &CheckError{Phase: "numerics", What: fmt.Sprintf("rank %d (%s): %s %s (%d bytes), %s", rank, be.Info().Host, d, coll.SizeText(size), size, c.first)}
	}
	return r, nil
}

// fillRandom writes s's values into b, numericsChunk elements at a time.
func fillRandom(be coll.Backend, b coll.Buffer, ft coll.FloatType, s RNG) error {
	es := ft.DType.Size()
	host := make([]byte, min(b.Count(), numericsChunk)*es)
	for off := 0; off < b.Count(); off += numericsChunk {
		k := min(numericsChunk, b.Count()-off)
		for i := range k {
			ft.Encode(s.Value(ft, off+i), host[i*es:])
		}
		view, err := be.View(b, off, k)
		if err != nil {
			return err
		}
		if err := be.Write(view, host[:k*es]); err != nil {
			return err
		}
	}
	return nil
}

// comparison accumulates the per-element comparison of one case.
type comparison struct {
	ft      coll.FloatType
	streams []RNG
	gamma   float64 // gamma_{W-1}

	xs, partials       []float64
	differing          int
	maxULP             uint64
	maxAbs, maxRel     [2]float64
	maxBound, maxRatio float64
	first              *boundExceeded
}

// boundExceeded is the first element of this rank's outputs whose error
// exceeds its bound.
type boundExceeded struct {
	index            int
	path             string
	got, ref, bound  float64
	sumAbs           float64
	world, precision int
}

func (b *boundExceeded) String() string {
	return fmt.Sprintf("element %d: %s result %v differs from the exact sum %v by %.3g, beyond the bound %.3g "+
		"(gamma_%d x sum|x| + u x |sum|, sum|x| = %.6g, u = 2^-%d)",
		b.index, b.path, b.got, b.ref, math.Abs(b.got-b.ref), b.bound, b.world-1, b.sumAbs, b.precision)
}

var numericsPaths = [2]string{"AllReduce", "ReduceScatter+AllGather"}

func newComparison(ft coll.FloatType, world int, streams []RNG) *comparison {
	wu := float64(world-1) * ft.UnitRoundoff
	return &comparison{ft: ft, streams: streams, gamma: wu / (1 - wu), xs: make([]float64, world)}
}

// run reads both outputs numericsChunk elements at a time and compares
// every element.
func (c *comparison) run(be coll.Backend, direct, decomposed coll.Buffer) error {
	es := c.ft.DType.Size()
	n := direct.Count()
	var host [2][]byte
	for p := range host {
		host[p] = make([]byte, min(n, numericsChunk)*es)
	}
	for off := 0; off < n; off += numericsChunk {
		k := min(numericsChunk, n-off)
		for p, b := range [2]coll.Buffer{direct, decomposed} {
			view, err := be.View(b, off, k)
			if err != nil {
				return err
			}
			if err := be.Read(view, host[p][:k*es]); err != nil {
				return err
			}
		}
		for i := range k {
			c.element(off+i, host[0][i*es:(i+1)*es], host[1][i*es:(i+1)*es])
		}
	}
	return nil
}

// element compares element i of both paths with each other and with the
// reference, against the standard bound for recursive summation of W
// terms (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed.,
// eq. 4.4): |computed - sum| <= gamma_{W-1} sum|x_r| with gamma_n =
// n u / (1 - n u), which holds for every order and tree of additions, so
// for ring, tree and any ReduceScatter alike; plus u |sum| for the final
// rounding. The first order term is (W-1) u sum|x_r|.
func (c *comparison) element(i int, direct, decomposed []byte) {
	if string(direct) != string(decomposed) {
		c.differing++
		c.maxULP = max(c.maxULP, c.ft.ULPDistance(direct, decomposed))
	}
	sumAbs := 0.0
	for q, s := range c.streams {
		c.xs[q] = s.Value(c.ft, i)
		sumAbs += math.Abs(c.xs[q])
	}
	var ref float64
	ref, c.partials = exactSum(c.xs, c.partials[:0])
	bound := c.gamma*sumAbs + c.ft.UnitRoundoff*math.Abs(ref)
	c.maxBound = max(c.maxBound, bound)
	for p, b := range [2][]byte{direct, decomposed} {
		got := c.ft.Decode(b)
		e := math.Abs(got - ref)
		if math.IsNaN(e) {
			e = math.Inf(1)
		}
		c.maxAbs[p] = max(c.maxAbs[p], e)
		if ref != 0 {
			c.maxRel[p] = max(c.maxRel[p], e/math.Abs(ref))
		}
		ratio := 0.0
		switch {
		case e <= bound && bound > 0:
			ratio = e / bound
		case e > bound:
			ratio = math.Inf(1)
			if bound > 0 {
				ratio = e / bound
			}
		}
		c.maxRatio = max(c.maxRatio, ratio)
		if e > bound && c.first == nil {
			c.first = &boundExceeded{index: i, path: numericsPaths[p], got: got, ref: ref, bound: bound,
				sumAbs: sumAbs, world: len(c.streams), precision: c.ft.Precision}
		}
	}
}

func (c *comparison) fill(r *NumericsResult) {
	r.DifferingElements = c.differing
	r.BitwiseEqual = c.differing == 0
	r.MaxULP = c.maxULP
	r.MaxAbsErrorDirect, r.MaxAbsErrorDecomposed = c.maxAbs[0], c.maxAbs[1]
	r.MaxRelErrorDirect, r.MaxRelErrorDecomposed = c.maxRel[0], c.maxRel[1]
	r.Bound = c.maxBound
	r.MaxBoundRatio = c.maxRatio
	r.WithinBound = c.first == nil
}

// exactSum returns the sum of xs rounded once to the nearest float64, ties
// to even, with partials as scratch space (returned for reuse). It is
// Shewchuk's exact summation ("Adaptive precision floating-point
// arithmetic", 1997) as Python's math.fsum does it: the partials, kept by
// the error-free TwoSum, are non-overlapping and add up to the exact sum,
// which is then rounded from the top with a correction for halfway cases.
// The reference is therefore the exact sum of the inputs, the best float64
// there is, for every dtype; for float64 itself no float64 accumulation in
// any order could give that. Finite inputs whose sum does not overflow.
func exactSum(xs, partials []float64) (float64, []float64) {
	p := partials[:0]
	for _, x := range xs {
		i := 0
		for _, y := range p {
			if math.Abs(x) < math.Abs(y) {
				x, y = y, x
			}
			hi := x + y
			lo := y - (hi - x)
			if lo != 0 {
				p[i] = lo
				i++
			}
			x = hi
		}
		p = append(p[:i], x)
	}
	n := len(p)
	if n == 0 {
		return 0, p
	}
	n--
	hi, lo := p[n], 0.0
	for n > 0 {
		x := hi
		n--
		y := p[n]
		hi = x + y
		lo = y - (hi - x)
		if lo != 0 {
			break
		}
	}
	// Round half to even across partials: when the remainder lo is exactly
	// half an ulp of hi and the partials below push the same way, round up.
	if n > 0 && (lo < 0 && p[n-1] < 0 || lo > 0 && p[n-1] > 0) {
		y := lo * 2
		x := hi + y
		if x-hi == y {
			hi = x
		}
	}
	return hi, p
}
