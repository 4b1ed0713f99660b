package baseline

import (
	"math"
	"math/rand/v2"
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

// Ten pairs of identical runs (synthetic draws from one distribution) flag
// nothing; a planted 10% slowdown of one case is caught at 40 samples.
func TestGateFlagsNoiseNeverAndATenPercentStep(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	k := coll.Case{Run: "default", SizeBytes: 1 << 20, Mode: "direct"}
	order := []coll.Case{k}
	falsePositives := 0
	for range 10 {
		base := map[coll.Case][]float64{k: draws(rng, 40, 100)}
		run := map[coll.Case][]float64{k: draws(rng, 40, 100)}
		if c := Judge(order, run, []map[coll.Case][]float64{base}, Defaults)[0]; c.Verdict != Same {
			falsePositives++
		}
	}
	if falsePositives != 0 {
		t.Errorf("%d of 10 identical pairs flagged", falsePositives)
	}
	base := map[coll.Case][]float64{k: draws(rng, 40, 100)}
	run := map[coll.Case][]float64{k: draws(rng, 40, 110)}
	c := Judge(order, run, []map[coll.Case][]float64{base}, Defaults)[0]
	if c.Verdict != Slower {
		t.Errorf("a 10%% slowdown at 40 samples: %+v", c)
	}
	// The same inputs give the same interval.
	if d := Judge(order, run, []map[coll.Case][]float64{base}, Defaults)[0]; d != c {
		t.Errorf("not reproducible: %+v then %+v", c, d)
	}
}

// judged counts, over trials, how often a run of n samples drawn around
// 100·(1+step) is judged slower and faster against baseline runs of n
// samples each drawn around 100 (sigma 5%, log-normal), with the gate's
// defaults (2000 resamples, 95%, tolerance 5%).
func judged(seed1, seed2 uint64, trials, runs, n int, step float64) (slower, faster int) {
	rng := rand.New(rand.NewPCG(seed1, seed2))
	k := coll.Case{Run: "default", SizeBytes: 1 << 20, Mode: "direct"}
	for range trials {
		var base []map[coll.Case][]float64
		for range runs {
			base = append(base, map[coll.Case][]float64{k: draws(rng, n, 100)})
		}
		run := map[coll.Case][]float64{k: draws(rng, n, 100*(1+step))}
		switch Judge([]coll.Case{k}, run, base, Defaults)[0].Verdict {
		case Slower:
			slower++
		case Faster:
			faster++
		}
	}
	return slower, faster
}

// At the seed's default 10 cycles (10 samples a case), with the noise
// assumed log-normal of sigma 5%: identical pairs, and the smallest change
// the gate catches in at least 90 of 100 trials, with one run as the
// baseline (rsag check -baseline DIR) and with the median of 5 (rsag check
// -baseline FILE, -last 5). docs/history.md states these numbers; the
// draws are seeded, so they are the same on every machine.
func TestGateAtTheSeedsTenCycles(t *testing.T) {
	const cycles = 10
	if s, f := judged(3, 3, 10, 1, cycles, 0); s+f != 0 {
		t.Errorf("10 identical pairs at %d samples: %d flagged slower, %d faster; want none", cycles, s, f)
	}
	s, f := judged(11, 1, 500, 1, cycles, 0)
	t.Logf("500 identical pairs at %d samples: %d flagged slower, %d faster", cycles, s, f)
	if s != 3 || f != 6 {
		t.Errorf("500 identical pairs: %d slower, %d faster; docs/history.md says 3 and 6", s, f)
	}
	for _, c := range []struct {
		runs     int
		smallest int // percent: caught in >= 90 of 100; one percent less is not
	}{{1, 10}, {5, 9}} {
		var caught [2]int
		for i, step := range []int{c.smallest - 1, c.smallest} {
			caught[i], _ = judged(uint64(step), uint64(c.runs), 100, c.runs, cycles, float64(step)/100)
		}
		t.Logf("baseline of %d run(s), %d samples each: a %d%% change caught %d/100, %d%% caught %d/100",
			c.runs, cycles, c.smallest-1, caught[0], c.smallest, caught[1])
		if caught[0] >= 90 || caught[1] < 90 {
			t.Errorf("baseline of %d run(s): %d%% caught %d/100, %d%% %d/100; docs/history.md says %d%% is the smallest caught 90 times in 100",
				c.runs, c.smallest-1, caught[0], c.smallest, caught[1], c.smallest)
		}
	}
}
