package coll_test

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"rsag/coll"
)

func TestFloat16Golden(t *testing.T) {
	cases := []struct {
		x    float64
		bits uint16
	}{
		{1, 0x3c00}, {-2, 0xc000}, {0.5, 0x3800}, {1.0 / 3, 0x3555},
		{65504, 0x7bff},               // the largest half
		{65519.99, 0x7bff},            // below the midpoint to 65536
		{65520, 0x7c00},               // the midpoint rounds to even: infinity
		{1e6, 0x7c00}, {-1e6, 0xfc00}, // overflow
		{math.Ldexp(1, -14), 0x0400},    // the smallest normal
		{math.Ldexp(1023, -24), 0x03ff}, // the largest subnormal
		{math.Ldexp(1, -24), 0x0001},    // the smallest subnormal
		{math.Ldexp(1, -25), 0x0000},    // half of it: ties to even, zero
		{math.Ldexp(1, -25) * 1.0000001, 0x0001},
		{math.Ldexp(3, -25), 0x0002}, // 1.5 subnormal steps: to even
		{math.Ldexp(1, -40), 0x0000},
		{-math.Ldexp(1, -40), 0x8000},    // underflow keeps the sign
		{math.Ldexp(2047, -25), 0x0400},  // rounds up out of the subnormals
		{1 + math.Ldexp(1, -11), 0x3c00}, // tie: to even
		{1 + math.Ldexp(3, -11), 0x3c02}, // tie: to even, upward
		{1 + math.Ldexp(1, -11) + math.Ldexp(1, -40), 0x3c01},
		{math.Copysign(0, -1), 0x8000}, {0, 0},
		{math.Inf(1), 0x7c00}, {math.Inf(-1), 0xfc00},
		{5e-324, 0}, // a float64 subnormal
	}
	for _, c := range cases {
		if got := coll.Float16FromFloat64(c.x); got != c.bits {
			t.Errorf("Float16FromFloat64(%v) = %#04x, want %#04x", c.x, got, c.bits)
		}
	}
	if h := coll.Float16FromFloat64(math.NaN()); h&0x7c00 != 0x7c00 || h&0x3ff == 0 {
		t.Errorf("Float16FromFloat64(NaN) = %#04x, not a NaN", h)
	}
}

// TestFloat16Exhaustive decodes every half by the format's definition and
// checks that encoding the value gives the same bits back.
func TestFloat16Exhaustive(t *testing.T) {
	for h := range 1 << 16 {
		sign := 1.0
		if h&0x8000 != 0 {
			sign = -1
		}
		e, m := h>>10&0x1f, h&0x3ff
		var want float64
		switch {
		case e == 0:
			want = sign * float64(m) * math.Ldexp(1, -24)
		case e == 31 && m == 0:
			want = math.Inf(int(sign))
		case e == 31:
			want = math.NaN()
		default:
			want = sign * float64(1024+m) * math.Ldexp(1, e-25)
		}
		got := coll.Float16ToFloat64(uint16(h))
		if math.IsNaN(want) {
			if !math.IsNaN(got) || math.Signbit(got) != (sign < 0) {
				t.Fatalf("Float16ToFloat64(%#04x) = %v, want a NaN of that sign", h, got)
			}
			back := coll.Float16FromFloat64(got)
			if back&0x7c00 != 0x7c00 || back&0x3ff == 0 || back&0x8000 != uint16(h)&0x8000 {
				t.Fatalf("NaN %#04x encodes back as %#04x", h, back)
			}
			continue
		}
		if got != want || math.Signbit(got) != math.Signbit(want) {
			t.Fatalf("Float16ToFloat64(%#04x) = %v, want %v", h, got, want)
		}
		if back := coll.Float16FromFloat64(got); back != uint16(h) {
			t.Fatalf("Float16FromFloat64(%v) = %#04x, want %#04x", got, back, h)
		}
	}
}

// roundOracle rounds x to nearest even in a binary format of p significand
// bits and normal exponents emin..emax, with math/big for normal results
// and an exact integer rounding of the scaled value for subnormal ones.
func roundOracle(x float64, p uint, emin, emax int) float64 {
	if math.Abs(x) < math.Ldexp(1, emin) {
		scale := int(p) - 1 - emin
		return math.Copysign(math.Ldexp(math.RoundToEven(math.Ldexp(x, scale)), -scale), x)
	}
	v, _ := new(big.Float).SetPrec(p).SetMode(big.ToNearestEven).SetFloat64(x).Float64()
	if math.Abs(v) >= math.Ldexp(1, emax+1) {
		return math.Copysign(math.Inf(1), x)
	}
	return v
}

// randomNear draws float64s around a format's whole range: random
// significands at exponents from below its subnormals to above its largest,
// and exact midpoints between neighbours, nudged either way.
func randomNear(rng *rand.Rand, emin, emax int, neighbours func(*rand.Rand) (float64, float64)) float64 {
	switch rng.IntN(3) {
	case 0:
		e := emin - 30 + rng.IntN(emax-emin+34)
		x := math.Ldexp(1+rng.Float64(), e)
		if rng.IntN(2) == 0 {
			x = -x
		}
		return x
	default:
		a, b := neighbours(rng)
		m := a/2 + b/2 // exact: halving loses nothing above float64's subnormals
		switch rng.IntN(3) {
		case 0:
			return math.Nextafter(m, math.Inf(-1))
		case 1:
			return math.Nextafter(m, math.Inf(1))
		}
		return m
	}
}

func TestNarrowRoundingAgainstOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	formats := []struct {
		name       string
		p          uint
		emin, emax int
		round      func(float64) float64
		neighbours func(*rand.Rand) (float64, float64)
	}{
		{"float16", 11, -14, 15,
			func(x float64) float64 { return coll.Float16ToFloat64(coll.Float16FromFloat64(x)) },
			func(rng *rand.Rand) (float64, float64) {
				h := uint16(rng.IntN(0x7bff)) | uint16(rng.IntN(2))<<15
				return coll.Float16ToFloat64(h), coll.Float16ToFloat64(h + 1)
			}},
		{"bfloat16", 8, -126, 127,
			func(x float64) float64 { return coll.BFloat16ToFloat64(coll.BFloat16FromFloat64(x)) },
			func(rng *rand.Rand) (float64, float64) {
				h := uint16(rng.IntN(0x7f7f)) | uint16(rng.IntN(2))<<15
				return coll.BFloat16ToFloat64(h), coll.BFloat16ToFloat64(h + 1)
			}},
		{"binary32 (generic)", 24, -126, 127,
			func(x float64) float64 { return coll.Binary32ToFloat64(coll.Binary32FromFloat64(x)) },
			func(rng *rand.Rand) (float64, float64) {
				b := uint32(rng.IntN(0x7f7fffff)) | uint32(rng.IntN(2))<<31
				return coll.Binary32ToFloat64(b), coll.Binary32ToFloat64(b + 1)
			}},
	}
	for _, f := range formats {
		for range 200000 {
			x := randomNear(rng, f.emin, f.emax, f.neighbours)
			got, want := f.round(x), roundOracle(x, f.p, f.emin, f.emax)
			if got != want || math.Signbit(got) != math.Signbit(want) {
				t.Fatalf("%s: %v (%#x) rounds to %v, want %v", f.name, x, math.Float64bits(x), got, want)
			}
		}
	}
}

// TestBinary32MatchesGo checks the generic conversion against Go's own
// float64 -> float32 conversion (the hardware's), bit for bit, which also
// vouches for the code that float16 and bfloat16 share with it.
func TestBinary32MatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 300000 {
		x := randomNear(rng, -126, 127, func(rng *rand.Rand) (float64, float64) {
			b := uint32(rng.IntN(0x7f7fffff))
			return float64(math.Float32frombits(b)), float64(math.Float32frombits(b + 1))
		})
		if got, want := coll.Binary32FromFloat64(x), math.Float32bits(float32(x)); got != want {
			t.Fatalf("binary32 of %v = %#08x, Go says %#08x", x, got, want)
		}
	}
	for _, b := range []uint32{0, 1, 0x007fffff, 0x00800000, 0x3f800000, 0x7f7fffff, 0x7f800000, 0x80000001, 0xff800000} {
		if got, want := coll.Binary32ToFloat64(b), float64(math.Float32frombits(b)); got != want {
			t.Errorf("binary32 value of %#08x = %v, want %v", b, got, want)
		}
	}
}

func TestBFloat16RoundsOnce(t *testing.T) {
	// 1 + 2^-8 + 2^-30 is above the midpoint between 1 and 1 + 2^-7, so it
	// rounds up; through float32 it would first become the midpoint
	// itself, and then round to even, down to 1.
	x := 1 + math.Ldexp(1, -8) + math.Ldexp(1, -30)
	if got := coll.BFloat16FromFloat64(x); got != 0x3f81 {
		t.Errorf("BFloat16FromFloat64(%v) = %#04x, want 0x3f81", x, got)
	}
	for _, c := range []struct {
		x    float64
		bits uint16
	}{
		{1, 0x3f80}, {-1, 0xbf80}, {math.Ldexp(1, -133), 0x0001}, {math.Ldexp(1, -134), 0},
		{math.MaxFloat32, 0x7f80}, {math.Ldexp(255, 120), 0x7f7f}, {math.Inf(-1), 0xff80},
	} {
		if got := coll.BFloat16FromFloat64(c.x); got != c.bits {
			t.Errorf("BFloat16FromFloat64(%v) = %#04x, want %#04x", c.x, got, c.bits)
		}
	}
}

func TestFloatTypes(t *testing.T) {
	want := map[coll.DType]int{coll.Float16: 11, coll.BFloat16: 8, coll.Float32: 24, coll.Float64: 53}
	for _, d := range coll.AllDTypes {
		ft, ok := coll.FloatTypeOf(d)
		if ok != d.IsFloat() {
			t.Fatalf("FloatTypeOf(%s) ok = %v, IsFloat = %v", d, ok, d.IsFloat())
		}
		if !ok {
			continue
		}
		if ft.DType != d || ft.Precision != want[d] || ft.UnitRoundoff != math.Ldexp(1, -want[d]) {
			t.Errorf("%s: %+v", d, ft)
		}
		b := make([]byte, d.Size())
		ft.Encode(-0.75, b)
		if got := ft.Decode(b); got != -0.75 {
			t.Errorf("%s: -0.75 encodes as %x and decodes as %v", d, b, got)
		}
		// 1 + u is the midpoint above 1: ties to even, 1.
		if got := ft.Round(1 + ft.UnitRoundoff); got != 1 {
			t.Errorf("%s: Round(1+u) = %v", d, got)
		}
		if got := ft.Round(1 + 3*ft.UnitRoundoff); got != 1+4*ft.UnitRoundoff {
			t.Errorf("%s: Round(1+3u) = %v", d, got)
		}
	}
}

func TestULPDistance(t *testing.T) {
	f16, _ := coll.FloatTypeOf(coll.Float16)
	f32, _ := coll.FloatTypeOf(coll.Float32)
	f64, _ := coll.FloatTypeOf(coll.Float64)
	enc := func(ft coll.FloatType, x float64) []byte {
		b := make([]byte, ft.DType.Size())
		ft.Encode(x, b)
		return b
	}
	cases := []struct {
		ft   coll.FloatType
		a, b float64
		want uint64
	}{
		{f16, 1, 1, 0},
		{f16, 1, 1 + math.Ldexp(1, -10), 1},
		{f16, 1 + math.Ldexp(1, -10), 1, 1},
		{f16, 0, math.Copysign(0, -1), 0},
		{f16, math.Ldexp(1, -24), -math.Ldexp(1, -24), 2},
		{f16, 65504, math.Inf(1), 1},
		{f16, 1, 2, 1024},
		{f16, -1, 1, 2 * 0x3c00},
		{f32, 1, 2, 1 << 23},
		{f32, -1, -2, 1 << 23},
		{f64, 1, math.Nextafter(1, 2), 1},
		{f64, -math.MaxFloat64, math.MaxFloat64, 2 * 0x7fefffffffffffff},
	}
	for _, c := range cases {
		if got := c.ft.ULPDistance(enc(c.ft, c.a), enc(c.ft, c.b)); got != c.want {
			t.Errorf("%s: ULPDistance(%v, %v) = %d, want %d", c.ft.DType, c.a, c.b, got, c.want)
		}
	}
	if got := f32.ULPDistance(enc(f32, math.NaN()), enc(f32, 1)); got != math.MaxUint64 {
		t.Errorf("ULPDistance(NaN, 1) = %d, want MaxUint64", got)
	}
}
