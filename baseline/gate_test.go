package baseline

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"rsag/coll"
)

// draws are n samples of a noisy time around us: log-normal, sigma 0.05.
func draws(rng *rand.Rand, n int, us float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = us * math.Exp(0.05*rng.NormFloat64())
	}
	return v
}

// cases are n distinct timing cases.
func cases(n int) []coll.Case {
	var out []coll.Case
	for i := range n {
		out = append(out, coll.Case{Run: "default", SizeBytes: 1024 << i, Mode: "direct"})
	}
	return out
}

// machineRun is one run of every case on a machine whose level moves from
// run to run (log-normal, sigma between), each sample noisy (sigma 5%).
func machineRun(rng *rand.Rand, order []coll.Case, n int, between, step float64) map[coll.Case][]float64 {
	level := math.Exp(between * rng.NormFloat64())
	m := map[coll.Case][]float64{}
	for _, k := range order {
		m[k] = draws(rng, n, 100*level*(1+step))
	}
	return m
}

// fast is the gate's defaults with fewer resamples: the bootstrap is only
// the interval's floor here, and the trials are many.
var fast = func() Options { o := Defaults; o.Resamples = 200; return o }()

// flagged counts, over trials, the runs judged slower (some case) and
// inconclusive (none slower, some inconclusive) against baseline runs of
// the same machine, the run's cases slowed by step.
func flagged(seed uint64, trials, runs, ncases, n int, between, step float64) (slower, unsure int) {
	rng := rand.New(rand.NewPCG(seed, uint64(runs)))
	order := cases(ncases)
	for range trials {
		var base []map[coll.Case][]float64
		for range runs {
			base = append(base, machineRun(rng, order, n, between, 0))
		}
		got := Judge(order, machineRun(rng, order, n, between, step), base, fast)
		r := Result{Cases: got}
		switch {
		case r.Count(Slower) > 0:
			slower++
		case r.Count(Inconclusive) > 0:
			unsure++
		}
	}
	return slower, unsure
}

// One sample a side has no interval: a change beyond the tolerance is
// "inconclusive: too few samples", never a verdict of width 0; one within
// it is the same.
func TestTooFewSamplesAreInconclusive(t *testing.T) {
	k := cases(1)
	for _, c := range []struct {
		run, base float64
		want      string
	}{{1.195, 1, Inconclusive}, {1, 1.195, Inconclusive}, {1.01, 1, Same}} {
		got := Judge(k, map[coll.Case][]float64{k[0]: {c.run}}, []map[coll.Case][]float64{{k[0]: {c.base}}, {k[0]: {c.base}}}, Defaults)[0]
		if got.Verdict != c.want || (got.Verdict == Inconclusive && !strings.Contains(got.Why, "too few samples")) || got.Lo != 0 || got.Hi != 0 {
			t.Errorf("1 sample a side, %v against %v: %+v, want %s", c.run, c.base, got, c.want)
		}
	}
}

// A baseline of one run cannot tell the run from the machine: a 10%
// slowdown, however clear in the samples, is inconclusive; one beyond
// Defaults.OneRun (2x here) is slower.
func TestOneBaselineRunCallsOnlyAHugeChange(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	k := cases(1)
	base := []map[coll.Case][]float64{{k[0]: draws(rng, 40, 100)}}
	c := Judge(k, map[coll.Case][]float64{k[0]: draws(rng, 40, 110)}, base, Defaults)[0]
	if c.Verdict != Inconclusive || !strings.Contains(c.Why, "one baseline run") || !(c.Lo > 1) {
		t.Errorf("a 10%% slowdown against one run: %+v, want inconclusive (its samples' interval above 1)", c)
	}
	c = Judge(k, map[coll.Case][]float64{k[0]: draws(rng, 40, 200)}, base, Defaults)[0]
	if c.Verdict != Slower {
		t.Errorf("a 2x slowdown against one run: %+v, want slower", c)
	}
	// The same inputs give the same interval.
	if d := Judge(k, map[coll.Case][]float64{k[0]: draws(rand.New(rand.NewPCG(1, 1)), 40, 200)}, base, Defaults)[0]; d.Lo == 0 {
		t.Errorf("no interval: %+v", d)
	}
	x := map[coll.Case][]float64{k[0]: draws(rng, 40, 120)}
	if a, b := Judge(k, x, base, Defaults)[0], Judge(k, x, base, Defaults)[0]; a != b {
		t.Errorf("not reproducible: %+v then %+v", a, b)
	}
}

// Identical runs of a machine whose level moves 5% from run to run, 6
// cases of 4 samples (smoke's cycles) and of 10, against the last 5: at
// most 1 run in 20 flagged, since the judge models the spread between
// runs; a planted 1.4x slowdown is flagged at least 90 times in 100
// (against a spread of 5%: 1.4x is within 7 of its standard deviations,
// and t with 4 degrees of freedom at 1 - 0.05/6 is 4.6). docs/history.md states these numbers; the draws are seeded,
// so they are the same on every machine.
func TestIdenticalRunsAreRarelyFlaggedAndASlowdownAlways(t *testing.T) {
	for _, n := range []int{4, 10} {
		s, u := flagged(uint64(n), 200, 5, 6, n, 0.05, 0)
		t.Logf("200 identical runs, 6 cases of %d samples, against 5 runs: %d flagged slower, %d inconclusive", n, s, u)
		if s > 10 {
			t.Errorf("%d samples: %d of 200 identical runs flagged slower; want at most 1 in 20", n, s)
		}
		s, _ = flagged(uint64(n)+100, 100, 5, 6, n, 0.05, 0.4)
		t.Logf("100 runs slowed 1.4x, 6 cases of %d samples, against 5 runs: %d flagged", n, s)
		if s < 90 {
			t.Errorf("%d samples: a 1.4x slowdown flagged %d of 100 times; want at least 90", n, s)
		}
	}
	// Against one run, nothing but a huge change is called.
	s, u := flagged(9, 200, 1, 6, 4, 0.05, 0)
	t.Logf("200 identical pairs, 6 cases of 4 samples: %d flagged slower, %d inconclusive", s, u)
	if s > 10 {
		t.Errorf("200 identical pairs: %d flagged slower; want at most 1 in 20", s)
	}
}

// Samples a time cannot be are refused, naming the case and the sample.
func TestValidateRefusesImpossibleSamples(t *testing.T) {
	k := cases(1)[0]
	for _, bad := range []float64{0, -5, math.NaN(), math.Inf(1)} {
		err := Validate("timings.csv", map[coll.Case][]float64{k: {10, bad}})
		if err == nil || !strings.Contains(err.Error(), "sample 2") || !strings.Contains(err.Error(), "timings.csv") {
			t.Errorf("%v: %v", bad, err)
		}
	}
	if err := Validate("timings.csv", map[coll.Case][]float64{k: {10, 0.5}}); err != nil {
		t.Error(err)
	}
}

// A run the machine stalled now and then (half its samples 10x, its
// fastest as the baseline's) is not called slower by its median: it is
// inconclusive, saying why; a run whose every sample moved is slower.
func TestStallsAreNotASlowdown(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	k := cases(1)
	var base []map[coll.Case][]float64
	for range 5 {
		base = append(base, map[coll.Case][]float64{k[0]: draws(rng, 10, 100)})
	}
	stalled := draws(rng, 10, 100)
	for i := range 6 {
		stalled[i] *= 10
	}
	c := Judge(k, map[coll.Case][]float64{k[0]: stalled}, base, Defaults)[0]
	if c.Verdict != Inconclusive || c.Why != stalls || !(c.Ratio > 5) {
		t.Errorf("a stalled run: %+v, want inconclusive (%s)", c, stalls)
	}
	c = Judge(k, map[coll.Case][]float64{k[0]: draws(rng, 10, 140)}, base, Defaults)[0]
	if c.Verdict != Slower {
		t.Errorf("every sample 1.4x: %+v, want slower", c)
	}
}
