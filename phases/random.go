package phases

import (
	"math"
	"math/bits"

	"rsag/coll"
)

// RNG is one rank's counter-based random-number generator: the numerics
// phase's inputs. Element i is a function of (seed, rank, i) alone, with no state
// carried from one element to the next, so any rank can regenerate any
// other rank's input at any index, the same on every machine and run.
//
// Element i comes from word i, output i of SplitMix64 (Steele, Lea and Flood, "Fast
// splittable pseudorandom number generators", 2014; Vigna's splitmix64.c)
// started from the rank's key, which is itself SplitMix64-mixed from the
// seed and the rank. SplitMix64's state advances by a constant, so output i
// is mix(key + (i+1)*gamma): a counter, hashed.
type RNG struct{ key uint64 }

// gamma is SplitMix64's increment, the odd integer nearest 2^64/phi.
const gamma = 0x9e3779b97f4a7c15

// mix64 is SplitMix64's output function (Stafford's Mix13): a bijection
// of 64-bit words that spreads every input bit over every output bit.
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// NewRNG returns rank's stream for seed. Different ranks of one seed
// get different keys (mix64 is a bijection).
func NewRNG(seed uint64, rank int) RNG {
	return RNG{key: mix64(seed ^ mix64(uint64(rank)+gamma))}
}

// Uint64 is the stream's 64-bit word at index i.
func (s RNG) Uint64(i int) uint64 { return mix64(s.key + uint64(i+1)*gamma) }

// Float64 is the stream's value at index i, uniform in (-1, 1) with every
// one of float64's 53 significand bits random at any magnitude: a random
// sign, 52 random fraction bits, and the exponent -1-k with probability
// 2^-(k+1) (k the leading zeros of a second word mixed from the first).
// The usual k*2^-52 - 1 would be fixed point: its small values carry fewer
// significant bits, and sums of three or four of them never round.
func (s RNG) Float64(i int) float64 {
	w := s.Uint64(i)
	k := bits.LeadingZeros64(mix64(w ^ gamma))
	frac := w & (1<<52 - 1)
	v := math.Ldexp(float64(1<<52|frac), -53-k)
	if w>>63 == 1 {
		return -v
	}
	return v
}

// Value is Float64(i) rounded toward zero to the float type ft: a value of
// the dtype, still in (-1, 1).
func (s RNG) Value(ft coll.FloatType, i int) float64 { return ft.TowardZero(s.Float64(i)) }
