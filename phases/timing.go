package phases

import (
	"errors"
	"fmt"
)

// TimingSample is one timed operation on one rank.
type TimingSample struct {
	SizeBytes  int64
	Mode       string // "direct" or "decomposed"
	Cycle      int
	DurationUS float64
	Correct    bool
}

// The seed's mode names.
const (
	Direct     = "direct"
	Decomposed = "decomposed"
)

// TimingConfig is what the timing phase needs from the config.
type TimingConfig struct {
	SizesBytes []int64
	Warmups    int
	Cycles     int
}

// timingBuffers are one size's buffers: the direct AllReduce works in place
// on its input, the decomposition reads its own input through a shard into
// an output, as in the seed.
type timingBuffers struct {
	direct, decompIn, shard, decompOut Buffer
}

// timedMode is one side of the comparison: what to refill and what to run.
type timedMode struct {
	name   string
	input  func(*timingBuffers) Buffer
	output func(*timingBuffers) Buffer
	run    func(Backend, *timingBuffers) error
}

var timedModes = []timedMode{
	{
		name:   Direct,
		input:  func(t *timingBuffers) Buffer { return t.direct },
		output: func(t *timingBuffers) Buffer { return t.direct },
		run:    func(be Backend, t *timingBuffers) error { return be.AllReduce(t.direct, t.direct, Sum) },
	},
	{
		name:   Decomposed,
		input:  func(t *timingBuffers) Buffer { return t.decompIn },
		output: func(t *timingBuffers) Buffer { return t.decompOut },
		run: func(be Backend, t *timingBuffers) error {
			if err := be.ReduceScatter(t.decompIn, t.shard, Sum); err != nil {
				return err
			}
			return be.AllGather(t.shard, t.decompOut)
		},
	},
}

// RankSum is the value every element holds after a SUM over ranks whose
// inputs are rank+1: W(W+1)/2, the seed's 10.0 for four ranks.
func RankSum(world int) float32 { return float32(world * (world + 1) / 2) }

// RunTiming times direct AllReduce against ReduceScatter+AllGather for each
// size, exactly as the seed: warmups, then cycles alternating which mode
// goes first (direct first on even cycles), each sample one operation
// between two timestamps after a synchronisation, inputs refilled with
// rank+1 before each sample; then every element of both outputs is checked.
// A wrong element on any rank fails the run with the size named. progress,
// if not nil, gets one line per completed size.
func RunTiming(be Backend, comm Comm, cfg TimingConfig, progress func(string)) ([]TimingSample, error) {
	var samples []TimingSample
	for _, size := range cfg.SizesBytes {
		got, err := timeSize(be, cfg, size)
		samples = append(samples, got...)
		var local *CheckError
		if err != nil && !errors.As(err, &local) {
			return samples, fmt.Errorf("timing at %d bytes on rank %d: %w", size, be.Rank(), err)
		}
		// Every rank reaches this point, so a check that failed on one rank
		// ends the run on all of them instead of leaving the others waiting.
		if err := agree(comm, "timing", fmt.Sprintf("%d bytes", size), local); err != nil {
			return samples, err
		}
		if err := comm.Barrier(); err != nil {
			return samples, err
		}
		if progress != nil {
			progress(fmt.Sprintf("timing %11d B  direct median %10.2f us  decomposed median %10.2f us  (rank 0, %d cycles, checked)",
				size, medianOf(got, Direct), medianOf(got, Decomposed), cfg.Cycles))
		}
	}
	return samples, nil
}

func timeSize(be Backend, cfg TimingConfig, size int64) (samples []TimingSample, err error) {
	a := &arena{be: be}
	defer a.release(&err)
	world := be.WorldSize()
	count := int(size / int64(Float32.Size()))
	var t timingBuffers
	for _, p := range []*Buffer{&t.direct, &t.decompIn, &t.shard, &t.decompOut} {
		n := count
		if p == &t.shard {
			n = count / world
		}
		if *p, err = a.alloc(Float32, n); err != nil {
			return nil, err
		}
	}
	fill := float32Elem(float32(be.Rank() + 1))

	for range cfg.Warmups {
		for _, m := range timedModes {
			if err := be.Fill(m.input(&t), fill); err != nil {
				return nil, err
			}
			if err := m.run(be, &t); err != nil {
				return nil, fmt.Errorf("warmup %s: %w", m.name, err)
			}
		}
	}
	if err := be.Synchronize(); err != nil {
		return nil, err
	}

	for cycle := range cfg.Cycles {
		order := timedModes
		if cycle%2 == 1 {
			order = []timedMode{timedModes[1], timedModes[0]}
		}
		for _, m := range order {
			if err := be.Fill(m.input(&t), fill); err != nil {
				return nil, err
			}
			us, err := be.Time(func() error { return m.run(be, &t) })
			if err != nil {
				return samples, fmt.Errorf("%s cycle %d: %w", m.name, cycle, err)
			}
			samples = append(samples, TimingSample{SizeBytes: size, Mode: m.name, Cycle: cycle, DurationUS: us, Correct: true})
		}
	}

	want := float32Elem(RankSum(world))
	for _, m := range timedModes {
		bad, err := checkConst(be, m.output(&t), want)
		if err != nil {
			return samples, err
		}
		if bad != nil {
			for i := range samples {
				samples[i].Correct = false
			}
			return samples, &CheckError{Phase: "timing", What: fmt.Sprintf("%d bytes, %s output: %s", size, m.name, bad)}
		}
	}
	return samples, nil
}

func medianOf(samples []TimingSample, mode string) float64 {
	var v []float64
	for _, s := range samples {
		if s.Mode == mode {
			v = append(v, s.DurationUS)
		}
	}
	return Median(v)
}

// CheckError is a correctness check that failed: on this rank (Ranks nil)
// or, after the ranks compared notes, on the ranks listed.
type CheckError struct {
	Phase string
	What  string
	Ranks []int
}

func (e *CheckError) Error() string {
	if e.Ranks != nil {
		return fmt.Sprintf("%s check failed at %s on rank(s) %v", e.Phase, e.What, e.Ranks)
	}
	return fmt.Sprintf("%s check failed at %s", e.Phase, e.What)
}

// agree tells every rank whether the check passed on all ranks. local is
// this rank's failure, or nil.
func agree(comm Comm, phase, what string, local *CheckError) error {
	ok, bad, err := comm.AllTrue(local == nil)
	if err != nil {
		return err
	}
	if ok {
		return nil
	}
	if local != nil {
		what = local.What
	}
	return &CheckError{Phase: phase, What: what, Ranks: bad}
}
