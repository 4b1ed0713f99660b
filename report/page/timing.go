// The page's timing section: its table of cases, one column a dimension
// that varies.

package page

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"rsag/coll"
	"rsag/report"
	"rsag/report/plot"
)

// caseText names a statistic's case: "run default float32 sum out-of-place per-op".
func caseText(t report.TimingStat) string {
	var parts []string
	for i, d := range coll.Dims {
		if v := d.Text(t.Case); v != d.Usual {
			if i == 0 {
				v = d.Name + " " + v
			}
			parts = append(parts, v)
		}
	}
	return strings.Join(parts, " ")
}

// modeLabel is how a table heads a mode (a coll.Mode, or its name).
func modeLabel(mode any) string {
	name := coll.Mode(text(mode))
	if m, ok := coll.ModeOf(name); ok {
		return m.Label
	}
	return string(name)
}

// dim is a dimension of a timing case as a table shows it (coll.Dims).
type dim = coll.Dim

// splitDims sorts the dimensions into those that vary over stats (the
// table's columns) and the values of those that do not (its caption).
func splitDims(stats []report.TimingStat, skip ...string) (varying []dim, fixed []string) {
	for _, d := range coll.Dims {
		if slices.Contains(skip, d.Name) {
			continue
		}
		values := unique(stats, func(t report.TimingStat) string { return d.Text(t.Case) })
		if len(values) > 1 {
			varying = append(varying, d)
		} else if len(values) == 1 && values[0] != d.Usual {
			fixed = append(fixed, values[0])
		}
	}
	return varying, fixed
}

func timingSection(s report.Summary, figs map[string][]plot.Inline) section {
	sec := section{ID: "timing", Title: "Timing",
		How: fmt.Sprintf("Microseconds per operation. A sample is the slowest of the %d ranks in one cycle; a row gives a case's mode the median "+
			"[p10..p90], the p99 and the maximum of its kept samples, the terminal's figures, and draws them: the whisker from the minimum to the maximum, "+
			"the box from p10 to p90, the bar at the median, the dot at the p99, on one log scale from half the median to %gx it (the faint line is 2x), "+
			"so that the tails of every row compare. Bus bandwidth (GB/s) is nccl-tests' from the median; vs AR is the median over direct AllReduce's; "+
			"the slowest rank is the one whose own median is highest. A click on a column's heading sorts by it.", s.WorldSize, distHi)}
	if len(s.Timing) == 0 {
		sec.Empty = absent(s, "timing")
		return sec
	}
	if len(s.Nodes) > 1 {
		sec.Blocks = append(sec.Blocks, block{Notes: []string{fmt.Sprintf("Across %d nodes: the bandwidth is bounded by the network between them (NIC, switch), not by NVLink.", len(s.Nodes))}})
	}
	for _, note := range []string{report.CrowdedNote(s.Nodes), s.GPUShared} {
		if note != "" {
			sec.Blocks = append(sec.Blocks, block{Notes: []string{strings.ToUpper(note[:1]) + note[1:] + "."}})
		}
	}
	runs := unique(s.Timing, func(t report.TimingStat) string { return text(t.Run) })
	for _, run := range runs {
		var stats []report.TimingStat
		for _, t := range s.Timing {
			if text(t.Run) == run {
				stats = append(stats, t)
			}
		}
		// The figures first, to read at a glance, then the table to look
		// values up in: a sweep's table runs to hundreds of rows.
		if len(runs) > 1 || run != "default" {
			sec.Blocks = append(sec.Blocks, block{Heading: "Run " + run})
		}
		for _, kind := range []string{plot.TimeVsSize, plot.BusBWVsSize, plot.RatioVsSize} {
			sec.Blocks = append(sec.Blocks, figuresFor(figs, kind, run)...)
		}
		sec.Blocks = append(sec.Blocks, block{Table: timingTable(stats)})
	}
	return sec
}

// timingTable is one run's timings as the terminal shows them: a row per
// case and mode, its median [p10..p90], p99 and maximum, a strip of that
// distribution (distStrip), its bus bandwidth, its median over direct
// AllReduce's and its slowest rank.
func timingTable(stats []report.TimingStat) *table {
	varying, fixed := splitDims(stats, "run")
	direct := map[coll.Case]report.TimingStat{}
	modes := map[coll.Mode]bool{}
	for _, st := range stats {
		modes[st.Mode] = true
		if st.Mode == coll.Direct {
			direct[st.Pair()] = st
		}
	}
	vsAR := len(direct) > 0 && len(modes) > 1
	var legend []string
	for _, name := range coll.Modes {
		if m, _ := coll.ModeOf(name); modes[name] {
			legend = append(legend, m.Short+" "+m.Title)
		}
	}
	t := &table{Sortable: true, Caption: strings.Join(append(fixed, "µs per operation; a sample is the slowest rank's in a cycle; modes: "+
		strings.Join(legend, ", ")), " · ")}
	for _, d := range varying {
		t.Head = append(t.Head, headCell{Text: d.Name})
	}
	t.Head = append(t.Head, heads("size", "mode", "median [p10..p90]", "p99", "max", "distribution", "busbw GB/s")...)
	if vsAR {
		t.Head = append(t.Head, headCell{Text: "vs AR"})
	}
	t.Head = append(t.Head, headCell{Text: "slowest rank"})
	// Rows in the order of the cases, each case's modes in coll.Modes' order.
	var pairs []coll.Case
	byPair := map[coll.Case][]report.TimingStat{}
	for _, st := range stats {
		if _, ok := byPair[st.Pair()]; !ok {
			pairs = append(pairs, st.Pair())
		}
		byPair[st.Pair()] = append(byPair[st.Pair()], st)
	}
	var ordered []report.TimingStat
	for _, p := range pairs {
		of := byPair[p]
		slices.SortStableFunc(of, func(a, b report.TimingStat) int {
			return rankOf(coll.Modes, a.Mode) - rankOf(coll.Modes, b.Mode)
		})
		ordered = append(ordered, of...)
	}
	for _, st := range ordered {
		m, _ := coll.ModeOf(st.Mode)
		var r row
		for _, d := range varying {
			r.Cells = append(r.Cells, plain(orDash(d.Text(st.Case))))
		}
		med := cell{Text: fmt.Sprintf("%s [%s..%s]", report.USText(st.MedianUS), report.USText(st.P10US), report.USText(st.P90US)),
			Sort: sortKey(st.MedianUS), Class: "n"}
		if !st.Correct {
			med.Text, med.Class, r.Class = med.Text+" ✗ wrong", "n bad", "bad"
		}
		r.Cells = append(r.Cells, size(st.SizeBytes), cell{Text: orDash(m.Short), Class: "m m-" + string(st.Mode)}, med,
			us(st.P99US), us(st.MaxUS), cell{HTML: distStrip(st), Sort: sortKey(st.MaxUS / math.Max(st.MedianUS, 1e-9))},
			num("%.2f", st.BusBWGBps))
		if vsAR {
			if d, ok := direct[st.Pair()]; ok && st.Mode != coll.Direct && d.MedianUS > 0 {
				r.Cells = append(r.Cells, num("%.3f", st.MedianUS/d.MedianUS))
			} else {
				r.Cells = append(r.Cells, plain("-"))
			}
		}
		r.Cells = append(r.Cells, cell{Text: fmt.Sprint(st.SlowestRank), Sort: fmt.Sprint(st.SlowestRank), Class: "n"})
		t.Rows = append(t.Rows, r)
	}
	return t
}

// rankOf is v's place in order, past every known one when it is not there.
func rankOf[T comparable](order []T, v T) int {
	if i := slices.Index(order, v); i >= 0 {
		return i
	}
	return len(order)
}
