package config

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// The bounds on every count and size a config gives, documented in
// docs/config.md. Each is far beyond any sensible run, so that a value past one is a
// typo (cycles = 1e12, a missing unit), refused before it runs for days or
// overflows arithmetic downstream (timeout_s x time.Second, 4 x a size).
const (
	// MaxSizeBytes bounds every buffer size: 1 TiB, several times any
	// device's memory today, and small enough that the footprints computed
	// from it (a few times the size) cannot overflow int64.
	MaxSizeBytes = 1 << 40
	// MaxSizes bounds the sizes of one sweep (a list, or a range expanded).
	MaxSizes = 64
	// MaxWarmups and MaxCycles bound the iterations per case and mode.
	MaxWarmups = 1_000_000
	MaxCycles  = 100_000_000
	// MaxBatch bounds the operations per batched or graph sample.
	MaxBatch = 10_000
	// MaxFactor bounds a size range's factor (1024 steps from 1K to 1M).
	MaxFactor = 1024
	// MaxTimeoutS is one day: the watchdog's deadline for one collective.
	// MinTimeoutS is a millisecond, the watchdog's finest check: a
	// deadline takes fractions of a second (0.5), down to it.
	MaxTimeoutS = 86_400
	MinTimeoutS = 0.001
	// MaxRanks bounds required_ranks and hierarchy.group_size.
	MaxRanks = 1 << 24
	// MaxRuns bounds the [[run]] tables.
	MaxRuns = 64
	// MaxSeed is the largest numerics seed: 2^53-1, the largest integer a
	// JSON reader in any language (a float64) reads back exactly.
	MaxSeed = 1<<53 - 1
	// MaxBusBWGBps bounds min_busbw_gbps: 100 TB/s, over 100 times any
	// link's bus bandwidth today.
	MaxBusBWGBps = 100_000
	// MaxOffsetBytes bounds a buffer offset: 1 MiB, far past any alignment
	// a library or a page cares about.
	MaxOffsetBytes = 1 << 20
	// MaxLocateRepeats, MaxLocateIterations and MaxLocateWarmups bound the
	// locate phase's measurements of each unit; MaxPartners the partners
	// of its sampled schedule (above 1024 nodes it is every pair's worth
	// of rounds anyway).
	MaxLocateRepeats    = 1000
	MaxLocateIterations = 10_000
	MaxLocateWarmups    = 1000
	MaxPartners         = 1024
)

// deadlineOutOfRange is the one check of a deadline in seconds (timeout_s,
// startup_timeout_s), which takes fractions: "" when it is a number from
// MinTimeoutS to MaxTimeoutS, or 0 where zeroOK (0: another's). give says
// what to give instead.
func deadlineOutOfRange(v float64, zeroOK bool, give string) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	switch {
	case math.IsNaN(v):
		return "nan is not a number: give " + give
	case math.IsInf(v, 0):
		return fmt.Sprintf("%v is not finite: give %s", v, give)
	case v == 0 && zeroOK:
		return ""
	case v <= 0:
		return fmt.Sprintf("%s is not a deadline: give %s", s, give)
	case v < MinTimeoutS:
		return fmt.Sprintf("%s is below rsag's bound of %v seconds (a millisecond, the watchdog's finest check): use at least %v", s, MinTimeoutS, MinTimeoutS)
	case v > MaxTimeoutS:
		return fmt.Sprintf("%s is above rsag's bound of %d seconds (one day): use at most %d", s, MaxTimeoutS, MaxTimeoutS)
	}
	return ""
}

// Seconds is a deadline given in seconds, fractions too, as a duration:
// to the nanosecond, as exact as the float allows.
func Seconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }

// intRule is one count's bounds: below lo the key's own advice (a format
// taking the value), above hi the bound, named.
type intRule struct {
	key    string
	v      int64
	lo, hi int64
	low    string
	noun   string // what the count counts, for the bound's message
}

// outOfRange is the one check of integers: "" when r.lo <= r.v <= r.hi.
func (r intRule) outOfRange() string {
	switch {
	case r.v < r.lo:
		return fmt.Sprintf(r.low, r.v)
	case r.v > r.hi:
		return fmt.Sprintf("%d is above rsag's bound of %d %s: use at most %d", r.v, r.hi, r.noun, r.hi)
	}
	return ""
}

// floatOutOfRange is the one check of floats: NaN and the infinities are
// refused everywhere, then lo <= v <= hi. what says what the key means.
func floatOutOfRange(v, lo, hi float64, unit, what string) string {
	switch {
	case math.IsNaN(v):
		return fmt.Sprintf("nan is not a number: give %s", what)
	case math.IsInf(v, 0):
		return fmt.Sprintf("%v is not finite: give %s", v, what)
	case v < lo:
		return fmt.Sprintf("%v is negative: give %s", v, what)
	case v > hi:
		return fmt.Sprintf("%v is above rsag's bound of %v %s: give %s", v, hi, unit, what)
	}
	return ""
}

// sizeOutOfRange is the one check of sizes: positive and within
// MaxSizeBytes. advice says what the key takes.
func sizeOutOfRange(s Size, advice string) string {
	switch {
	case s <= 0:
		return fmt.Sprintf("%d is not a positive size: %s", s, advice)
	case s > MaxSizeBytes:
		return fmt.Sprintf("%d bytes (%s) is above rsag's bound of %s (%d bytes) on a size: use a smaller size", s, s, Size(MaxSizeBytes), int64(MaxSizeBytes))
	}
	return ""
}

// firstDuplicate returns the first value listed twice.
func firstDuplicate[T comparable](values []T) (T, bool) {
	seen := map[T]bool{}
	for _, v := range values {
		if seen[v] {
			return v, true
		}
		seen[v] = true
	}
	var zero T
	return zero, false
}
