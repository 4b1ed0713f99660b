// Package model explains a sweep's timings with the Hockney model
// t(n) = alpha + n/B: alpha the latency of one operation, B its bandwidth,
// n the size in bytes. It fits the model to each timed mode of each case,
// finds from which size on the decomposition (ReduceScatter + AllGather)
// costs at most 5% more than AllReduce, and splits the decomposition's time
// between its parts.
//
// It takes plain inputs (a coll.Case, its sizes and median times) so that
// the report, which owns summary.json, loops over its records and hands
// them in; it knows no mode by name: the caller says which mode is direct,
// which decomposed, and which are the decomposition's parts.
package model

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"rsag/coll"

	"gonum.org/v1/gonum/stat"
)

const (
	// MinSizes and MinSpan are what a fit needs: with fewer sizes, or
	// sizes closer together, latency and bandwidth cannot be told apart.
	MinSizes = 3
	MinSpan  = 16
	// Tolerance is how much slower than direct the decomposition may be
	// for the crossover to count it as not mattering: decomposed/direct
	// <= 1 + Tolerance. A decomposition that is faster counts as within.
	Tolerance = 0.05
)

// Point is one median: a case (its mode and size included) and its median
// time per operation, with its p10 and p90 (the noise around it; both 0
// when unknown, which counts as no spread). It is what the report has per
// statistic.
type Point struct {
	coll.Case
	MedianUS     float64
	P10US, P90US float64
}

// Series is one case's and mode's medians over its sizes, in increasing
// size (Group sorts them); its Case has the mode and no size.
type Series struct {
	coll.Case
	Sizes   []int64   // bytes
	Medians []float64 // microseconds per operation, one per size
	// P10 and P90 bound each median's noise, one per size; nil (or 0 at a
	// size) when unknown: the median alone.
	P10, P90 []float64
}

// Group collects points into series, one per case and mode, in the order
// in which each first appears, each sorted by size. A size that appears
// twice in a series keeps its first median.
func Group(points []Point) []Series {
	index := map[coll.Case]int{}
	var out []Series
	for _, p := range points {
		k := p.Series()
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, Series{Case: k})
		}
		s := &out[i]
		if slices.Contains(s.Sizes, p.SizeBytes) {
			continue
		}
		s.Sizes = append(s.Sizes, p.SizeBytes)
		s.Medians = append(s.Medians, p.MedianUS)
		s.P10, s.P90 = append(s.P10, p.P10US), append(s.P90, p.P90US)
	}
	for i := range out {
		out[i].sort()
	}
	return out
}

func (s *Series) sort() {
	idx := make([]int, len(s.Sizes))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(s.Sizes[a], s.Sizes[b]) })
	sizes, medians := make([]int64, len(idx)), make([]float64, len(idx))
	var p10, p90 []float64
	if len(s.P10) == len(idx) && len(s.P90) == len(idx) {
		p10, p90 = make([]float64, len(idx)), make([]float64, len(idx))
	}
	for i, j := range idx {
		sizes[i], medians[i] = s.Sizes[j], s.Medians[j]
		if p10 != nil {
			p10[i], p90[i] = s.P10[j], s.P90[j]
		}
	}
	s.Sizes, s.Medians, s.P10, s.P90 = sizes, medians, p10, p90
}

// median returns the series' median at size, if it has one.
func (s Series) median(size int64) (float64, bool) {
	if i := slices.Index(s.Sizes, size); i >= 0 && i < len(s.Medians) {
		return s.Medians[i], true
	}
	return 0, false
}

// spread returns the series' p10 and p90 at size; the median for both
// where they are unknown (0 or missing), so that no noise is assumed.
func (s Series) spread(size int64) (lo, hi float64) {
	i := slices.Index(s.Sizes, size)
	m := s.Medians[i]
	lo, hi = m, m
	if i < len(s.P10) && s.P10[i] > 0 {
		lo = min(s.P10[i], m)
	}
	if i < len(s.P90) && s.P90[i] > 0 {
		hi = max(s.P90[i], m)
	}
	return lo, hi
}

// Fit is the Hockney model of one case's mode. Reason is empty for a
// usable fit; otherwise it says why there is none, and every number but
// SizesBytes is zero here and null in JSON (MarshalJSON), so that no
// reader takes a missing fit for a latency and bandwidth of 0.
type Fit struct {
	coll.Case // the series': its mode, no size
	// AlphaUS is the latency in microseconds. It is reported as fitted,
	// even when negative: a negative latency means that the line through
	// the larger sizes passes below the smallest ones, so that the latency
	// is below what the sweep resolves (measure smaller sizes) or time does
	// not grow linearly with size there (a protocol switch).
	AlphaUS float64 `json:"alpha_us"`
	// BandwidthGBps is B in GB/s (1e9 bytes per second).
	BandwidthGBps float64 `json:"bandwidth_gbps"`
	// R2 is the weighted coefficient of determination, gonum's
	// stat.RSquared with the fit's weights 1/t^2: 1 - sum w (t - fit)^2 /
	// sum w (t - mean_w t)^2, with mean_w the weighted mean. With these
	// weights its numerator is the sum of squared relative residuals.
	R2 float64 `json:"r2"`
	// MaxRelResidual is the largest |fit - t| / t over the sizes.
	MaxRelResidual float64 `json:"max_rel_residual"`
	SizesBytes     []int64 `json:"sizes_bytes"`
	Reason         string  `json:"reason,omitempty"`
}

// OK reports whether the fit is usable.
func (f Fit) OK() bool { return f.Reason == "" }

// fitJSON is Fit as JSON holds it: the numbers null when there is no fit.
type fitJSON struct {
	coll.Case
	AlphaUS        *float64 `json:"alpha_us"`
	BandwidthGBps  *float64 `json:"bandwidth_gbps"`
	R2             *float64 `json:"r2"`
	MaxRelResidual *float64 `json:"max_rel_residual"`
	SizesBytes     []int64  `json:"sizes_bytes"`
	Reason         string   `json:"reason,omitempty"`
}

// MarshalJSON writes a fit's numbers, or null for each when there is no
// fit: Reason says why.
func (f Fit) MarshalJSON() ([]byte, error) {
	j := fitJSON{Case: f.Case, SizesBytes: f.SizesBytes, Reason: f.Reason}
	if f.OK() {
		j.AlphaUS, j.BandwidthGBps, j.R2, j.MaxRelResidual = &f.AlphaUS, &f.BandwidthGBps, &f.R2, &f.MaxRelResidual
	}
	return json.Marshal(j)
}

// At is the fitted time in microseconds at n bytes.
func (f Fit) At(n float64) float64 { return f.AlphaUS + n*f.usPerByte() }

// usPerByte is the slope 1/B in microseconds per byte: 1 GB/s moves 1e3
// bytes per microsecond.
func (f Fit) usPerByte() float64 { return 1 / (f.BandwidthGBps * 1e3) }

// FitSeries fits t(n) = alpha + n/B to s by least squares weighted by
// 1/t^2, so that each size's relative error counts alike: unweighted, the
// largest size's microseconds would decide the latency too. The regression
// is gonum's stat.LinearRegression of t on n.
//
// There is no fit when the series has fewer than MinSizes sizes, sizes
// spanning less than MinSpan times, a median that is not positive and
// finite, or a slope that is not positive: time that does not grow with
// size has no bandwidth (B would be infinite or negative), which is said
// with the slope and latency the regression found, rather than reported as
// a number a table would print as if it were one.
func FitSeries(s Series) Fit {
	f := Fit{Case: s.Case, SizesBytes: slices.Clone(s.Sizes)}
	if why := fittable(s); why != "" {
		f.Reason = why
		return f
	}
	x, y, w := make([]float64, len(s.Sizes)), slices.Clone(s.Medians), make([]float64, len(s.Sizes))
	for i, n := range s.Sizes {
		x[i], w[i] = float64(n), 1/(y[i]*y[i])
	}
	alpha, beta := stat.LinearRegression(x, y, w, false)
	if !(beta > 0) || math.IsInf(beta, 0) || math.IsNaN(alpha) {
		f.Reason = fmt.Sprintf("time does not grow with size from %s to %s (fitted slope %.3g us per MiB, latency %.3g us): "+
			"no bandwidth to fit; the sizes are all latency-bound or too noisy, so measure larger sizes",
			coll.SizeText(s.Sizes[0]), coll.SizeText(s.Sizes[len(s.Sizes)-1]), beta*(1<<20), alpha)
		return f
	}
	f.AlphaUS, f.BandwidthGBps = alpha, 1/(beta*1e3)
	f.R2 = stat.RSquared(x, y, w, alpha, beta)
	for i := range x {
		f.MaxRelResidual = max(f.MaxRelResidual, math.Abs(alpha+beta*x[i]-y[i])/y[i])
	}
	return f
}

// fittable says why s cannot be fitted, or "".
func fittable(s Series) string {
	if len(s.Sizes) != len(s.Medians) {
		return fmt.Sprintf("%d sizes but %d medians", len(s.Sizes), len(s.Medians))
	}
	for i, t := range s.Medians {
		if !(t > 0) || math.IsInf(t, 0) {
			return fmt.Sprintf("the median at %s is %v; a fit needs positive times", coll.SizeText(s.Sizes[i]), t)
		}
		if s.Sizes[i] <= 0 {
			return fmt.Sprintf("size %d bytes; a fit needs positive sizes", s.Sizes[i])
		}
	}
	distinct := slices.Compact(slices.Sorted(slices.Values(s.Sizes)))
	need := fmt.Sprintf("a fit needs at least %d spanning %dx", MinSizes, MinSpan)
	switch {
	case len(distinct) < MinSizes:
		return fmt.Sprintf("%d sizes; %s", len(distinct), need)
	case distinct[len(distinct)-1] < MinSpan*distinct[0]:
		return fmt.Sprintf("sizes %s to %s span %.3gx; %s", coll.SizeText(distinct[0]), coll.SizeText(distinct[len(distinct)-1]),
			float64(distinct[len(distinct)-1])/float64(distinct[0]), need)
	}
	return ""
}

// Crossing is a size from which the decomposition stays within Tolerance
// of direct.
type Crossing struct {
	Found bool  `json:"found"`
	Bytes int64 `json:"bytes"` // when Found; 0 from the fits means at every size
	// Why says, when not Found, why there is none.
	Why string `json:"why,omitempty"`
}

// Crossover is one case's comparison of its decomposed mode with its direct
// one: the crossover measured and fitted, and, when both modes have a
// usable fit (FromFits), the decomposition's extra latency and its
// bandwidth ratio.
type Crossover struct {
	coll.Case          // the pair's: no mode, no size
	Measured  Crossing `json:"measured"`
	Fitted    Crossing `json:"fitted"`

	FromFits bool `json:"from_fits"`
	// ExtraLatencyUS is alpha_decomposed - alpha_direct.
	ExtraLatencyUS float64 `json:"extra_latency_us"`
	// BandwidthRatio is B_direct / B_decomposed: > 1 when the
	// decomposition moves bytes more slowly, and the ratio of times it
	// tends to at large sizes.
	BandwidthRatio float64 `json:"bandwidth_ratio"`
}

// Compare finds the crossover of decomposed against direct (the same case's
// series and fits).
func Compare(direct, decomposed Series, fd, fc Fit) Crossover {
	c := Crossover{Case: direct.Pair(), Measured: MeasuredCrossover(direct, decomposed), Fitted: FittedCrossover(fd, fc)}
	if fd.OK() && fc.OK() {
		c.FromFits = true
		c.ExtraLatencyUS = fc.AlphaUS - fd.AlphaUS
		c.BandwidthRatio = fd.BandwidthGBps / fc.BandwidthGBps
	}
	return c
}

// MeasuredCrossover is the smallest measured size from which
// decomposed/direct <= 1 + Tolerance at that size and at every larger one,
// over the sizes both series have (a direct median that is not positive
// gives no ratio, and its size is skipped).
func MeasuredCrossover(direct, decomposed Series) Crossing {
	type ratio struct {
		size int64
		r    float64
	}
	var rs []ratio
	for i, n := range direct.Sizes {
		d := direct.Medians[i]
		if c, ok := decomposed.median(n); ok && d > 0 {
			rs = append(rs, ratio{n, c / d})
		}
	}
	if len(rs) == 0 {
		return Crossing{Why: "no size has both modes"}
	}
	slices.SortFunc(rs, func(a, b ratio) int { return cmp.Compare(a.size, b.size) })
	last := rs[len(rs)-1]
	if last.r > 1+Tolerance {
		// The ratio itself is in the timings; the reason is said without
		// it, so that the cases of a sweep that share it share one note.
		return Crossing{Why: fmt.Sprintf("not within the measured range: %s/%s is above %.3g at the largest size, %s",
			decomposed.Mode, direct.Mode, 1+Tolerance, coll.SizeText(last.size))}
	}
	from := last.size
	for i := len(rs) - 2; i >= 0 && rs[i].r <= 1+Tolerance; i-- {
		from = rs[i].size
	}
	return Crossing{Found: true, Bytes: from}
}

// FittedCrossover is the smallest n >= 0 from which the fits put the
// decomposition within Tolerance of direct for good, with d the direct fit
// and c the decomposed one. With r = 1 + Tolerance and slopes b = 1/B,
//
//	alpha_c + n b_c <= r (alpha_d + n b_d)
//	<=> (alpha_c - r alpha_d) <= n (r b_d - b_c).
//
// Both sides are linear in n, so the inequality, once true, stays true for
// every larger n exactly when r b_d - b_c >= 0, i.e. when the asymptotic
// ratio of times b_c/b_d = B_d/B_c is at most r. Then:
//   - r b_d > b_c: it holds from n* = (alpha_c - r alpha_d) / (r b_d - b_c),
//     rounded up to a whole byte, or from 0 when n* <= 0;
//   - r b_d = b_c: it holds at every n when alpha_c <= r alpha_d, else never.
//
// When B_d/B_c > r there is no crossover: whatever the latencies, the
// decomposition ends more than r times slower at large sizes. n* may lie
// beyond the measured sizes: the fits extrapolate.
func FittedCrossover(d, c Fit) Crossing {
	switch {
	case !d.OK():
		return Crossing{Why: fmt.Sprintf("no fit of %s: %s", d.Mode, d.Reason)}
	case !c.OK():
		return Crossing{Why: fmt.Sprintf("no fit of %s: %s", c.Mode, c.Reason)}
	}
	r := 1 + Tolerance
	gap := c.AlphaUS - r*d.AlphaUS                  // microseconds the latencies overshoot by
	gain := r*d.usPerByte() - c.usPerByte()         // microseconds per byte the bandwidths win back
	asymptotic := d.BandwidthGBps / c.BandwidthGBps // B_d / B_c
	switch {
	case gain < 0:
		return Crossing{Why: fmt.Sprintf("the fits' asymptotic ratio B_%s/B_%s = %.3g exceeds %.3g: the decomposition stays more than %.0f%% slower at every large size",
			d.Mode, c.Mode, asymptotic, r, 100*Tolerance)}
	case gap <= 0:
		return Crossing{Found: true, Bytes: 0}
	case gain == 0:
		return Crossing{Why: fmt.Sprintf("the fits' bandwidth ratio is exactly %.3g and the decomposition's latency is more than %.0f%% higher", r, 100*Tolerance)}
	}
	n := math.Ceil(gap / gain)
	if n > math.MaxInt64/2 {
		return Crossing{Why: fmt.Sprintf("the fits cross beyond %.3g bytes", n)}
	}
	return Crossing{Found: true, Bytes: int64(n)}
}

// Part is one part's median at a size and its share.
type Part struct {
	Mode coll.Mode `json:"mode"`
	US   float64   `json:"us"`
	// Share is US / the whole's median when the time splits (Split), US /
	// the parts' sum when the rest is within noise (SplitWithinNoise), and
	// nil (null) when it does not split: noise made it no share at all.
	Share *float64 `json:"share"`
}

// How a decomposition's time at one size splits between its parts (Share.Split).
const (
	// Split: the parts timed alone add up to no more than the whole; each
	// part's share is of the whole, and the rest is what running them in
	// sequence adds.
	Split = "split"
	// SplitWithinNoise: the parts add up to more than the whole, but by
	// less than the runs' noise (the parts' p10s add up to no more than the
	// whole's p90): the shares are of the parts' sum, and the rest is zero
	// within noise, not a negative time.
	SplitWithinNoise = "within-noise"
	// NotSplit: the parts add up to more than the whole beyond the noise,
	// which no split can explain (a part cannot take longer than the whole
	// that contains it): the runs saw different conditions. No share.
	NotSplit = "not-split"
)

// Share is where the decomposition's time goes at one size: each part's
// median and share, and what the parts leave unexplained (the whole's
// median minus theirs). Split says whether the time splits (Split,
// SplitWithinNoise, NotSplit), and Why says why not where it does not.
type Share struct {
	SizeBytes     int64   `json:"size_bytes"`
	WholeUS       float64 `json:"whole_us"`
	Parts         []Part  `json:"parts"`
	UnexplainedUS float64 `json:"unexplained_us"`
	// UnexplainedShare is UnexplainedUS / WholeUS when Split, 0 when
	// SplitWithinNoise, nil (null) when NotSplit.
	UnexplainedShare *float64 `json:"unexplained_share"`
	Split            string   `json:"split"`
	Why              string   `json:"why,omitempty"`
}

// Breakdown splits whole (the decomposed series) into parts (the
// reduce-scatter and all-gather series of the same case, those that ran),
// at every size of whole that every part has and whose median is positive,
// and decides whether the split is possible (SplitOf). With no parts it
// returns nothing.
func Breakdown(whole Series, parts ...Series) []Share {
	if len(parts) == 0 {
		return nil
	}
	var out []Share
sizes:
	for i, n := range whole.Sizes {
		t := whole.Medians[i]
		if !(t > 0) {
			continue
		}
		var ps []PartTime
		for _, p := range parts {
			pt, ok := p.median(n)
			if !ok {
				continue sizes
			}
			lo, hi := p.spread(n)
			ps = append(ps, PartTime{Mode: p.Mode, MedianUS: pt, P10US: lo, P90US: hi})
		}
		lo, hi := whole.spread(n)
		s := SplitOf(PartTime{Mode: whole.Mode, MedianUS: t, P10US: lo, P90US: hi}, ps)
		s.SizeBytes = n
		out = append(out, s)
	}
	return out
}

// PartTime is a median time with its p10 and p90.
type PartTime struct {
	Mode                   coll.Mode
	MedianUS, P10US, P90US float64
}

// SplitOf decides how whole's median splits between the parts' medians.
// The parts run one after the other inside the whole, so their sum cannot
// exceed it: where the medians say it does, either the excess is within
// the noise (the parts' p10s add up to no more than the whole's p90), and
// the rest is taken as zero, or it is not, and the time is not split:
// printing 190% and -106% would be reading noise as shares.
func SplitOf(whole PartTime, parts []PartTime) Share {
	t := whole.MedianUS
	s := Share{WholeUS: t, UnexplainedUS: t}
	var sum, sumLo float64
	for _, p := range parts {
		sum += p.MedianUS
		sumLo += p.P10US
		s.UnexplainedUS -= p.MedianUS
	}
	share := func(v float64) *float64 { return &v }
	switch {
	case sum <= t:
		s.Split = Split
		for _, p := range parts {
			s.Parts = append(s.Parts, Part{Mode: p.Mode, US: p.MedianUS, Share: share(p.MedianUS / t)})
		}
		s.UnexplainedShare = share(s.UnexplainedUS / t)
	case sumLo <= whole.P90US:
		s.Split = SplitWithinNoise
		s.Why = fmt.Sprintf("the parts alone add up to %.3g%% of the whole, within the noise (their p10s add up to %.4g us, "+
			"the whole's p90 is %.4g us): the rest is zero within noise, and the shares are of the parts' sum", 100*sum/t, sumLo, whole.P90US)
		for _, p := range parts {
			s.Parts = append(s.Parts, Part{Mode: p.Mode, US: p.MedianUS, Share: share(p.MedianUS / sum)})
		}
		s.UnexplainedShare = share(0)
	default:
		s.Split = NotSplit
		s.Why = fmt.Sprintf("the parts timed alone take %.3g%% of the whole, beyond the noise (their p10s add up to %.4g us, "+
			"above the whole's p90 of %.4g us): the runs saw different conditions (a busy machine); rerun with more cycles on a quiet one",
			100*sum/t, sumLo, whole.P90US)
		for _, p := range parts {
			s.Parts = append(s.Parts, Part{Mode: p.Mode, US: p.MedianUS})
		}
	}
	return s
}

// Modes names the modes Analyze and Sweep.Compare compare: which is direct, which is the
// decomposition, and which modes are its parts.
type Modes struct {
	Direct, Decomposed coll.Mode
	Parts              []coll.Mode
}

// Breakdowns is one case's Breakdown.
type Breakdowns struct {
	coll.Case         // the pair's: no mode, no size
	Shares    []Share `json:"shares"`
}

// Result is everything the model says about a sweep.
type Result struct {
	Fits       []Fit        // one per series, in the series' order
	Crossovers []Crossover  // one per case that has both the direct and the decomposed mode
	Breakdowns []Breakdowns // one per case that has the decomposition and at least one part
}

// Analyze fits every series and compares each case's modes as m names them,
// cases in the order in which they first appear.
func Analyze(series []Series, m Modes) Result {
	sw := NewSweep(series)
	res := Result{Fits: sw.Fits}
	res.Crossovers, res.Breakdowns = sw.Compare(m)
	return res
}

// Sweep is a sweep's series, each fitted once, for comparing its modes
// under as many Modes as there are decompositions.
type Sweep struct {
	Fits     []Fit       // one per series, in the series' order
	cases    []coll.Case // each series' case without its mode, once
	bySeries map[coll.Case]Series
	byFit    map[coll.Case]Fit
}

// NewSweep fits every series.
func NewSweep(series []Series) *Sweep {
	sw := &Sweep{bySeries: map[coll.Case]Series{}, byFit: map[coll.Case]Fit{}}
	for _, s := range series {
		f := FitSeries(s)
		sw.Fits = append(sw.Fits, f)
		sw.bySeries[s.Case], sw.byFit[s.Case] = s, f
		if c := s.Pair(); !slices.Contains(sw.cases, c) {
			sw.cases = append(sw.cases, c)
		}
	}
	return sw
}

// Compare compares each case's modes as m names them, cases in the order
// in which they first appear: a crossover for each case that has both the
// direct and the decomposed mode, a breakdown for each that has the
// decomposition and at least one part.
func (sw *Sweep) Compare(m Modes) ([]Crossover, []Breakdowns) {
	var cross []Crossover
	var shares []Breakdowns
	with := func(c coll.Case, mode coll.Mode) coll.Case {
		c.Mode = mode
		return c
	}
	for _, c := range sw.cases {
		d, okD := sw.bySeries[with(c, m.Direct)]
		w, okW := sw.bySeries[with(c, m.Decomposed)]
		if okD && okW {
			cross = append(cross, Compare(d, w, sw.byFit[with(c, m.Direct)], sw.byFit[with(c, m.Decomposed)]))
		}
		if !okW {
			continue
		}
		var parts []Series
		for _, p := range m.Parts {
			if s, ok := sw.bySeries[with(c, p)]; ok {
				parts = append(parts, s)
			}
		}
		if sh := Breakdown(w, parts...); len(sh) > 0 {
			shares = append(shares, Breakdowns{Case: c, Shares: sh})
		}
	}
	return cross, shares
}
