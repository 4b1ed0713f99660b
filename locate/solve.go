package locate

import (
	"fmt"
	"math"
	"slices"

	"rsag/internal/quantile"
)

// DefaultThreshold is the figure below which a unit is slow: 0.8 of the
// median.
const DefaultThreshold = 0.8

// The fail-safe rules (issue 34, class 2): a figure is against a median,
// and "beyond the healthy spread" needs healthy units to measure a spread
// by. A probe judged on fewer than minUnits units, or on fewer than
// minRepeats repeats, names nothing: its verdict is inconclusive.
const (
	minUnits   = 3
	minRepeats = 2
)

// spreadQuantile is the quantile of the healthy units' distances from the
// median (in log) taken as their spread: most of them, and robust to a
// tenth of them being disturbed, as an intermittent unit's slow repeats
// disturb the pooled single measurements.
const spreadQuantile = 0.9

// margin is how many times the healthy spread (in log) a suspect must lie
// below the median: 2, more with fewer healthy units, whose spread is
// known less well (3.2 with 3, 2.5 with 16, 2.2 with 100).
func margin(healthy int) float64 {
	if healthy == 0 {
		return math.Inf(1)
	}
	return 2 + 2/math.Sqrt(float64(healthy))
}

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
	// threshold, of Repeats with a measurement; Dips those in which it
	// was also further below than the healthy units' single measurements
	// spread (the repeat's bar, Judgement.RepeatBar).
	SlowRepeats, Dips, Repeats int
	// dipped says, per repeat index, whether the unit dipped there.
	dipped []bool
	// Suspect: below the threshold in every repeat, and its median beyond
	// the healthy spread by the margin; Intermittent: no suspect, but
	// dipped in enough repeats (intermittentDips).
	Suspect, Intermittent bool
	// Noise: below the threshold in every repeat, but not beyond the
	// margin: neither healthy nor a suspect (WithinNoise).
	Noise bool
	bar   float64 // the judgement's Bar, for Noise's words
}

// Judgement is how one probe of one step was judged: on how many units
// and repeats, how widely the healthy units spread, and the bars a
// suspect (its median) and a dip (one repeat) must pass, as factors of
// the median (0.5: below half the median). Inconclusive says why the
// probe can name nothing, or cannot say healthy ("" when it can).
type Judgement struct {
	Units, Healthy, Repeats int
	Spread                  float64 // the healthy medians' spread, a factor (1.3: within 1.3x of the median)
	Bar, RepeatBar          float64
	Inconclusive            string
	// Named says the probe may name suspects and intermittent units:
	// enough units and repeats. A probe whose spread is too wide still
	// names those beyond its bar, but cannot call the rest healthy.
	Named bool
}

// Why a probe is inconclusive.
const (
	TooFewUnits   = "too few units"
	TooFewRepeats = "too few repeats"
	TooWide       = "the spread is too wide"
	// WithinNoise is a unit's own: slow in every repeat, but not beyond
	// the healthy spread by the margin. It is not called healthy, and its
	// step still judges the others (a marginal node never hides one far
	// below it).
	WithinNoise = "within the noise"
)

// Verdict is one unit's figures and what they say.
type Verdict struct {
	Figures []Figure // per probe; nil when the unit was not measured
	Suspect bool
	// Intermittent: no suspect, but slow beyond the spread in some
	// repeats at most probes of a kind (Figures[Worst].Dips of Repeats).
	Intermittent bool
	Worst        int // the probe at which it is furthest below the median (an intermittent one: dips most); -1 with no figure
	// By names what made a member a suspect or intermittent: ByInside,
	// ByPartners or both (Result.Members only).
	By []string
	// Unsure says, for a unit neither suspect nor intermittent, why it
	// cannot be called healthy either: per step (By's names; "" within
	// one step) and kind of probe. Empty when it is healthy.
	Unsure []Unsure
}

// Unsure is why a unit's verdict is inconclusive at one kind of probe.
type Unsure struct {
	By      string // ByInside, ByPartners, or "" within one step
	Problem string // latency or bandwidth: the kind of probe
	Reason  string // TooFewUnits, TooFewRepeats or TooWide
	Detail  string // in words, with the numbers
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
	// How each probe was judged, per step (nil where it did not run).
	InsideJudged, PartnersJudged, PairsJudged []Judgement
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
		res.Inside, res.InsideJudged = judgeAll(in.Inside, in.Probes, members, in.Threshold)
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
		res.Partners, res.PartnersJudged = judgeAll(bySpeed, in.Probes, members, in.Threshold)
	}
	res.Members = make([]Verdict, in.Members)
	suspect := make([]bool, in.Members)
	for m := range res.Members {
		var from []Verdict
		var names []string
		for i, vs := range [][]Verdict{res.Inside, res.Partners} {
			if vs != nil {
				from = append(from, vs[m])
				names = append(names, []string{ByInside, ByPartners}[i])
			}
		}
		res.Members[m] = merge(from, names)
		suspect[m] = res.Members[m].Suspect
	}
	if len(in.Pairs) > 0 {
		counted := make([]bool, len(in.Pairs))
		for i, p := range in.Pairs {
			counted[i] = !suspect[p.A] && !suspect[p.B] && !excluded(p.A) && !excluded(p.B)
		}
		res.Pairs, res.PairsJudged = judgeAll(in.Speed, in.Probes, counted, in.Threshold)
		intermittentByPairs(in, &res, excluded)
		// A pair of an intermittent member is that member's, not a link's.
		for i, p := range in.Pairs {
			if res.Members[p.A].Intermittent || res.Members[p.B].Intermittent {
				res.Pairs[i].Intermittent = false
			}
		}
	}
	return res
}

// intermittentPartners is how many of a member's pairs, with different
// partners, must be intermittent for the member to be: a fault that comes
// and goes faster than a repeat slows a few of its rounds in each, never
// most of its pairs in one repeat, so its partner figure does not dip and
// its pairs look like flapping links; three flapping links at one member
// are the member (as a slow member's pairs are, from partnerSpeed's three).
const intermittentPartners = 3

// intermittentByPairs makes every member that is neither a suspect nor
// intermittent, and has intermittentPartners intermittent pairs or more,
// intermittent by its pairs: at each probe, its dips are the repeats in
// which any of those pairs dipped, and it is intermittent at a probe where
// one of them is and their dips together are enough (intermittentDips).
func intermittentByPairs(in Input, res *Result, excluded func(int) bool) {
	for m := range res.Members {
		v := &res.Members[m]
		if v.Suspect || v.Intermittent || excluded(m) || res.Partners == nil || res.Partners[m].Figures == nil {
			continue
		}
		var mine []int
		partners := map[int]bool{}
		for i, p := range in.Pairs {
			if (p.A == m || p.B == m) && res.Pairs[i].Intermittent {
				mine = append(mine, i)
				partners[p.A+p.B-m] = true
			}
		}
		if len(partners) < intermittentPartners {
			continue
		}
		figs := slices.Clone(res.Partners[m].Figures)
		worst := -1
		for pr := range figs {
			f := &figs[pr]
			var union []bool
			flapping := false
			for _, i := range mine {
				pf := res.Pairs[i].Figures
				if pf == nil || math.IsNaN(pf[pr].Ratio) {
					continue
				}
				flapping = flapping || pf[pr].Intermittent
				for r, d := range pf[pr].dipped {
					for len(union) <= r {
						union = append(union, false)
					}
					union[r] = union[r] || d
				}
			}
			f.Dips, f.dipped = 0, union
			for _, d := range union {
				if d {
					f.Dips++
				}
			}
			f.Suspect, f.Intermittent = false, flapping && f.Repeats > 0 && f.Dips >= intermittentDips(f.Repeats)
			if f.Intermittent && (worst < 0 || f.Dips > figs[worst].Dips || f.Dips == figs[worst].Dips && f.Ratio < figs[worst].Ratio) {
				worst = pr
			}
		}
		if worst < 0 {
			continue
		}
		*v = Verdict{Figures: figs, Intermittent: true, Worst: worst, By: []string{ByPartners}}
	}
}

// merge is a member's verdict from its steps (named by names): a suspect
// when any step says so, else intermittent when any says so, else unsure
// where any is; its worst figure is the worst of the steps that say the
// verdict (or, for a healthy member, of all).
func merge(from []Verdict, names []string) Verdict {
	v := Verdict{Worst: -1}
	rank := func(f Verdict) int {
		switch {
		case f.Suspect:
			return 2
		case f.Intermittent:
			return 1
		}
		return 0
	}
	for _, f := range from {
		if f.Worst < 0 {
			continue
		}
		if r, cur := rank(f), rank(v); v.Worst < 0 || r > cur || r == cur && f.Figures[f.Worst].Ratio < v.Figures[v.Worst].Ratio {
			v.Suspect, v.Intermittent, v.Worst, v.Figures = f.Suspect, f.Intermittent, f.Worst, f.Figures
		}
	}
	if rank(v) > 0 {
		// Only the steps that say the member's verdict name it.
		var by []string
		for i, f := range from {
			if rank(f) == rank(v) {
				by = append(by, names[i])
			}
		}
		v.By = by
		return v
	}
	for i, f := range from {
		for _, u := range f.Unsure {
			u.By = names[i]
			v.Unsure = append(v.Unsure, u)
		}
	}
	return v
}

// judgeAll judges every unit at every probe: speed[probe][unit][repeat],
// the medians and the spread taken over the counted units only. A unit is
// a suspect when it is one at most of the probes of one kind (latency or
// bandwidth: with three collectives at a size, two of them), since a real
// fault slows every collective at the sizes it limits while noise hits
// measurements one at a time; intermittent, the same way, when it dipped
// (or was a suspect) at most of the probes of a kind. Its worst probe is
// then the one of that kind furthest below the median (an intermittent
// unit's: that dipped most); a healthy unit has its lowest. A unit that
// is neither is unsure at a kind whose probes are mostly inconclusive.
func judgeAll(speed [][][]float64, probes []Probe, counted []bool, threshold float64) ([]Verdict, []Judgement) {
	units := len(counted)
	out := make([]Verdict, units)
	for u := range out {
		out[u].Worst = -1
	}
	judged := make([]Judgement, len(speed))
	for pr, s := range speed {
		figs, j := judge(s, counted, threshold)
		judged[pr] = j
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
		suspect, intermittent, unsure, total := map[bool]int{}, map[bool]int{}, map[bool]int{}, map[bool]int{} // by Probe.Latency
		noise := map[bool]int{}
		for pr, f := range v.Figures {
			if math.IsNaN(f.Ratio) {
				continue
			}
			k := probes[pr].Latency
			total[k]++
			if f.Suspect {
				suspect[k]++
			}
			if f.Suspect || f.Intermittent {
				intermittent[k]++
			}
			if f.Noise || f.Suspect {
				noise[k]++
			}
			if judged[pr].Inconclusive != "" {
				unsure[k]++
			}
		}
		most := func(n map[bool]int, k bool) bool { return 2*n[k] > total[k] }
		for pr, f := range v.Figures {
			if math.IsNaN(f.Ratio) {
				continue
			}
			k := probes[pr].Latency
			// A suspect probe counts only where most of its kind are.
			f.Suspect = f.Suspect && most(suspect, k)
			f.Intermittent = f.Intermittent && most(intermittent, k) && !most(suspect, k)
			v.Figures[pr].Suspect, v.Figures[pr].Intermittent = f.Suspect, f.Intermittent
			if f.Suspect && !v.Suspect || f.Suspect == v.Suspect && (v.Worst < 0 || f.Ratio < v.Figures[v.Worst].Ratio) {
				v.Suspect, v.Worst = f.Suspect, pr
			}
		}
		if !v.Suspect {
			for pr, f := range v.Figures {
				if f.Intermittent && (!v.Intermittent || f.Dips > v.Figures[v.Worst].Dips ||
					f.Dips == v.Figures[v.Worst].Dips && f.Ratio < v.Figures[v.Worst].Ratio) {
					v.Intermittent, v.Worst = true, pr
				}
			}
		}
		if v.Suspect || v.Intermittent {
			continue
		}
		for _, k := range []bool{true, false} {
			if most(noise, k) && !most(unsure, k) {
				for pr, f := range v.Figures {
					if probes[pr].Latency == k && f.Noise {
						v.Unsure = append(v.Unsure, Unsure{Problem: probes[pr].Problem(), Reason: WithinNoise,
							Detail: fmt.Sprintf("%s: %.2gx in every repeat, not below %.2gx (the margin beyond the healthy spread)",
								WithinNoise, f.Ratio, f.bar)})
						break
					}
				}
				continue
			}
			if !most(unsure, k) {
				continue
			}
			for pr, j := range judged {
				if probes[pr].Latency == k && j.Inconclusive != "" && !math.IsNaN(v.Figures[pr].Ratio) {
					v.Unsure = append(v.Unsure, Unsure{Problem: probes[pr].Problem(), Reason: j.Inconclusive, Detail: j.Detail(threshold)})
					break
				}
			}
		}
	}
	return out, judged
}

// Detail says a judgement's inconclusive reason with its numbers.
func (j Judgement) Detail(threshold float64) string {
	switch j.Inconclusive {
	case TooFewUnits:
		if j.Units == 1 {
			return TooFewUnits + ": one, whose figure is against its own median"
		}
		return fmt.Sprintf("%s: %d, against a median of themselves (at least %d)", TooFewUnits, j.Units, minUnits)
	case TooFewRepeats:
		return fmt.Sprintf("%s: %d (at least %d)", TooFewRepeats, j.Repeats, minRepeats)
	case TooWide:
		return fmt.Sprintf("%s: healthy units spread to %.3gx the median, beyond the threshold %.2fx", TooWide, j.Spread, threshold)
	}
	return ""
}

// judge compares every unit's speed[unit][repeat] with the median over the
// counted units of the same repeat. The healthy units are the counted ones
// not below threshold in every repeat; their spread is spreadQuantile of
// their distances from the median (in log), of their medians over
// repeats (Spread) and of their single measurements pooled. A counted unit
// is a suspect when it is below threshold in every repeat it has and its
// median lies further below the median than margin(healthy) spreads (the
// Bar); it dips in a repeat when it is below threshold there and further
// below than margin spreads of the single measurements (the RepeatBar,
// never above the Bar), and is intermittent when it is no suspect and
// dips in intermittentDips repeats. With too few units or repeats it is
// neither (the judgement is inconclusive); with a spread wider than the
// threshold, the judgement is inconclusive too, but what lies beyond the
// bar is still named.
func judge(speed [][]float64, counted []bool, threshold float64) ([]Figure, Judgement) {
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
	ratios := make([][]float64, len(speed))
	at := make([][]int, len(speed)) // the repeat of each ratio
	j := Judgement{}
	for u, s := range speed {
		var speeds, meds []float64
		slow := 0
		for r, x := range s {
			if math.IsNaN(x) || !(medians[r] > 0) {
				continue
			}
			ratio := x / medians[r]
			ratios[u], speeds, meds = append(ratios[u], ratio), append(speeds, x), append(meds, medians[r])
			at[u] = append(at[u], r)
			if ratio < threshold {
				slow++
			}
		}
		figs[u] = Figure{Ratio: quantile.Median(ratios[u]), Speed: quantile.Median(speeds), Median: quantile.Median(meds),
			SlowRepeats: slow, Repeats: len(ratios[u])}
		if counted[u] && len(ratios[u]) > 0 {
			j.Units++
			j.Repeats = max(j.Repeats, len(ratios[u]))
		}
	}
	var healthy, single []float64
	candidate := make([]bool, len(speed))
	for u, f := range figs {
		if !counted[u] || f.Repeats == 0 {
			continue
		}
		if f.SlowRepeats == f.Repeats {
			candidate[u] = true
			continue
		}
		// The spread that can excuse a slowness is the healthy units'
		// below the median: with several slow units the median sinks and
		// healthy ones read fast, which is no evidence that a slow one is
		// noise.
		healthy = append(healthy, below(f.Ratio))
		for _, r := range ratios[u] {
			single = append(single, below(r))
		}
	}
	j.Healthy = len(healthy)
	spread, spreadOne := 0.0, 0.0
	if len(healthy) > 0 {
		spread, spreadOne = quantile.Of(healthy, spreadQuantile), quantile.Of(single, spreadQuantile)
	}
	m := margin(len(healthy))
	bar := math.Max(-math.Log(threshold), m*spread)
	repeatBar := math.Max(bar, m*spreadOne)
	j.Spread, j.Bar, j.RepeatBar = math.Exp(spread), math.Exp(-bar), math.Exp(-repeatBar)
	switch {
	case j.Units < minUnits:
		j.Inconclusive = TooFewUnits
	case j.Repeats < minRepeats:
		j.Inconclusive = TooFewRepeats
	default:
		j.Named = true
		if spread > -math.Log(threshold) {
			j.Inconclusive = TooWide
		}
	}
	dips := intermittentDips(j.Repeats)
	for u := range figs {
		f := &figs[u]
		f.dipped = make([]bool, repeats)
		for i, r := range ratios[u] {
			if r < threshold && -math.Log(r) > repeatBar {
				f.Dips++
				f.dipped[at[u][i]] = true
			}
		}
		if !counted[u] || !j.Named {
			continue
		}
		// A suspect is slow in every repeat, and in enough of them to be
		// a pattern rather than one disturbance.
		f.Suspect = candidate[u] && f.Repeats >= minRepeats && -math.Log(f.Ratio) > bar
		f.Noise, f.bar = candidate[u] && f.Repeats >= minRepeats && !f.Suspect, j.Bar
		f.Intermittent = !f.Suspect && f.Dips >= dips
	}
	return figs, j
}

// below is how far ratio r lies below the median, in log; 0 above it.
func below(r float64) float64 { return max(0, -math.Log(r)) }

// intermittentDips is how many of its repeats a unit that is no suspect
// must dip in to be intermittent: two, and a quarter of them, so that one
// passing disturbance, or two among many repeats, is noise (2 of 3 to 8
// repeats, 3 of 9 to 12, 5 of 20).
func intermittentDips(repeats int) int {
	return max(2, (repeats+3)/4)
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
