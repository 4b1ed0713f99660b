// Package baseline is rsag's one judge of "is this run slower": `rsag check
// -baseline DIR|FILE RUN` and `rsag compare A B` (check against one run,
// A) are its two front-ends. It judges each timing case of a run against
// a baseline, one run's dir or the last N complete runs of its kind in a
// history database. A run's median moves from run to run by
// more than its samples show (the machine, the placement, the hour), so
// the judge measures that spread between the baseline's runs and asks
// whether the run is beyond it; a baseline of one run cannot show it, and
// then only a change too large for any machine's spread is called. No MPI,
// no GPU.
package baseline

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"

	"rsag/coll"
	"rsag/internal/quantile"
)

// Verdicts of a case.
const (
	Same         = "same"         // within the run-to-run spread or the tolerance
	Slower       = "slower"       // beyond the spread and the tolerance, slower
	Faster       = "faster"       // beyond the spread and the tolerance, faster
	Missing      = "missing"      // the run has the case, the baseline has no samples of it
	Inconclusive = "inconclusive" // a change beyond the tolerance that the inputs cannot judge (Case.Why)
)

// Options are the gate's settings.
type Options struct {
	Tolerance float64 // 0.05: a change of 5%
	// Level is the confidence over all the run's cases together: each
	// case's interval leaves (1-Level)/cases above it and as much below
	// (Bonferroni), so that identical runs are flagged slower at most
	// 1-Level of the time (and faster as often), whatever their number of
	// cases.
	Level     float64
	Resamples int    // 2000
	Seed      uint64 // the bootstrap's seed: the same inputs give the same intervals
	// MinSamples a side below which a change is inconclusive: a median of
	// one or two samples has no interval.
	MinSamples int
	// OneRun is the ratio the samples' interval must lie beyond for a case
	// to be called slower (or below its inverse, faster) against a
	// baseline of one run, whose run-to-run spread is unknown: less is
	// inconclusive.
	OneRun float64
}

// Defaults are the gate's defaults.
var Defaults = Options{Tolerance: 0.05, Level: 0.95, Resamples: 2000, Seed: 1, MinSamples: 3, OneRun: 1.5}

// Case is one case's judgement.
type Case struct {
	Case     coll.Case
	Samples  int     // the run's
	Baseline int     // baseline runs with samples of the case
	BaseUS   float64 // the baseline's median (the median of its runs' medians)
	RunUS    float64 // the run's median
	Ratio    float64 // RunUS / BaseUS
	Lo, Hi   float64 // the interval on Ratio; 0 when there is none (too few samples)
	// Spread is the baseline runs' spread from run to run (the standard
	// deviation of their log medians); 0 with one baseline run.
	Spread  float64
	Verdict string
	Why     string // an inconclusive verdict's reason
}

// Judge judges every case of run (in its order) against base, a list of
// baseline runs' samples (all of one kind: the caller sees to it).
func Judge(order []coll.Case, run map[coll.Case][]float64, base []map[coll.Case][]float64, o Options) []Case {
	judged := 0
	for _, k := range order {
		if len(run[k]) > 0 && baselineOf(k, base) != nil {
			judged++
		}
	}
	// Each tail of each case's interval, so that the run's cases together
	// hold o.Level on either side.
	alpha := 2 * (1 - o.Level) / float64(max(judged, 1))
	var out []Case
	for _, k := range order {
		x, bs := run[k], baselineOf(k, base)
		c := Case{Case: k, Samples: len(x), Baseline: len(bs), Verdict: Missing}
		if len(x) == 0 || len(bs) == 0 {
			out = append(out, c)
			continue
		}
		c.RunUS, c.BaseUS = quantile.Median(x), medianOfMedians(bs)
		c.Ratio = c.RunUS / c.BaseUS
		beyond := c.Ratio > 1+o.Tolerance || c.Ratio < 1-o.Tolerance
		fewest := len(x)
		for _, b := range bs {
			fewest = min(fewest, len(b))
		}
		if fewest < o.MinSamples {
			c.Verdict = Same
			if beyond {
				c.Verdict, c.Why = Inconclusive, fmt.Sprintf("too few samples (%d, need %d)", fewest, o.MinSamples)
			}
			out = append(out, c)
			continue
		}
		c.Lo, c.Hi = interval(k, x, bs, o, alpha)
		if len(bs) == 1 {
			c.Verdict = oneRun(c, o, beyond, slices.Min(x)/slices.Min(bs[0]))
			if c.Verdict == Inconclusive {
				c.Why = "one baseline run, spread unknown"
			}
			out = append(out, c)
			continue
		}
		// The run is one more run: is its log median beyond the spread of
		// the baseline runs' (Student's t prediction interval), or beyond
		// what its samples alone leave open (the bootstrap's, the floor
		// when the baseline runs happen to agree closely)?
		logs := make([]float64, len(bs))
		for i, b := range bs {
			logs[i] = math.Log(quantile.Median(b))
		}
		mean, sd := meanSD(logs)
		c.Spread = sd
		n := float64(len(bs))
		t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 1}.Quantile(1 - alpha/2)
		half := max(t*sd*math.Sqrt(1+1/n), (math.Log(c.Hi)-math.Log(c.Lo))/2)
		d := math.Log(c.RunUS) - mean
		c.Lo, c.Hi = math.Exp(d-half), math.Exp(d+half) // on the run over the baseline runs' geometric mean
		switch {
		case c.Lo > 1 && c.Ratio > 1+o.Tolerance:
			c.Verdict = Slower
		case c.Hi < 1 && c.Ratio < 1-o.Tolerance:
			c.Verdict = Faster
		default:
			c.Verdict = Same
		}
		// A slowdown of the network, the library or the code moves every
		// sample; a machine that stalls the run now and then moves some.
		// The run's fastest sample must be beyond the baseline runs'
		// fastest too, by their spread, or the change is not shown to be
		// the run's.
		if c.Verdict == Slower {
			mins := make([]float64, len(bs))
			for i, b := range bs {
				mins[i] = math.Log(slices.Min(b))
			}
			mean, sd := meanSD(mins)
			if math.Log(slices.Min(x))-mean <= t*sd*math.Sqrt(1+1/n) {
				c.Verdict, c.Why = Inconclusive, stalls
			}
		}
		out = append(out, c)
	}
	return out
}

// stalls is why a case slower by its median only is inconclusive.
const stalls = "only some samples slower (stalls? a busy machine?)"

// oneRun is the verdict against one baseline run: slower when the samples'
// interval is all beyond o.OneRun and so is the ratio of the fastest
// samples (faster: below its inverse), else inconclusive when the ratio is
// beyond the tolerance.
func oneRun(c Case, o Options, beyond bool, fastest float64) string {
	switch {
	case c.Lo > max(1+o.Tolerance, o.OneRun) && fastest > max(1+o.Tolerance, o.OneRun):
		return Slower
	case c.Hi < min(1-o.Tolerance, 1/o.OneRun):
		return Faster
	case beyond:
		return Inconclusive
	}
	return Same
}

// baselineOf are the baseline runs' samples of case k, those that have it.
func baselineOf(k coll.Case, base []map[coll.Case][]float64) [][]float64 {
	var bs [][]float64
	for _, b := range base {
		if len(b[k]) > 0 {
			bs = append(bs, b[k])
		}
	}
	return bs
}

func meanSD(v []float64) (mean, sd float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	for _, x := range v {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(v)-1))
}

func medianOfMedians(runs [][]float64) float64 {
	m := make([]float64, len(runs))
	for i, r := range runs {
		m[i] = quantile.Median(r)
	}
	return quantile.Median(m)
}

// Validate refuses samples a time cannot be: zero, negative, not a number
// or infinite, naming the case, the sample and where it came from.
func Validate(from string, m map[coll.Case][]float64) error {
	for k, v := range m {
		for i, us := range v {
			if !(us > 0) || math.IsInf(us, 0) {
				return fmt.Errorf("%s: case %s, sample %d is %v µs: a time is positive and finite; was the file edited?", from, k, i+1, us)
			}
		}
	}
	return nil
}

// interval is the percentile bootstrap interval of the ratio of medians at
// two-sided level 1-alpha: each resample draws the run's samples with
// replacement, and each baseline run's, and takes the run's median over the
// median of the baseline runs' medians. It is what the samples alone leave
// open. The generator is seeded from o.Seed and the case, so that a case's
// interval does not depend on the others.
func interval(k coll.Case, x []float64, base [][]float64, o Options, alpha float64) (lo, hi float64) {
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
	return quantile.Of(ratios, alpha/2), quantile.Of(ratios, 1-alpha/2)
}
