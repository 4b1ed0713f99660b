package phases

import (
	"errors"
	"fmt"
)

// Placement says where the collectives' outputs go.
type Placement string

const (
	// OutOfPlace gives every collective its own output buffer.
	OutOfPlace Placement = "out-of-place"
	// InPlace reduces into the input: AllReduce in its buffer, ReduceScatter
	// leaving the shard inside the input at rank x count, AllGather reading
	// that shard from inside its output.
	InPlace Placement = "in-place"
)

// Method says how a sample is timed.
type Method string

const (
	// PerOp is the seed's: one operation between two timestamps taken after
	// a synchronisation.
	PerOp Method = "per-op"
	// Batched is nccl-tests': Batch back-to-back operations between two
	// timestamps, divided by Batch.
	Batched Method = "batched"
	// GraphReplay captures Batch operations into a CUDA graph and times its
	// replay, divided by Batch: no launch overhead.
	GraphReplay Method = "graph"
)

// TimingSample is one timed sample on one rank.
type TimingSample struct {
	Run        string
	SizeBytes  int64
	DType      DType
	Op         Op
	Placement  Placement
	Method     Method
	Batch      int // operations per sample: 1 for per-op
	Mode       Mode
	Cycle      int
	DurationUS float64 // per operation
	Correct    bool
}

// TimingRun is one sweep of the timing phase: every combination of its
// sizes, dtypes, ops, placements, variants (buffers x CTA policies) and
// methods is a case, and every case times each of its modes.
type TimingRun struct {
	Name        string
	SizesBytes  []int64
	DTypes      []DType
	Ops         []Op
	Placements  []Placement
	Methods     []Method
	Modes       []Mode       // empty: DefaultModes
	Buffers     []BufferKind // empty: plain
	CTAPolicies []CTAPolicy  // empty: default
	Batch       int
	Warmups     int
	Cycles      int
}

// timingCase is one point of a sweep: everything but the mode.
type timingCase struct {
	run       string
	size      int64
	dtype     DType
	op        Op
	placement Placement
	method    Method
	batch     int
}

func (c timingCase) String() string {
	return fmt.Sprintf("%s %s %s %s %s %s", c.run, SizeText(c.size), c.dtype, c.op, c.placement, c.method)
}

// caseBuffers are one case's buffers. Out of place, each has its own
// memory; in place, direct's input is its output, and the decomposition's
// shard is a view inside its full buffer at rank x count/W.
type caseBuffers struct {
	directIn, directOut, decompIn, shard, decompOut Buffer
}

// timedMode is one side of the comparison: what to refill, what to run and
// what to check, as data.
type timedMode struct {
	name   Mode
	input  func(*caseBuffers) Buffer
	output func(*caseBuffers) Buffer
	run    func(Backend, *caseBuffers, Op) error
}

var timedModes = []timedMode{
	{
		name:   Direct,
		input:  func(b *caseBuffers) Buffer { return b.directIn },
		output: func(b *caseBuffers) Buffer { return b.directOut },
		run:    func(be Backend, b *caseBuffers, op Op) error { return be.AllReduce(b.directIn, b.directOut, op) },
	},
	{
		name:   Decomposed,
		input:  func(b *caseBuffers) Buffer { return b.decompIn },
		output: func(b *caseBuffers) Buffer { return b.decompOut },
		run: func(be Backend, b *caseBuffers, op Op) error {
			if err := be.ReduceScatter(b.decompIn, b.shard, op); err != nil {
				return err
			}
			return be.AllGather(b.shard, b.decompOut)
		},
	},
}

// RunTiming times direct AllReduce against ReduceScatter+AllGather for every
// case of every run, as the seed did for its one case: per case, warmups,
// then cycles alternating which mode goes first (direct first on even
// cycles), inputs refilled before each sample; then every element of both
// outputs is checked. A wrong element on any rank fails the run with the
// case named. progress, if not nil, gets one line per completed case.
func RunTiming(be Backend, comm Comm, runs []TimingRun, progress func(string)) ([]TimingSample, error) {
	var samples []TimingSample
	for _, r := range runs {
		for _, size := range r.SizesBytes {
			for _, dtype := range r.DTypes {
				for _, op := range r.Ops {
					for _, placement := range r.Placements {
						got, err := timeBuffers(be, comm, r, size, dtype, op, placement, progress)
						samples = append(samples, got...)
						if err != nil {
							return samples, err
						}
					}
				}
			}
		}
	}
	return samples, nil
}

// timeBuffers allocates one (size, dtype, placement)'s buffers and times
// every method over them.
func timeBuffers(be Backend, comm Comm, r TimingRun, size int64, dtype DType, op Op, placement Placement, progress func(string)) (samples []TimingSample, err error) {
	a := &arena{be: be}
	defer a.release(&err)
	bufs, err := allocCase(a, be, dtype, int(size/int64(dtype.Size())), placement)
	if err != nil {
		return nil, fmt.Errorf("timing %s %s %s at %d bytes on rank %d: %w", r.Name, dtype, placement, size, be.Rank(), err)
	}
	for _, method := range r.Methods {
		c := timingCase{run: r.Name, size: size, dtype: dtype, op: op, placement: placement, method: method, batch: 1}
		if method != PerOp {
			c.batch = r.Batch
		}
		got, err := timeCase(be, bufs, c, r)
		samples = append(samples, got...)
		var local *CheckError
		if err != nil && !errors.As(err, &local) {
			return samples, fmt.Errorf("timing %s on rank %d: %w", c, be.Rank(), err)
		}
		// Every rank reaches this point, so a check that failed on one rank
		// ends the run on all of them instead of leaving the others waiting.
		if err := agree(comm, "timing", c.String(), local); err != nil {
			return samples, err
		}
		if err := comm.Barrier(); err != nil {
			return samples, err
		}
		if progress != nil {
			progress(fmt.Sprintf("timing %-44s direct median %10.2f us  decomposed median %10.2f us  (rank 0, %d cycles, checked)",
				c, medianOf(got, Direct), medianOf(got, Decomposed), r.Cycles))
		}
	}
	return samples, nil
}

func allocCase(a *arena, be Backend, dtype DType, count int, placement Placement) (*caseBuffers, error) {
	world := be.WorldSize()
	var b caseBuffers
	var err error
	if b.directIn, err = a.alloc(dtype, count); err != nil {
		return nil, err
	}
	if b.decompIn, err = a.alloc(dtype, count); err != nil {
		return nil, err
	}
	if placement == InPlace {
		b.directOut, b.decompOut = b.directIn, b.decompIn
		b.shard, err = be.View(b.decompIn, be.Rank()*(count/world), count/world)
		return &b, err
	}
	for _, p := range []*Buffer{&b.directOut, &b.decompOut} {
		if *p, err = a.alloc(dtype, count); err != nil {
			return nil, err
		}
	}
	b.shard, err = a.alloc(dtype, count/world)
	return &b, err
}

// sampler times one mode once and returns microseconds per operation.
type sampler func(m timedMode) (float64, error)

// samplerFor returns the case's timing method over be, and a function that
// releases what it set up (the captured graphs).
func samplerFor(be Backend, bufs *caseBuffers, c timingCase) (sampler, func() error, error) {
	run := func(m timedMode) func() error { return func() error { return m.run(be, bufs, c.op) } }
	switch c.method {
	case PerOp:
		return func(m timedMode) (float64, error) { return be.Time(run(m)) }, func() error { return nil }, nil
	case Batched:
		return func(m timedMode) (float64, error) {
			us, err := be.TimeBatch(c.batch, run(m))
			return us / float64(c.batch), err
		}, func() error { return nil }, nil
	case GraphReplay:
		gt, ok := graphTimer(be)
		if !ok {
			return nil, nil, fmt.Errorf("the graph method needs a backend that captures graphs (nccl); use per-op or batched on %s", be.Info().Backend)
		}
		graphs := map[Mode]Graph{}
		release := func() error {
			var errs []error
			for _, g := range graphs {
				errs = append(errs, g.Close())
			}
			return errors.Join(errs...)
		}
		// NCCL connects its peers on a size's first collective; do that
		// outside the capture, as nccl-tests does.
		for _, m := range timedModes {
			if err := run(m)(); err != nil {
				return nil, nil, err
			}
		}
		if err := be.Synchronize(); err != nil {
			return nil, nil, err
		}
		for _, m := range timedModes {
			g, err := gt.CaptureGraph(c.batch, run(m))
			if err != nil {
				release()
				return nil, nil, fmt.Errorf("capturing %s into a graph: %w", m.name, err)
			}
			graphs[m.name] = g
		}
		return func(m timedMode) (float64, error) {
			us, err := graphs[m.name].Time()
			return us / float64(c.batch), err
		}, release, nil
	}
	return nil, nil, fmt.Errorf("unknown timing method %q", c.method)
}

// graphTimer finds graph capture on be, through any wrappers (Unwrap).
func graphTimer(be Backend) (GraphTimer, bool) {
	for {
		if gt, ok := be.(GraphTimer); ok {
			return gt, true
		}
		u, ok := be.(interface{ Unwrap() Backend })
		if !ok {
			return nil, false
		}
		be = u.Unwrap()
	}
}

func timeCase(be Backend, bufs *caseBuffers, c timingCase, r TimingRun) (samples []TimingSample, err error) {
	world := be.WorldSize()
	fill := c.dtype.Elem(Input(c.op, be.Rank()))
	sample, release, err := samplerFor(be, bufs, c)
	if err != nil {
		return nil, err
	}
	defer func() {
		if rerr := release(); err == nil {
			err = rerr
		}
	}()
	for range r.Warmups {
		for _, m := range timedModes {
			if err := be.Fill(m.input(bufs), fill); err != nil {
				return nil, err
			}
			if _, err := sample(m); err != nil {
				return nil, fmt.Errorf("warmup %s: %w", m.name, err)
			}
		}
	}
	for cycle := range r.Cycles {
		order := timedModes
		if cycle%2 == 1 {
			order = []timedMode{timedModes[1], timedModes[0]}
		}
		for _, m := range order {
			if err := be.Fill(m.input(bufs), fill); err != nil {
				return nil, err
			}
			us, err := sample(m)
			if err != nil {
				return samples, fmt.Errorf("%s cycle %d: %w", m.name, cycle, err)
			}
			samples = append(samples, TimingSample{Run: c.run, SizeBytes: c.size, DType: c.dtype, Op: c.op,
				Placement: c.placement, Method: c.method, Batch: c.batch, Mode: m.name, Cycle: cycle,
				DurationUS: us, Correct: true})
		}
	}
	// A per-op sample's output is checked as the seed checked it. Batched
	// and graph samples ran the operation many times over one input (in
	// place, over its own output), so, as nccl-tests does, a separate pass
	// after timing refills, runs each mode once and checks that.
	if c.method != PerOp {
		for _, m := range timedModes {
			if err := be.Fill(m.input(bufs), fill); err != nil {
				return samples, err
			}
			if err := m.run(be, bufs, c.op); err != nil {
				return samples, fmt.Errorf("validation %s: %w", m.name, err)
			}
		}
	}
	if err := be.Synchronize(); err != nil {
		return samples, err
	}
	want := c.dtype.Elem(Expected(c.op, world))
	for _, m := range timedModes {
		bad, err := checkConst(be, m.output(bufs), want)
		if err != nil {
			return samples, err
		}
		if bad != nil {
			for i := range samples {
				samples[i].Correct = false
			}
			return samples, &CheckError{Phase: "timing", What: fmt.Sprintf("%s, %s output: %s", c, m.name, bad)}
		}
	}
	return samples, nil
}

func medianOf(samples []TimingSample, mode Mode) float64 {
	var v []float64
	for _, s := range samples {
		if s.Mode == mode {
			v = append(v, s.DurationUS)
		}
	}
	return Median(v)
}

// SizeText writes a byte count as 1K, 64K, 256M when it is a whole number
// of such units, and as plain bytes otherwise.
func SizeText(b int64) string {
	for _, u := range []struct {
		s string
		m int64
	}{{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if b >= u.m && b%u.m == 0 {
			return fmt.Sprintf("%d%s", b/u.m, u.s)
		}
	}
	return fmt.Sprint(b)
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
