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
