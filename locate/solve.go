package locate

import (
	"math"
	"slices"

	"rsag/internal/quantile"
)

// DefaultThreshold is the figure below which a unit is slow: 0.8 of the
// median.
const DefaultThreshold = 0.8

// spreadQuantile is the quantile of the healthy units' distances from the
// median that a suspect must lie beyond: nearly all of them, but not one
// outlier that happens to be fast.
const spreadQuantile = 0.99

// Probe is one measurement each unit takes: a collective at a size.
type Probe struct {
	Name string // what reports say: "AllReduce 1M"
	// Latency says the size is latency-bound (small); otherwise it is
	// bandwidth-bound. A suspect's problem is the kind of the probe at
	// which it is furthest below the median.
	Latency bool
}

// Problem names a probe's kind.
func (p Probe) Problem() string {
	if p.Latency {
		return "latency"
	}
	return "bandwidth"
}

// Input is one level's measurements: its members (the nodes, or the ranks
// of every node), what each ran on its own (Inside: nil when it did not)
// and in pairs. A speed is a bus bandwidth (higher is faster), NaN where
// there is none; index [probe][unit][repeat].
type Input struct {
	Members int
	Probes  []Probe
	Inside  [][][]float64 // units are the members
	Pairs   []Pair
	Speed   [][][]float64 // units are Pairs
	// Excluded members are explained at a coarser level (a rank of a
	// suspect node): they are judged, but neither set a median nor become
	// suspects.
	Excluded  []bool
	Threshold float64
}

// Figure is one unit's measurement at one probe against the median.
type Figure struct {
	Ratio  float64 // median over repeats of speed / the repeat's median
	Speed  float64 // median over repeats
	Median float64 // median over repeats of the repeat's median over units
	// SlowRepeats counts the repeats in which the unit was below the
	// threshold; Suspect says it was in every one and beyond the spread.
	SlowRepeats int
	Suspect     bool
}

// Verdict is one unit's figures and whether it is a suspect.
type Verdict struct {
	Figures []Figure // per probe; nil when the unit was not measured
	Suspect bool
	Worst   int // the probe at which it is furthest below the median; -1 with no figure
	// By names what made a member a suspect: ByInside, ByPartners or
	// both (Result.Members only).
	By []string
}

// What makes a member a suspect.
const (
	ByInside   = "inside"
	ByPartners = "pairs"
)

// Problem is the suspect's kind of problem: the kind of its worst probe.
func (v Verdict) Problem(probes []Probe) string {
	if v.Worst < 0 {
		return ""
	}
	return probes[v.Worst].Problem()
}

// Result is the attribution of one level.
type Result struct {
	Inside []Verdict // per member; nil without an inside step
	// Partners is each member against the others from its pairs: its
	// pair figure is its k-th slowest pair's (partnerSpeed), so that it
	// is slow only when it is with most of its partners, and with every
	// one of up to three: a slow link, or a noisy pair, leaves its two
	// members alone.
	Partners []Verdict
	Members  []Verdict // a member is a suspect when it is by Inside or Partners
	Pairs    []Verdict // per Input.Pairs, against the median of the pairs between members that are no suspects
	// Spread is, per probe, how far from the median (as a factor) the
	// healthy pairs lie: a suspect link is further below.
	Spread []float64
}

// Solve attributes every slowness of in: first the members (by their own
// inside measurement, and by their pairs), then the pairs between members
// that are no suspects.
func Solve(in Input) Result {
	if in.Threshold <= 0 {
		in.Threshold = DefaultThreshold
	}
	excluded := func(m int) bool { return m < len(in.Excluded) && in.Excluded[m] }
	members := make([]bool, in.Members)
	for m := range members {
		members[m] = !excluded(m)
	}
	var res Result
	if in.Inside != nil {
		res.Inside, _ = judgeAll(in.Inside, in.Probes, members, in.Threshold)
	}
	// Each member's speed with its partners, per repeat.
	partners := make([][]int, in.Members)
	for i, p := range in.Pairs {
		partners[p.A] = append(partners[p.A], i)
		partners[p.B] = append(partners[p.B], i)
	}
	if len(in.Pairs) > 0 {
		bySpeed := make([][][]float64, len(in.Probes))
		for pr := range in.Probes {
			bySpeed[pr] = make([][]float64, in.Members)
			for m := range in.Members {
				bySpeed[pr][m] = partnerSpeed(in.Speed[pr], partners[m])
			}
		}
		res.Partners, _ = judgeAll(bySpeed, in.Probes, members, in.Threshold)
	}
	res.Members = make([]Verdict, in.Members)
	suspect := make([]bool, in.Members)
	for m := range res.Members {
		var from []Verdict
		var by []string
		for i, vs := range [][]Verdict{res.Inside, res.Partners} {
			if vs != nil {
				from = append(from, vs[m])
				if vs[m].Suspect {
					by = append(by, []string{ByInside, ByPartners}[i])
				}
			}
		}
		res.Members[m] = merge(from)
		res.Members[m].By = by
		suspect[m] = res.Members[m].Suspect
	}
	if len(in.Pairs) > 0 {
		counted := make([]bool, len(in.Pairs))
		for i, p := range in.Pairs {
			counted[i] = !suspect[p.A] && !suspect[p.B] && !excluded(p.A) && !excluded(p.B)
		}
		res.Pairs, res.Spread = judgeAll(in.Speed, in.Probes, counted, in.Threshold)
	}
	return res
}

// merge is a member's verdict from its steps: a suspect when any step
// says so; its worst figure is the worst of the steps that do (or, for a
// healthy member, of all).
func merge(from []Verdict) Verdict {
	v := Verdict{Worst: -1}
	best := math.Inf(1)
	for _, f := range from {
		if f.Worst < 0 {
			continue
		}
		r := f.Figures[f.Worst].Ratio
		if f.Suspect && !v.Suspect || f.Suspect == v.Suspect && r < best {
			v.Suspect, v.Worst, v.Figures, best = f.Suspect, f.Worst, f.Figures, r
		}
	}
	return v
}

// judgeAll judges every unit at every probe: speed[probe][unit][repeat],
// the medians and the spread taken over the counted units only. A unit is
// a suspect when it is one at most of the probes of one kind (latency or
// bandwidth: with three collectives at a size, two of them), since a real
// fault slows every collective at the sizes it limits while noise hits
// measurements one at a time. Its worst probe is then the one of that kind
// furthest below the median; a unit that is no suspect has its lowest.
func judgeAll(speed [][][]float64, probes []Probe, counted []bool, threshold float64) ([]Verdict, []float64) {
	units := len(counted)
	out := make([]Verdict, units)
	for u := range out {
		out[u].Worst = -1
	}
	spread := make([]float64, len(speed))
	for pr, s := range speed {
		figs, sp := judge(s, counted, threshold)
		spread[pr] = sp
		for u, f := range figs {
			if math.IsNaN(f.Ratio) {
				continue
			}
			v := &out[u]
			if v.Figures == nil {
				v.Figures = make([]Figure, len(speed))
				for i := range v.Figures {
					v.Figures[i] = Figure{Ratio: math.NaN(), Speed: math.NaN(), Median: math.NaN()}
				}
			}
			v.Figures[pr] = f
		}
	}
	for u := range out {
		v := &out[u]
		if v.Figures == nil {
			continue
		}
		suspect := map[bool]int{} // by Probe.Latency: probes at which it is a suspect
		total := map[bool]int{}
		for pr, f := range v.Figures {
			if math.IsNaN(f.Ratio) {
				continue
			}
			total[probes[pr].Latency]++
			if f.Suspect {
				suspect[probes[pr].Latency]++
			}
		}
		for pr, f := range v.Figures {
			if math.IsNaN(f.Ratio) {
				continue
			}
			// A suspect probe counts only where most of its kind are.
			f.Suspect = f.Suspect && 2*suspect[probes[pr].Latency] > total[probes[pr].Latency]
			v.Figures[pr].Suspect = f.Suspect
			if f.Suspect && !v.Suspect || f.Suspect == v.Suspect && (v.Worst < 0 || f.Ratio < v.Figures[v.Worst].Ratio) {
				v.Suspect, v.Worst = f.Suspect, pr
			}
		}
	}
	return out, spread
}

// judge compares every unit's speed[unit][repeat] with the median over the
// counted units of the same repeat. A counted unit is a suspect when it is
// below threshold x median in every repeat it has and its median ratio is
// further below 1 than spreadQuantile of the healthy counted units lie from
// 1 on either side. It returns the figures and that spread, as a factor
// (1.1: the healthy units lie within 10% of the median).
func judge(speed [][]float64, counted []bool, threshold float64) ([]Figure, float64) {
	repeats := 0
	for _, s := range speed {
		repeats = max(repeats, len(s))
	}
	medians := make([]float64, repeats)
	for r := range medians {
		var v []float64
		for u, s := range speed {
			if counted[u] && r < len(s) && !math.IsNaN(s[r]) {
				v = append(v, s[r])
			}
		}
		medians[r] = quantile.Median(v)
	}
	figs := make([]Figure, len(speed))
	for u, s := range speed {
		var ratios, speeds, meds []float64
		slow := 0
		for r, x := range s {
			if math.IsNaN(x) || !(medians[r] > 0) {
				continue
			}
			ratio := x / medians[r]
			ratios, speeds, meds = append(ratios, ratio), append(speeds, x), append(meds, medians[r])
			if ratio < threshold {
				slow++
			}
		}
		figs[u] = Figure{Ratio: quantile.Median(ratios), Speed: quantile.Median(speeds), Median: quantile.Median(meds), SlowRepeats: slow}
		figs[u].Suspect = counted[u] && len(ratios) > 0 && slow == len(ratios)
	}
	var healthy []float64
	for u, f := range figs {
		if counted[u] && !math.IsNaN(f.Ratio) && f.Ratio >= threshold && f.Ratio > 0 {
			healthy = append(healthy, math.Abs(math.Log(f.Ratio)))
		}
	}
	spread := 0.0
	if len(healthy) > 0 {
		spread = quantile.Of(healthy, spreadQuantile)
	}
	for u := range figs {
		if figs[u].Suspect && !(-math.Log(figs[u].Ratio) > spread) {
			figs[u].Suspect = false
		}
	}
	return figs, math.Exp(spread)
}

// partnerSpeed is, per repeat, the k-th slowest speed of the units
// listed, k the most of them (more than half) and at least all of up to
// three: slow when k of them are or more, so every one of 2 or 3
// partners, 3 of 4, 5 of 8, 8 of 15. With few partners a slow link and
// one noisy pair must not make a slow node; with many, a node slowed
// mildly must not pass for a dozen slow links.
func partnerSpeed(speed [][]float64, units []int) []float64 {
	repeats := 0
	for _, u := range units {
		repeats = max(repeats, len(speed[u]))
	}
	out := make([]float64, repeats)
	for r := range out {
		var v []float64
		for _, u := range units {
			if r < len(speed[u]) && !math.IsNaN(speed[u][r]) {
				v = append(v, speed[u][r])
			}
		}
		if len(v) == 0 {
			out[r] = math.NaN()
			continue
		}
		slices.Sort(v)
		// Ascending, the slowest first: the k-th slowest is slow exactly
		// when k pairs or more are.
		k := max(len(v)/2+1, min(len(v), 3))
		out[r] = v[k-1]
	}
	return out
}
