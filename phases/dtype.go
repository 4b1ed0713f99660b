package phases

import (
	"encoding/binary"
	"fmt"
	"math"
)

// DType is an element type of a collective buffer.
type DType int

// The element types, NCCL's set. The MPI backend supports those MPI has.
const (
	Int64 DType = iota
	Float32
	Int8
	Uint8
	Int32
	Uint32
	Uint64
	Float16
	BFloat16
	Float64
)

// dtypeInfo is everything the harness needs to know about one element type:
// its name, size, how to encode a value, and the largest integer it holds
// exactly (so every check can be exact).
type dtypeInfo struct {
	name     string
	size     int
	float    bool
	maxExact float64 // the largest integer n such that 0..n are all exact
	encode   func(v float64, b []byte)
}

var dtypes = map[DType]dtypeInfo{
	Int8:     {"int8", 1, false, math.MaxInt8, func(v float64, b []byte) { b[0] = byte(int8(v)) }},
	Uint8:    {"uint8", 1, false, math.MaxUint8, func(v float64, b []byte) { b[0] = byte(v) }},
	Int32:    {"int32", 4, false, math.MaxInt32, func(v float64, b []byte) { binary.LittleEndian.PutUint32(b, uint32(int32(v))) }},
	Uint32:   {"uint32", 4, false, math.MaxUint32, func(v float64, b []byte) { binary.LittleEndian.PutUint32(b, uint32(v)) }},
	Int64:    {"int64", 8, false, 1 << 53, func(v float64, b []byte) { binary.LittleEndian.PutUint64(b, uint64(int64(v))) }},
	Uint64:   {"uint64", 8, false, 1 << 53, func(v float64, b []byte) { binary.LittleEndian.PutUint64(b, uint64(v)) }},
	Float16:  {"float16", 2, true, 2048, func(v float64, b []byte) { binary.LittleEndian.PutUint16(b, float16Bits(v)) }},
	BFloat16: {"bfloat16", 2, true, 256, func(v float64, b []byte) { binary.LittleEndian.PutUint16(b, bfloat16Bits(v)) }},
	Float32:  {"float32", 4, true, 1 << 24, func(v float64, b []byte) { binary.LittleEndian.PutUint32(b, math.Float32bits(float32(v))) }},
	Float64:  {"float64", 8, true, 1 << 53, func(v float64, b []byte) { binary.LittleEndian.PutUint64(b, math.Float64bits(v)) }},
}

// AllDTypes lists every element type in the order reports use.
var AllDTypes = []DType{Int8, Uint8, Int32, Uint32, Int64, Uint64, Float16, BFloat16, Float32, Float64}

func (d DType) info() dtypeInfo {
	in, ok := dtypes[d]
	if !ok {
		panic(fmt.Sprintf("phases: unknown dtype %d", int(d)))
	}
	return in
}

// Size is the element size in bytes.
func (d DType) Size() int { return d.info().size }

// IsFloat says whether d is a floating-point type.
func (d DType) IsFloat() bool { return d.info().float }

func (d DType) String() string {
	if in, ok := dtypes[d]; ok {
		return in.name
	}
	return fmt.Sprintf("DType(%d)", int(d))
}

// Elem returns the bytes of one element of value v (an integer that d holds
// exactly, or a half for float types).
func (d DType) Elem(v float64) []byte {
	b := make([]byte, d.Size())
	d.info().encode(v, b)
	return b
}

// ParseDType reads a dtype name as configs spell it.
func ParseDType(s string) (DType, bool) {
	for d, in := range dtypes {
		if in.name == s {
			return d, true
		}
	}
	return 0, false
}

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

var opNames = map[Op]string{Sum: "sum", Prod: "prod", Max: "max", Min: "min", Avg: "avg"}

func (o Op) String() string {
	if n, ok := opNames[o]; ok {
		return n
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// ParseOp reads an op name as configs spell it.
func ParseOp(s string) (Op, bool) {
	for o, n := range opNames {
		if n == s {
			return o, true
		}
	}
	return 0, false
}

// Input is what rank contributes to a check of op: small integers whose
// reduction every dtype represents exactly. SUM, MAX, MIN and AVG take
// rank+1 (the seed's fill); PROD takes 2 on even ranks and 1 on odd ones,
// so the product 2^ceil(W/2) still proves every rank took part.
func Input(op Op, rank int) float64 {
	if op == Prod {
		if rank%2 == 0 {
			return 2
		}
		return 1
	}
	return float64(rank + 1)
}

// Expected is the reduction of Input over world ranks.
func Expected(op Op, world int) float64 {
	w := float64(world)
	switch op {
	case Sum:
		return w * (w + 1) / 2
	case Prod:
		return math.Pow(2, math.Ceil(w/2))
	case Max:
		return w
	case Min:
		return 1
	case Avg:
		return (w + 1) / 2
	}
	panic(fmt.Sprintf("phases: unknown op %d", int(op)))
}

// CheckExact returns an error when the check of d with op on world ranks
// could not be exact: the expected value outside what d holds exactly, an
// average on an integer type (which rounds), or on a world size that is not
// a power of two.
func CheckExact(d DType, op Op, world int) error {
	if op == Avg && !d.IsFloat() {
		return fmt.Errorf("avg on %s rounds to an integer, so no check can be exact: use avg with a float dtype", d)
	}
	// NCCL averages floats by multiplying each input by 1/W before summing,
	// which is exact only when 1/W is a power of two.
	if op == Avg && world&(world-1) != 0 {
		return fmt.Errorf("avg on %d ranks multiplies by an inexact 1/%d, so no check can be exact: run avg on a power-of-two number of ranks (2, 4, 8, ...)", world, world)
	}
	want := Expected(op, world)
	if max := d.info().maxExact; want > max {
		return fmt.Errorf("%s with %s on %d ranks reaches %v, beyond the largest integer %s holds exactly (%v): drop that pair or use fewer ranks",
			d, op, world, want, d, max)
	}
	return nil
}

// float16Bits rounds v (a small integer or half-integer here) to IEEE half.
func float16Bits(v float64) uint16 {
	f := math.Float32bits(float32(v))
	sign := uint16(f>>16) & 0x8000
	exp := int((f>>23)&0xff) - 127 + 15
	mant := f & 0x7fffff
	switch {
	case v == 0:
		return sign
	case exp <= 0:
		// Subnormal halves never occur for the values checked here.
		return sign
	case exp >= 31:
		return sign | 0x7c00
	}
	// Round to nearest even on the 13 dropped mantissa bits.
	h := uint32(exp)<<10 | mant>>13
	rest := mant & 0x1fff
	if rest > 0x1000 || (rest == 0x1000 && h&1 == 1) {
		h++
	}
	return sign | uint16(h)
}

// bfloat16Bits rounds v to bfloat16 (the top half of a float32), to nearest even.
func bfloat16Bits(v float64) uint16 {
	f := math.Float32bits(float32(v))
	rounding := uint32(0x7fff) + (f>>16)&1
	return uint16((f + rounding) >> 16)
}
