package report

import (
	"fmt"

	"rsag/coll"
)

// The rows as they travel from every rank to rank 0, in the one gather at
// the end of a run. A rank's timing rows are most of its rows (one a
// sample), and each repeats its rank, host and case: as JSON, about 300
// bytes a row, so that 8,000 ranks of a 100-cycle seed run (5 sizes, 2
// modes: 8 million rows) would pass what one MPI gather can count (2 GiB)
// after every sample was taken. Packed, a row is about 25 bytes:
// the rows of one rank, host and case share one header and keep only
// their cycles, durations and verdicts; a row's place among the others
// (the modes take turns, cycle by cycle) is the index of its series.

// PackedRows are a rank's Rows with the timing rows packed.
type PackedRows struct {
	Rows   Rows           // every row but the timing rows
	Timing []TimingSeries // the timing rows of each rank, host and case
	Order  []int          // each timing row's series, in the rows' order
}

// TimingSeries are the timing rows of one rank, host and case, in order.
type TimingSeries struct {
	Rank        int
	Host        string
	Case        coll.Case
	Cycles      []int
	DurationsUS []float64
	// Correct are the verdicts, a digit each: Verdict's text ("True",
	// "False" or nothing) would be a quarter of a packed sample's bytes.
	Correct []int8
}

type seriesKey struct {
	rank int
	host string
	c    coll.Case
}

// Pack packs r's timing rows; MergePacked gives them back.
func Pack(r Rows) PackedRows {
	p := PackedRows{Rows: r}
	p.Rows.Timings = nil
	p.Order = make([]int, 0, len(r.Timings))
	index := map[seriesKey]int{}
	for _, t := range r.Timings {
		k := seriesKey{t.Rank, t.Host, t.Case}
		i, ok := index[k]
		if !ok {
			i = len(p.Timing)
			index[k] = i
			p.Timing = append(p.Timing, TimingSeries{Rank: t.Rank, Host: t.Host, Case: t.Case})
		}
		s := &p.Timing[i]
		s.Cycles = append(s.Cycles, t.Cycle)
		s.DurationsUS = append(s.DurationsUS, t.DurationUS)
		s.Correct = append(s.Correct, int8(t.Correct))
		p.Order = append(p.Order, i)
	}
	return p
}

// MergePacked is Merge of every rank's packed rows, each rank's timing
// rows unpacked straight into the merged ones, so that rank 0 holds every
// row once; a rank's packed rows are let go once read.
func MergePacked(all []PackedRows) (Rows, error) {
	rest := make([]Rows, len(all))
	n := 0
	for r, p := range all {
		rest[r] = p.Rows
		n += len(p.Order)
	}
	merged := Merge(rest)
	merged.Timings = make([]TimingRow, 0, n)
	for r := range all {
		var err error
		if merged.Timings, err = all[r].appendTimings(merged.Timings); err != nil {
			return Rows{}, fmt.Errorf("rank %d's result rows: %w", r, err)
		}
		all[r] = PackedRows{}
	}
	return merged, nil
}

// appendTimings appends p's timing rows, in order, to dst. It refuses
// what does not add up: a series whose columns differ in length, a
// verdict that is none, or an order that names a series that is not there
// or leaves rows unread.
func (p PackedRows) appendTimings(dst []TimingRow) ([]TimingRow, error) {
	for i, s := range p.Timing {
		if len(s.DurationsUS) != len(s.Cycles) || len(s.Correct) != len(s.Cycles) {
			return nil, fmt.Errorf("timing series %d: %d cycles, %d durations and %d verdicts", i, len(s.Cycles), len(s.DurationsUS), len(s.Correct))
		}
	}
	next := make([]int, len(p.Timing))
	for row, i := range p.Order {
		if i < 0 || i >= len(p.Timing) || next[i] == len(p.Timing[i].Cycles) {
			return nil, fmt.Errorf("timing row %d: its series %d is not there or has no row left", row, i)
		}
		s, k := &p.Timing[i], next[i]
		next[i]++
		v := Verdict(s.Correct[k])
		if _, ok := verdictText[v]; !ok {
			return nil, fmt.Errorf("timing series %d, cycle %d: %d is not a check's verdict", i, s.Cycles[k], s.Correct[k])
		}
		dst = append(dst, TimingRow{Rank: s.Rank, Case: s.Case, Cycle: s.Cycles[k], DurationUS: s.DurationsUS[k], Correct: v, Host: s.Host})
	}
	for i, s := range p.Timing {
		if next[i] != len(s.Cycles) {
			return nil, fmt.Errorf("timing series %d: %d of its %d rows are in no place", i, len(s.Cycles)-next[i], len(s.Cycles))
		}
	}
	return dst, nil
}
