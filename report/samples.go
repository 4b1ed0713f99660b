package report

import (
	"slices"

	"rsag/coll"
)

// CaseSamples are each case's samples as its statistics see them (see
// TimingStats): per cycle, the slowest rank's time, in cycle order, the
// first discard[case] cycles dropped. rsag check bootstraps its intervals
// from them; summary.json keeps only their statistics.
func CaseSamples(rows []TimingRow, discard func(coll.Case) int) map[coll.Case][]float64 {
	cycleMax := map[coll.Case]map[int]float64{}
	for _, r := range rows {
		m := cycleMax[r.Case]
		if m == nil {
			m = map[int]float64{}
			cycleMax[r.Case] = m
		}
		if d, ok := m[r.Cycle]; !ok || r.DurationUS > d {
			m[r.Cycle] = r.DurationUS
		}
	}
	out := make(map[coll.Case][]float64, len(cycleMax))
	for k, m := range cycleMax {
		cycles := make([]int, 0, len(m))
		for c := range m {
			cycles = append(cycles, c)
		}
		slices.Sort(cycles)
		cycles = cycles[min(max(0, discard(k)), len(cycles)):]
		v := make([]float64, len(cycles))
		for i, c := range cycles {
			v[i] = m[c]
		}
		out[k] = v
	}
	return out
}
