package coll

import (
	"fmt"
	"math"
)

// Op is a reduction operation.
type Op int

const (
	Sum Op = iota
	Max
	Prod
	Min
	Avg
)

// AllOps lists every reduction in the order reports use.
var AllOps = []Op{Sum, Prod, Max, Min, Avg}

// opInfo is everything the harness knows about one reduction: its name,
// what each rank contributes to a check (small integers whose reduction
// every dtype represents exactly), how two values combine, how the combined
// value of n ranks is finished, and what makes a check inexact.
type opInfo struct {
	name    string
	input   func(rank int) float64
	combine func(a, b float64) float64
	finish  func(v float64, n int) float64
	// inexact says why a check of d on world ranks cannot be exact, or "".
	inexact func(d DType, world int) string
}

// ownInput is the seed's fill: rank+1.
func ownInput(rank int) float64 { return float64(rank + 1) }

func done(v float64, n int) float64 { return v }

func exactAlways(DType, int) string { return "" }

var ops = map[Op]opInfo{
	Sum: {"sum", ownInput, func(a, b float64) float64 { return a + b }, done, exactAlways},
	// PROD takes 2 on even ranks and 1 on odd ones, so the product
	// 2^ceil(W/2) still proves every rank took part and stays small.
	Prod: {"prod", func(rank int) float64 { return float64(2 - rank%2) }, func(a, b float64) float64 { return a * b }, done, exactAlways},
	Max:  {"max", ownInput, math.Max, done, exactAlways},
	Min:  {"min", ownInput, math.Min, done, exactAlways},
	Avg: {"avg", ownInput, func(a, b float64) float64 { return a + b }, func(v float64, n int) float64 { return v / float64(n) },
		func(d DType, world int) string {
			if !d.IsFloat() {
				return fmt.Sprintf("avg on %s rounds to an integer, so no check can be exact: use avg with a float dtype", d)
			}
			// NCCL averages floats by multiplying each input by 1/W before
			// summing, which is exact only when 1/W is a power of two.
			if world&(world-1) != 0 {
				return fmt.Sprintf("avg on %d ranks multiplies by an inexact 1/%d, so no check can be exact: run avg on a power-of-two number of ranks (2, 4, 8, ...)", world, world)
			}
			return ""
		}},
}

func (o Op) info() opInfo {
	in, ok := ops[o]
	if !ok {
		panic(fmt.Sprintf("coll: unknown op %d", int(o)))
	}
	return in
}

func (o Op) String() string {
	if in, ok := ops[o]; ok {
		return in.name
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// ParseOp reads an op name as configs spell it.
func ParseOp(s string) (Op, bool) {
	for o, in := range ops {
		if in.name == s {
			return o, true
		}
	}
	return 0, false
}

// Input is what rank contributes to a check of op.
func Input(op Op, rank int) float64 { return op.info().input(rank) }

// Reduce is op over values, as a collective computes it from what its
// ranks hold: combined in order, then finished over their count (avg
// divides), so a reduction of partial reductions (a group's averages) comes
// out as the collective's does.
func Reduce(op Op, values []float64) float64 {
	in := op.info()
	v := values[0]
	for _, x := range values[1:] {
		v = in.combine(v, x)
	}
	return in.finish(v, len(values))
}

// Expected is the reduction of Input over world ranks.
func Expected(op Op, world int) float64 {
	inputs := make([]float64, world)
	for r := range inputs {
		inputs[r] = Input(op, r)
	}
	return Reduce(op, inputs)
}

// CheckExact returns an error when the check of d with op on world ranks
// could not be exact: the expected value outside what d holds exactly, or
// what the op itself makes inexact (avg on integers or on a world size that
// is not a power of two).
func CheckExact(d DType, op Op, world int) error {
	if why := op.info().inexact(d, world); why != "" {
		return fmt.Errorf("%s", why)
	}
	want := Expected(op, world)
	if max := d.info().maxExact; want > max {
		return fmt.Errorf("%s with %s on %d ranks reaches %v, beyond the largest integer %s holds exactly (%v): drop that pair or use fewer ranks",
			d, op, world, want, d, max)
	}
	return nil
}
