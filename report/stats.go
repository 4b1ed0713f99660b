package report

import (
	"math"
	"slices"

	"rsag/coll"
	"rsag/internal/quantile"
)

// TimingStat is the statistics of one timing case (a run, size, element
// type, operation, placement, method, batch and mode) over every rank and
// kept sample. It is part of summary.json (docs/summary-schema.md); its JSON
// names are stable.
//
// A sample is one cycle: its time is the maximum over ranks of that cycle's
// duration, because a collective is as slow as its slowest rank. The
// statistics are over those per-cycle maxima, after the first Discarded
// cycles are dropped.
type TimingStat struct {
	coll.Case

	Samples   int `json:"samples"`   // cycles kept
	Discarded int `json:"discarded"` // cycles dropped from the start
	Ranks     int `json:"ranks"`     // ranks that reported the case

	// Microseconds per operation. Percentiles interpolate linearly between
	// closest ranks (numpy's default, Hyndman & Fan type 7).
	MinUS    float64 `json:"min_us"`
	P10US    float64 `json:"p10_us"`
	MedianUS float64 `json:"median_us"`
	P90US    float64 `json:"p90_us"`
	P99US    float64 `json:"p99_us"`
	MaxUS    float64 `json:"max_us"`
	MeanUS   float64 `json:"mean_us"`
	StdUS    float64 `json:"std_us"` // sample standard deviation (n-1); 0 for one sample
	CV       float64 `json:"cv"`     // StdUS / MeanUS

	// nccl-tests' bandwidths from the median, in GB/s (1e9 bytes/s):
	// algbw = size / time, busbw = algbw x the collective's bus factor.
	AlgBWGBps float64 `json:"algbw_gbps"`
	BusBWGBps float64 `json:"busbw_gbps"`

	// The rank whose own median over the kept cycles is the highest (the
	// lowest such rank on a tie), and its host.
	SlowestRank int    `json:"slowest_rank"`
	SlowestHost string `json:"slowest_host"`

	// Correct is whether every sample of the case that was checked, on
	// every rank and including the discarded ones, held; Unchecked counts
	// the samples (over ranks) whose output was not checked, 0 (left out)
	// unless timing.check = "last".
	Correct   bool `json:"correct"`
	Unchecked int  `json:"unchecked_samples,omitempty"`
}

// BusFactor is nccl-tests' bus-bandwidth factor of a timing mode on world
// ranks in groups of group (0: none) (coll.TimedMode.BusFactor); 0 for a
// mode phases does not know.
func BusFactor(mode coll.Mode, world, group int) float64 {
	if m, ok := coll.ModeOf(mode); ok {
		return m.BusFactor(coll.Layout{World: world, Group: group})
	}
	return 0
}

// TimingStats computes each case's statistics, in the order in which the
// cases first appear in rows. Within a case, a cycle's time is the maximum
// over ranks of DurationUS; the first discard cycles (in cycle order) are
// dropped. A case left with no cycle is omitted, so a caller should keep
// discard below the number of cycles. world is the world size that the bus
// bandwidth factor uses.
func TimingStats(rows []TimingRow, world int, discard int) []TimingStat {
	return timingStats(rows, coll.Layout{World: world}, func(string) int { return discard })
}

// TimingStatsPerRun is TimingStats with each run's own discard (a sweep's
// [[run]] tables may set their own; a run missing from discard drops none),
// on a world of the layout's ranks and groups.
func TimingStatsPerRun(rows []TimingRow, l coll.Layout, discard map[string]int) []TimingStat {
	return timingStats(rows, l, func(run string) int { return discard[run] })
}

func timingStats(rows []TimingRow, l coll.Layout, discardOf func(run string) int) []TimingStat {
	byCase := map[coll.Case][]TimingRow{}
	var order []coll.Case
	for _, r := range rows {
		k := r.Case
		if _, ok := byCase[k]; !ok {
			order = append(order, k)
		}
		byCase[k] = append(byCase[k], r)
	}
	var out []TimingStat
	for _, k := range order {
		if s, ok := caseStat(k, byCase[k], l, max(0, discardOf(k.Run))); ok {
			out = append(out, s)
		}
	}
	return out
}

func caseStat(k coll.Case, rows []TimingRow, l coll.Layout, discard int) (TimingStat, bool) {
	// The slowest rank's duration of each cycle.
	cycleMax := map[int]float64{}
	correct, unchecked := true, 0
	for _, r := range rows {
		if d, ok := cycleMax[r.Cycle]; !ok || r.DurationUS > d {
			cycleMax[r.Cycle] = r.DurationUS
		}
		correct = correct && r.Correct != Wrong
		if r.Correct == Unchecked {
			unchecked++
		}
	}
	cycles := make([]int, 0, len(cycleMax))
	for c := range cycleMax {
		cycles = append(cycles, c)
	}
	slices.Sort(cycles)
	if discard >= len(cycles) {
		return TimingStat{}, false
	}
	kept := cycles[discard:]
	keep := make(map[int]bool, len(kept))
	samples := make([]float64, len(kept))
	for i, c := range kept {
		keep[c] = true
		samples[i] = cycleMax[c]
	}

	s := TimingStat{Case: k, Samples: len(samples), Discarded: discard, Correct: correct, Unchecked: unchecked}
	s.MinUS, s.MaxUS = slices.Min(samples), slices.Max(samples)
	s.P10US = quantile.Of(samples, 0.10)
	s.MedianUS = quantile.Of(samples, 0.50)
	s.P90US = quantile.Of(samples, 0.90)
	s.P99US = quantile.Of(samples, 0.99)
	s.MeanUS, s.StdUS = meanStd(samples)
	if s.MeanUS != 0 {
		s.CV = s.StdUS / s.MeanUS
	}
	if s.MedianUS > 0 {
		s.AlgBWGBps = float64(k.SizeBytes) / s.MedianUS / 1e3
		s.BusBWGBps = s.AlgBWGBps * BusFactor(k.Mode, l.World, l.Group)
	}

	// Each rank's own median over the kept cycles.
	perRank := map[int][]float64{}
	host := map[int]string{}
	for _, r := range rows {
		if keep[r.Cycle] {
			perRank[r.Rank] = append(perRank[r.Rank], r.DurationUS)
			if _, ok := host[r.Rank]; !ok {
				host[r.Rank] = r.Host
			}
		}
	}
	s.Ranks = len(perRank)
	ranks := make([]int, 0, len(perRank))
	for r := range perRank {
		ranks = append(ranks, r)
	}
	slices.Sort(ranks)
	best := math.Inf(-1)
	for _, r := range ranks {
		if m := quantile.Median(perRank[r]); m > best {
			best, s.SlowestRank = m, r
		}
	}
	s.SlowestHost = host[s.SlowestRank]
	return s, true
}

// meanStd is the mean and the sample standard deviation (n-1 in the
// denominator, numpy's std(ddof=1)); the deviation is 0 for one value.
func meanStd(v []float64) (mean, std float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	if len(v) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(v)-1))
}

// Ratio compares the two modes of one case: the decomposed median over the
// direct median. Part of summary.json.
type Ratio struct {
	coll.Case                  // the pair's: no mode
	DirectMedianUS     float64 `json:"direct_median_us"`
	DecomposedMedianUS float64 `json:"decomposed_median_us"`
	Ratio              float64 `json:"ratio"` // decomposed / direct; > 1 means the decomposition is slower
}

// Ratios pairs each case's direct and decomposed statistics, in the order
// of the first of the two in stats; a case missing either mode, or whose
// direct median is not positive, has no ratio.
func Ratios(stats []TimingStat) []Ratio {
	direct := map[coll.Case]TimingStat{}
	decomp := map[coll.Case]TimingStat{}
	var order []coll.Case
	seen := map[coll.Case]bool{}
	for _, s := range stats {
		k := s.Pair()
		switch s.Mode {
		case coll.Direct:
			direct[k] = s
		case coll.Decomposed:
			decomp[k] = s
		default:
			continue
		}
		if !seen[k] {
			seen[k] = true
			order = append(order, k)
		}
	}
	var out []Ratio
	for _, k := range order {
		d, okD := direct[k]
		c, okC := decomp[k]
		if !okD || !okC || d.MedianUS <= 0 {
			continue
		}
		out = append(out, Ratio{Case: k, DirectMedianUS: d.MedianUS, DecomposedMedianUS: c.MedianUS, Ratio: c.MedianUS / d.MedianUS})
	}
	return out
}
