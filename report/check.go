package report

import (
	"fmt"
	"math"

	"rsag/coll"
)

// MaxTimeUS bounds a time per operation read back from a summary: 10^12
// µs is eleven days per operation, past any run rsag makes; 1e308 is a
// damaged or forged file, not a measurement.
const MaxTimeUS = 1e12

// CheckSummary checks the numbers of a summary read back (rsag report,
// rsag compare) before anything is drawn or judged from them: a page is
// only as true as its numbers, and a hand-edited or damaged summary.json
// must not render as a green page. Every time per operation is positive,
// finite and at most MaxTimeUS, its statistics in order (min <= p10 <=
// median <= p90 <= p99 <= max); counts are not negative and samples at
// least one; each case is listed once; a contract's ranks are the run's.
// The error names the file, the case and the field.
func CheckSummary(path string, s Summary) error {
	damaged := func(format string, args ...any) error {
		return fmt.Errorf("%s: "+format+": is the file damaged or edited? read the summary.json the run wrote", append([]any{path}, args...)...)
	}
	if s.WorldSize < 0 {
		return damaged("world_size is %d, not a number of ranks", s.WorldSize)
	}
	for _, c := range s.Contracts {
		if c.HeldOn < 0 || (s.WorldSize > 0 && c.HeldOn > s.WorldSize) {
			return damaged("contract %s held on %d ranks of %d", c.Name, c.HeldOn, s.WorldSize)
		}
		for _, r := range c.FailedRanks {
			if r < 0 || (s.WorldSize > 0 && r >= s.WorldSize) {
				return damaged("contract %s failed on rank %d, not a rank of the %d", c.Name, r, s.WorldSize)
			}
		}
	}
	seen := map[coll.Case]bool{}
	for _, t := range s.Timing {
		name := t.Case.String()
		if seen[t.Case] {
			return fmt.Errorf("%s lists the case %s twice: a summary lists each case once; is it damaged, or two merged?", path, name)
		}
		seen[t.Case] = true
		if t.Samples < 1 || t.Discarded < 0 || t.Ranks < 0 || t.Unchecked < 0 {
			return damaged("case %s has samples %d, discarded %d, ranks %d, unchecked_samples %d: a case has at least one sample and no negative count",
				name, t.Samples, t.Discarded, t.Ranks, t.Unchecked)
		}
		times := []struct {
			what string
			us   float64
		}{{"min", t.MinUS}, {"p10", t.P10US}, {"median", t.MedianUS}, {"p90", t.P90US}, {"p99", t.P99US}, {"max", t.MaxUS}, {"mean", t.MeanUS}}
		for _, v := range times {
			if !(v.us > 0) || v.us > MaxTimeUS {
				return damaged("case %s has a %s of %v us: a time per operation is positive and at most %g us", name, v.what, v.us, MaxTimeUS)
			}
		}
		for i := 1; i < 6; i++ {
			if times[i-1].us > times[i].us {
				return damaged("case %s has min %v, p10 %v, median %v, p90 %v, p99 %v, max %v us, not in order (%s above %s)",
					name, t.MinUS, t.P10US, t.MedianUS, t.P90US, t.P99US, t.MaxUS, times[i-1].what, times[i].what)
			}
		}
		for _, v := range []struct {
			what string
			x    float64
		}{{"std_us", t.StdUS}, {"cv", t.CV}, {"algbw_gbps", t.AlgBWGBps}, {"busbw_gbps", t.BusBWGBps}} {
			if !(v.x >= 0) || math.IsInf(v.x, 0) {
				return damaged("case %s has %s %v: it is a finite number, not negative", name, v.what, v.x)
			}
		}
	}
	for _, m := range s.Memory {
		if m.PayloadBytes < 0 || m.AnalyticSteadyBytes < 0 || m.AnalyticPeakBytes < 0 {
			return damaged("memory mode %s has a negative byte count", m.Mode)
		}
	}
	if k := s.Soak; k != nil {
		if k.Iterations < 0 || k.FailedIterations < 0 || k.FailedIterations > k.Iterations || !(k.FailureRate >= 0 && k.FailureRate <= 1) {
			return damaged("the soak has %d iterations, %d failed, a failure rate of %v", k.Iterations, k.FailedIterations, k.FailureRate)
		}
	}
	return nil
}
