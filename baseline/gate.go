// Package baseline is `rsag check -baseline DIR|FILE RUN`: each timing case
// of a run against a baseline, one run's dir or the median of the last N
// complete runs of a history database, judged with a bootstrap interval on
// the ratio of medians (benchstat's idea), so that a case is slower or
// faster only when the interval excludes 1 and the change is beyond a
// tolerance. No MPI, no GPU.
package baseline

import (
	"hash/fnv"
	"math/rand/v2"

	"rsag/coll"
	"rsag/internal/quantile"
)

// Verdicts of a case.
const (
	Same    = "same"    // within the interval or the tolerance
	Slower  = "slower"  // interval above 1 and the ratio above 1 + tolerance
	Faster  = "faster"  // interval below 1 and the ratio below 1 - tolerance
	Missing = "missing" // the run has the case, the baseline has no samples of it
)

// Options are the gate's settings.
type Options struct {
	Tolerance float64 // 0.05: a change of 5%
	Level     float64 // 0.95: the interval's confidence
	Resamples int     // 2000
	Seed      uint64  // the bootstrap's seed: the same inputs give the same intervals
}

// Defaults are the gate's defaults.
var Defaults = Options{Tolerance: 0.05, Level: 0.95, Resamples: 2000, Seed: 1}

// Case is one case's judgement.
type Case struct {
	Case     coll.Case
	Samples  int     // the run's
	Baseline int     // baseline runs with samples of the case
	BaseUS   float64 // the baseline's median (the median of its runs' medians)
	RunUS    float64 // the run's median
	Ratio    float64 // RunUS / BaseUS
	Lo, Hi   float64 // the bootstrap interval on Ratio
	Verdict  string
}

// Judge judges every case of run (in its order) against base, a list of
// baseline runs' samples.
func Judge(order []coll.Case, run map[coll.Case][]float64, base []map[coll.Case][]float64, o Options) []Case {
	var out []Case
	for _, k := range order {
		x := run[k]
		var bs [][]float64
		for _, b := range base {
			if len(b[k]) > 0 {
				bs = append(bs, b[k])
			}
		}
		c := Case{Case: k, Samples: len(x), Baseline: len(bs), Verdict: Missing}
		if len(x) == 0 || len(bs) == 0 {
			out = append(out, c)
			continue
		}
		c.RunUS, c.BaseUS = quantile.Median(x), medianOfMedians(bs)
		c.Ratio = c.RunUS / c.BaseUS
		c.Lo, c.Hi = interval(k, x, bs, o)
		switch {
		case c.Lo > 1 && c.Ratio > 1+o.Tolerance:
			c.Verdict = Slower
		case c.Hi < 1 && c.Ratio < 1-o.Tolerance:
			c.Verdict = Faster
		default:
			c.Verdict = Same
		}
		out = append(out, c)
	}
	return out
}

func medianOfMedians(runs [][]float64) float64 {
	m := make([]float64, len(runs))
	for i, r := range runs {
		m[i] = quantile.Median(r)
	}
	return quantile.Median(m)
}

// interval is the percentile bootstrap interval of the ratio of medians:
// each resample draws the run's samples with replacement, and each
// baseline run's, and takes the run's median over the median of the
// baseline runs' medians. The generator is seeded from o.Seed and the
// case, so that a case's interval does not depend on the others.
func interval(k coll.Case, x []float64, base [][]float64, o Options) (lo, hi float64) {
	h := fnv.New64a()
	h.Write([]byte(k.String()))
	rng := rand.New(rand.NewPCG(o.Seed, h.Sum64()))
	ratios := make([]float64, o.Resamples)
	scratch := make([]float64, 0, len(x))
	meds := make([]float64, len(base))
	draw := func(v []float64) float64 {
		scratch = scratch[:0]
		for range v {
			scratch = append(scratch, v[rng.IntN(len(v))])
		}
		return quantile.Median(scratch)
	}
	for i := range ratios {
		r := draw(x)
		for j, b := range base {
			meds[j] = draw(b)
		}
		ratios[i] = r / quantile.Median(meds)
	}
	tail := (1 - o.Level) / 2
	return quantile.Of(ratios, tail), quantile.Of(ratios, 1-tail)
}
