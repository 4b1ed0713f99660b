package phases

import (
	"runtime"
	"time"

	"rsag/coll"
	"rsag/internal/quantile"
)

// The timed loop passes through Go's scheduler on purpose, at the same
// samples on every rank.
//
// Go's monitor thread (sysmon) takes a goroutine that has not passed
// through the scheduler for 10 ms for one that overruns its time slice.
// The timed loop's goroutine never did: it is locked to its thread (MPI,
// CUDA and NCCL are called from it alone) and goes from one C call to the
// next. So every 10 ms sysmon took its scheduler slot away in mid-sample,
// signalled its thread, and then polled every 20 us for a millisecond or
// more, and the goroutine's return from C woke it again. Measured on 16
// ranks of 16 cores, 1 KiB AllReduce in batches of 100 (docs/performance-log.md):
// each rank's main thread was preempted about 900 times a second and its
// other threads switched about 1500 times, and the loop was 1.12x the
// same loop in C in t_avg; every such wake-up takes a core from some rank,
// and every rank's collective waits for it. (A case whose samples run in
// one C call, coll.SampleTimer, has none of this and needs no pace.)
//
// Yielding between samples, outside the timed region, before sysmon's
// 10 ms is up leaves it nothing to take: then it wakes about 100 times a
// second. A yield of a locked goroutine hands its thread's slot to another
// thread and back, so it is done rarely (every paceSlice) and at the same
// sample on every rank, where all of them are between samples: one rank
// yielding while the others wait for it in the next collective cost more
// than it saved.
const paceSlice = 5 * time.Millisecond

// yield is runtime.Gosched; the tests count the calls.
var yield = runtime.Gosched

// pacer yields after every every-th timed sample.
type pacer struct {
	every, taken int
}

// agreePace returns the pacer of a case whose warm-up samples took spent
// each (a sample's whole turn: its refill, the sample and its check) on
// this rank: every rank yields after the same samples, the most of them
// that take at most paceSlice at the slowest rank's median warm-up. With
// no warm-up it yields after every sample.
func agreePace(comm coll.Comm, spent []float64) (*pacer, error) {
	if len(spent) == 0 {
		return &pacer{every: 1}, nil
	}
	slowest, err := coll.MaxFloat64(comm, quantile.Median(spent))
	if err != nil {
		return nil, err
	}
	return &pacer{every: samplesPerSlice(slowest)}, nil
}

// samplesPerSlice is how many samples of seconds each fit in paceSlice,
// at least one.
func samplesPerSlice(seconds float64) int {
	if !(seconds > 0) {
		return 1
	}
	return int(max(1, min(paceSlice.Seconds()/seconds, 1<<20)))
}

// between is called after each timed sample and its check.
func (p *pacer) between() {
	p.taken++
	if p.taken%p.every == 0 {
		yield()
	}
}
