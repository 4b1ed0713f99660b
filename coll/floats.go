package coll

import (
	"encoding/binary"
	"fmt"
	"math"
)

// FloatType is how one floating-point dtype is read, rounded and written,
// exactly: every conversion rounds to nearest, ties to even, keeps
// subnormals, signed zeros, infinities and NaNs, as IEEE 754 does.
type FloatType struct {
	DType DType
	// Precision is the number of significand bits p, the implicit bit
	// included: 11 (float16), 8 (bfloat16), 24 (float32), 53 (float64).
	Precision int
	// UnitRoundoff is u = 2^-p, the largest relative error of one rounding
	// to nearest: 2^-11, 2^-8, 2^-24, 2^-53.
	UnitRoundoff float64
	// Bits converts x to the nearest value of the dtype and returns its bit
	// pattern (in the low Size()*8 bits); Value converts a bit pattern back.
	Bits  func(x float64) uint64
	Value func(bits uint64) float64

	size int // bytes, DType.Size() without its map lookup per element
}

// floatFormat is an IEEE 754 binary format narrower than float64, by its
// field widths.
type floatFormat struct{ exp, mant uint }

var (
	binary16 = floatFormat{exp: 5, mant: 10}
	bfloat16 = floatFormat{exp: 8, mant: 7}
	binary32 = floatFormat{exp: 8, mant: 23}
)

var floatTypes = map[DType]FloatType{
	Float16: {DType: Float16, Precision: 11,
		Bits:  func(x float64) uint64 { return binary16.fromFloat64(x) },
		Value: func(b uint64) float64 { return binary16.toFloat64(b) }},
	BFloat16: {DType: BFloat16, Precision: 8,
		Bits:  func(x float64) uint64 { return bfloat16.fromFloat64(x) },
		Value: func(b uint64) float64 { return bfloat16.toFloat64(b) }},
	// Go's conversions between float64 and float32 are IEEE's (round to
	// nearest even, subnormals kept); the tests check binary32 against them.
	Float32: {DType: Float32, Precision: 24,
		Bits:  func(x float64) uint64 { return uint64(math.Float32bits(float32(x))) },
		Value: func(b uint64) float64 { return float64(math.Float32frombits(uint32(b))) }},
	Float64: {DType: Float64, Precision: 53,
		Bits:  math.Float64bits,
		Value: math.Float64frombits},
}

func init() {
	for d, ft := range floatTypes {
		ft.UnitRoundoff = math.Ldexp(1, -ft.Precision)
		ft.size = d.Size()
		floatTypes[d] = ft
	}
}

// FloatTypeOf returns d's FloatType, and false for an integer dtype.
func FloatTypeOf(d DType) (FloatType, bool) {
	ft, ok := floatTypes[d]
	return ft, ok
}

// Round returns the value of the dtype nearest to x.
func (f FloatType) Round(x float64) float64 { return f.Value(f.Bits(x)) }

// Decode reads one little-endian element.
func (f FloatType) Decode(b []byte) float64 { return f.Value(loadBits(b, f.size)) }

// Encode writes x, rounded to the dtype, as one little-endian element.
func (f FloatType) Encode(x float64, b []byte) { storeBits(b, f.size, f.Bits(x)) }

// ULPDistance is the number of steps between the elements a and b
// (little-endian bytes) along the ordered values of the dtype: 0 when they
// are equal (+0 and -0 are), 1 for neighbours, counting across zero for
// opposite signs. Sign-magnitude bits map to ordered integers as +m and -m.
// A NaN is no distance from anything: math.MaxUint64.
func (f FloatType) ULPDistance(a, b []byte) uint64 {
	size := f.size
	x, y := loadBits(a, size), loadBits(b, size)
	if math.IsNaN(f.Value(x)) || math.IsNaN(f.Value(y)) {
		return math.MaxUint64
	}
	sign := uint64(1) << (8*size - 1)
	mx, my := x&^sign, y&^sign
	if x&sign != y&sign {
		return mx + my
	}
	if mx > my {
		return mx - my
	}
	return my - mx
}

// TowardZero returns x rounded to the dtype, toward zero: never larger in
// magnitude than x, so values in [-1, 1) stay there.
func (f FloatType) TowardZero(x float64) float64 {
	bits := f.Bits(x)
	if r := f.Value(bits); math.Abs(r) > math.Abs(x) {
		// |r| > |x| >= 0, so r is not zero and its magnitude bits step down
		// to the next value toward zero.
		return f.Value(bits - 1)
	}
	return f.Value(bits)
}

func loadBits(b []byte, size int) uint64 {
	switch size {
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	case 8:
		return binary.LittleEndian.Uint64(b)
	}
	panic(fmt.Sprintf("coll: no float of %d bytes", size))
}

func storeBits(b []byte, size int, v uint64) {
	switch size {
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	case 8:
		binary.LittleEndian.PutUint64(b, v)
	default:
		panic(fmt.Sprintf("coll: no float of %d bytes", size))
	}
}

// Float16FromFloat64 rounds x to the nearest IEEE half (ties to even) and
// returns its bits.
func Float16FromFloat64(x float64) uint16 { return uint16(binary16.fromFloat64(x)) }

// Float16ToFloat64 is the value of the half with bits h (exact).
func Float16ToFloat64(h uint16) float64 { return binary16.toFloat64(uint64(h)) }

// BFloat16FromFloat64 rounds x to the nearest bfloat16 (ties to even) and
// returns its bits. Rounding once from float64 matters: going through
// float32 first rounds twice and can land one step off.
func BFloat16FromFloat64(x float64) uint16 { return uint16(bfloat16.fromFloat64(x)) }

// BFloat16ToFloat64 is the value of the bfloat16 with bits b (exact).
func BFloat16ToFloat64(b uint16) float64 { return bfloat16.toFloat64(uint64(b)) }

func (f floatFormat) bias() int       { return 1<<(f.exp-1) - 1 }
func (f floatFormat) expMask() uint64 { return 1<<f.exp - 1 }

// fromFloat64 rounds x to f, to nearest with ties to even, from x's 53-bit
// significand in one step.
func (f floatFormat) fromFloat64(x float64) uint64 {
	bits := math.Float64bits(x)
	sign := bits >> 63 << (f.exp + f.mant)
	inf := f.expMask() << f.mant
	switch {
	case math.IsNaN(x):
		// A quiet NaN keeping the top of the payload.
		return sign | inf | 1<<(f.mant-1) | (bits&(1<<52-1))>>(52-f.mant)
	case math.IsInf(x, 0):
		return sign | inf
	}
	e64 := int(bits>>52) & 0x7ff
	if e64 == 0 {
		// Zero, or a float64 subnormal: far below half the smallest
		// subnormal of any narrower format, so a signed zero.
		return sign
	}
	sig := bits&(1<<52-1) | 1<<52 // x = sig * 2^(e-52)
	e := e64 - 1023
	emin := 1 - f.bias()
	// The result in units of its last place: normal results keep mant+1
	// bits, subnormal ones are counted in units of 2^(emin-mant).
	shift := 52 - int(f.mant)
	if e < emin {
		shift += emin - e
	}
	if shift > 62 {
		return sign // below a quarter of the smallest subnormal
	}
	q := sig >> shift
	rest := sig & (1<<shift - 1)
	half := uint64(1) << (shift - 1)
	if rest > half || rest == half && q&1 == 1 {
		q++
	}
	if e < emin {
		// A subnormal, or, when rounding carried into bit mant, exactly
		// the smallest normal: the bits are q either way.
		return sign | q
	}
	// q holds the implicit bit at 1<<mant; a carry out of the significand
	// moves into the exponent, which is right.
	mag := uint64(e+f.bias()-1)<<f.mant + q
	if mag >= inf {
		return sign | inf
	}
	return sign | mag
}

// toFloat64 is the exact value of f's bits b.
func (f floatFormat) toFloat64(b uint64) float64 {
	neg := b>>(f.exp+f.mant)&1 == 1
	exp := b >> f.mant & f.expMask()
	mant := b & (1<<f.mant - 1)
	var v float64
	switch exp {
	case f.expMask():
		if mant != 0 {
			nan := uint64(0x7ff8)<<48 | mant<<(52-f.mant)
			if neg {
				nan |= 1 << 63
			}
			return math.Float64frombits(nan)
		}
		v = math.Inf(1)
	case 0:
		v = math.Ldexp(float64(mant), 1-f.bias()-int(f.mant))
	default:
		v = math.Ldexp(float64(mant|1<<f.mant), int(exp)-f.bias()-int(f.mant))
	}
	if neg {
		return -v
	}
	return v
}
