package phases

import (
	"fmt"
	"math/bits"
	"slices"
	"time"

	"rsag/coll"
)

// SoakSpec is what the soak phase runs: Iterations iterations, or as many
// as fit in Duration on rank 0's clock (exactly one of them is set). Each
// iteration draws a case, a pure function of Seed and the iteration, so
// that every rank draws the same one and a failure can be run again.
type SoakSpec struct {
	Duration   time.Duration
	Iterations int
	// SizesBytes are the sizes drawn from; when empty, a size is drawn from
	// MinBytes..MaxBytes, log-uniform, and rounded down to a whole number
	// of elements per rank (odd counts included).
	SizesBytes         []int64
	MinBytes, MaxBytes int64
	DTypes             []coll.DType
	Ops                []coll.Op
	Placements         []coll.Placement
	Offsets            []int64 // empty: 0
	Seed               uint64
	// FailAfter stops the phase after this many iterations found a wrong
	// element; 0 runs it to the end, counting them (a rate).
	FailAfter int
}

// SoakRun is the soak phase's Case.Run: a soak case is no timing run's.
const SoakRun = "soak"

// SoakPair is a dtype and op the soak draws together.
type SoakPair struct {
	DType coll.DType
	Op    coll.Op
}

func (p SoakPair) String() string { return fmt.Sprintf("%s %s", p.DType, p.Op) }

// Pairs are the dtype and op pairs the soak draws on world ranks, in the
// spec's order, and those it cannot: a pair whose reduction of world
// inputs is exact only when every input is 1 (int8 products on 8 ranks or
// more), where no check could tell one rank's chunk from another's. A
// soak, unlike a timing case, skips such a pair and says so: the shipped
// config then runs on any width.
func (s SoakSpec) Pairs(world int) (drawn, skipped []SoakPair) {
	for _, d := range s.DTypes {
		for _, o := range s.Ops {
			if p := (SoakPair{d, o}); soakLimit(world, d, o) >= 2 {
				drawn = append(drawn, p)
			} else {
				skipped = append(skipped, p)
			}
		}
	}
	return drawn, skipped
}

// Draw is the case of iteration iter on world ranks: its size, element
// type and op (one of Pairs), placement and buffer offset, drawn from the
// spec's lists with integer arithmetic only (the same on every machine).
func (s SoakSpec) Draw(iter, world int) coll.Case {
	return s.draw(iter, world, nil)
}

// draw is Draw over pairs, when the caller has them (Pairs), else its own.
func (s SoakSpec) draw(iter, world int, pairs []SoakPair) coll.Case {
	if pairs == nil {
		pairs, _ = s.Pairs(world)
	}
	r := NewRNG(s.Seed, iter)
	pick := func(k, n int) int { return int(r.Uint64(k) % uint64(n)) }
	p := pairs[pick(1, len(pairs))]
	d := p.DType
	c := coll.Case{Run: SoakRun, DType: d, Op: p.Op,
		Placement: s.Placements[pick(3, len(s.Placements))], Method: coll.PerOp, Batch: 1,
		Buffers: coll.PlainBuffers, CTAPolicy: coll.DefaultCTAPolicy}
	if len(s.Offsets) > 0 {
		c.Offset = s.Offsets[pick(4, len(s.Offsets))]
	}
	unit := int64(world * d.Size())
	size := int64(0)
	if len(s.SizesBytes) > 0 {
		size = s.SizesBytes[pick(0, len(s.SizesBytes))]
	} else {
		size = logUniform(r.Uint64(0), r.Uint64(5), s.MinBytes, s.MaxBytes)
	}
	c.SizeBytes = max(size/unit, 1) * unit
	return c
}

// logUniform is a size in lo..hi whose binary length is uniform over the
// range's (so 1K..1G tries small and large sizes alike), the rest uniform
// within it: two random words, integers only.
func logUniform(w1, w2 uint64, lo, hi int64) int64 {
	a, b := bits.Len64(uint64(lo)), bits.Len64(uint64(hi))
	n := a + int(w1%uint64(b-a+1)) // a size of n bits: 2^(n-1) .. 2^n-1
	from, to := max(int64(1)<<(n-1), lo), min(int64(1)<<n-1, hi)
	return from + int64(w2%uint64(to-from+1))
}

// soakModes are what every iteration runs on the same input: AllReduce,
// ReduceScatter + AllGather, and the hierarchical form when there are
// groups.
func soakModes(g *Groups) []coll.TimedMode {
	names := []coll.Mode{coll.Direct, coll.Decomposed}
	if g != nil {
		names = append(names, coll.Hierarchical)
	}
	out := make([]coll.TimedMode, len(names))
	for i, n := range names {
		out[i], _ = coll.ModeOf(n)
	}
	return out
}

// SoakFootprint is the most memory one iteration holds: every mode's
// buffers at the largest size, out of place, each with the largest offset.
func SoakFootprint(world int, spec SoakSpec, g *Groups) int64 {
	largest := spec.MaxBytes
	if len(spec.SizesBytes) > 0 {
		largest = slices.Max(spec.SizesBytes)
	}
	off := int64(0)
	if len(spec.Offsets) > 0 {
		off = slices.Max(spec.Offsets)
	}
	c := coll.Case{SizeBytes: largest, DType: coll.Int8, Placement: coll.OutOfPlace, Offset: off}
	var need int64
	for _, m := range soakModes(g) {
		need += m.Footprint(c, layoutOf(world, g))
	}
	return need
}

// CheckSoak returns an error, before any collective, for a spec this
// backend cannot run on its world: a dtype and op it cannot reduce, or no
// pair at all that can be checked on this many ranks (Pairs).
func CheckSoak(be coll.Backend, spec SoakSpec, g *Groups) error {
	for _, d := range spec.DTypes {
		for _, o := range spec.Ops {
			if err := be.Supports(d, o); err != nil {
				return fmt.Errorf("soak: %w", err)
			}
		}
	}
	if drawn, skipped := spec.Pairs(be.WorldSize()); len(drawn) == 0 {
		return fmt.Errorf("soak: no dtype and op of soak.dtypes and soak.ops can be checked on %d ranks (%s: %s): add a wider dtype (int32, float64) or an op other than prod, or use fewer ranks",
			be.WorldSize(), PairsText(skipped), SkippedWhy(be.WorldSize()))
	}
	if _, ok := coll.Find[coll.Splitter](be); g != nil && !ok {
		return fmt.Errorf("soak: the hierarchical form needs sub-communicators, which the %s backend has not", be.Info().Backend)
	}
	return nil
}
