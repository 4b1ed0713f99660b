package phase

import (
	"math/bits"
	"slices"
	"strconv"
)

// CPUMask is the processors a rank may run on: bit i%8 of byte i/8 for
// processor i (the affinity mask its launcher bound it to).
type CPUMask []byte

// With is m with processor i added.
func (m CPUMask) With(i int) CPUMask {
	for len(m) <= i/8 {
		m = append(m, 0)
	}
	m[i/8] |= 1 << (i % 8)
	return m
}

// Bytes is the mask as it travels between ranks.
func (m CPUMask) Bytes() []byte { return slices.Clone(m) }

// MaskOf is the mask Bytes made.
func MaskOf(b []byte) CPUMask { return slices.Clone(b) }

// union is every processor of any of masks.
func union(masks ...CPUMask) CPUMask {
	var u CPUMask
	for _, m := range masks {
		for len(u) < len(m) {
			u = append(u, 0)
		}
		for i, b := range m {
			u[i] |= b
		}
	}
	return u
}

// List is the mask's processors, ascending.
func (m CPUMask) List() []int {
	var out []int
	for i, b := range m {
		for j := range 8 {
			if b&(1<<j) != 0 {
				out = append(out, 8*i+j)
			}
		}
	}
	return out
}

// Count is how many processors the mask holds.
func (m CPUMask) Count() int {
	n := 0
	for _, b := range m {
		n += bits.OnesCount8(b)
	}
	return n
}

// Crowded says, by node (the plan's order), where that node's ranks
// outnumber the processors they may run on between them: "4 ranks on 2
// processors", or "" where each rank can have one of its own. masks of
// none (unknown) crowd nothing.
func Crowded(ranks [][]int, masks []CPUMask) []string {
	out := make([]string, len(ranks))
	for n, rs := range ranks {
		var of []CPUMask
		for _, r := range rs {
			if r < len(masks) {
				of = append(of, masks[r])
			}
		}
		if cpus := union(of...).Count(); cpus > 0 && len(rs) > cpus {
			out[n] = plural(len(rs), "rank") + " on " + plural(cpus, "processor")
		}
	}
	return out
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
