package coll

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
		panic(fmt.Sprintf("coll: unknown dtype %d", int(d)))
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

// Encode writes the element of value v into b (len(b) >= d.Size()), as
// Elem does, without allocating.
func (d DType) Encode(v float64, b []byte) { d.info().encode(v, b) }

// MaxExact is the largest integer n such that d holds 0..n exactly: what
// bounds a check's values so that their reduction stays exact.
func (d DType) MaxExact() float64 { return d.info().maxExact }

// Value reads one element of d from its bytes (len(b) >= d.Size()), as a
// float64: exact for the floats and for integers up to 2^53.
func (d DType) Value(b []byte) float64 {
	if ft, ok := FloatTypeOf(d); ok {
		return ft.Decode(b)
	}
	var u uint64
	for i := d.Size() - 1; i >= 0; i-- {
		u = u<<8 | uint64(b[i])
	}
	if d.IsFloat() || d == Uint8 || d == Uint32 || d == Uint64 {
		return float64(u)
	}
	shift := 64 - 8*uint(d.Size()) // sign-extend the signed ones
	return float64(int64(u<<shift) >> shift)
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
