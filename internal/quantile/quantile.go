// Package quantile computes the order statistics rsag reports, by the
// methods numpy uses by default, so that a user's notebook gets the same
// numbers from the same samples.
package quantile

import (
	"math"
	"slices"
)

// Median of v by the usual definition: the middle sorted value, or the mean
// of the two middle values for an even count (numpy.median's). NaN if empty.
func Median(v []float64) float64 {
	return Of(v, 0.5)
}

// Of is the q-quantile of v by linear interpolation between closest
// ranks (numpy's default "linear" method, Hyndman & Fan type 7).
func Of(v []float64, q float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	lo := int(pos)
	if lo+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[lo] + (pos-float64(lo))*(s[lo+1]-s[lo])
}
