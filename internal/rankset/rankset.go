// Package rankset writes a set of ranks in words whose length is bounded
// whatever the world's size: runs of ranks as ranges ("1-7,10-1023"), and
// past a few dozen parts, a count of the rest. Every message, line and
// table cell that names many ranks goes through it, so that a job of 8,192
// ranks says "ranks 0-8191", not 8,192 numbers.
package rankset

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxParts is how many ranges and single ranks Text writes before it
// counts the rest: enough for any pattern a person reads whole, few
// enough that a line stays a line.
const MaxParts = 16

// Text writes the ranks in v (in any order, repeats ignored) ascending,
// as Join with ",": "0-3,6,8".
func Text(v []int) string {
	v = slices.Clone(v)
	slices.Sort(v)
	return Join(slices.Compact(v), ",")
}

// Join writes v in its order, ascending runs of three or more as a range,
// the parts joined by sep: "0-3,6,8". Past MaxParts parts, the rest is
// counted: "0,2,4,... and 4080 more parts (4096 ranks in all)".
func Join(v []int, sep string) string {
	var parts []string
	rest := 0
	for i := 0; i < len(v); {
		j := i
		for j+1 < len(v) && v[j+1] == v[j]+1 {
			j++
		}
		var p []string
		if j-i >= 2 {
			p = []string{fmt.Sprintf("%d-%d", v[i], v[j])}
		} else {
			for k := i; k <= j; k++ {
				p = append(p, strconv.Itoa(v[k]))
			}
		}
		for _, x := range p {
			if len(parts) < MaxParts {
				parts = append(parts, x)
			} else {
				rest++
			}
		}
		i = j + 1
	}
	s := strings.Join(parts, sep)
	if rest > 0 {
		s += fmt.Sprintf("%s... and %d more parts (%d ranks in all)", sep, rest, len(v))
	}
	return s
}

// Ranks is "rank 3" or "ranks 0-3,6" (Text): the noun agrees with the
// count.
func Ranks(v []int) string {
	if len(slices.Compact(slices.Sorted(slices.Values(v)))) == 1 {
		return "rank " + strconv.Itoa(v[0])
	}
	return "ranks " + Text(v)
}

// Names joins names (hosts) with ", ", at most MaxParts of them, then a
// count of the rest: a message about every node of a fleet names a few.
func Names(names []string) string {
	if len(names) <= MaxParts {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s, ... and %d more", strings.Join(names[:MaxParts], ", "), len(names)-MaxParts)
}
