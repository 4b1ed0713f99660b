package phases

import (
	"errors"
	"fmt"
	"slices"
	"strings"
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
	Variant    Variant // buffers and CTA policy
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
	// Groups are the hierarchy's groups, for the modes that run within
	// and across them; nil when [hierarchy] is off.
	Groups *Groups
}

// timingCase is one point of a sweep: everything but the mode.
type timingCase struct {
	run       string
	size      int64
	dtype     DType
	op        Op
	placement Placement
	variant   Variant
	method    Method
	batch     int
}

func (c timingCase) String() string {
	s := fmt.Sprintf("%s %s %s %s %s %s", c.run, SizeText(c.size), c.dtype, c.op, c.placement, c.method)
	if c.variant != Baseline {
		s += " " + c.variant.String()
	}
	return s
}

// RunTiming times every mode of every case of every run: per case, warmups,
// then cycles in which the modes take turns going first (the order rotates
// by one each cycle: for the seed's two modes, direct first on even
// cycles), inputs refilled before each sample; then every element of every
// mode's output is checked. A wrong element on any rank fails the run with
// the case named. progress, if not nil, gets one line per completed case.
func RunTiming(be Backend, comm Comm, runs []TimingRun, progress func(string)) ([]TimingSample, error) {
	var samples []TimingSample
	for _, r := range runs {
		modes, err := runModes(r)
		if err != nil {
			return samples, err
		}
		for _, v := range RunVariants(r) {
			got, err := timeVariant(be, comm, r, v, modes, progress)
			samples = append(samples, got...)
			if err != nil {
				return samples, err
			}
		}
	}
	return samples, nil
}

// RunVariants are the run's buffer kinds x CTA policies (Baseline when it
// names none), in the config's order.
func RunVariants(r TimingRun) []Variant {
	buffers, policies := r.Buffers, r.CTAPolicies
	if len(buffers) == 0 {
		buffers = []BufferKind{PlainBuffers}
	}
	if len(policies) == 0 {
		policies = []CTAPolicy{DefaultCTAPolicy}
	}
	var out []Variant
	for _, p := range policies {
		for _, b := range buffers {
			out = append(out, Variant{Buffers: b, CTAPolicy: p})
		}
	}
	return out
}

// timeVariant times every case of the run on the variant's backend.
func timeVariant(be Backend, comm Comm, r TimingRun, v Variant, modes []TimedMode, progress func(string)) (samples []TimingSample, err error) {
	vb, release, err := variantBackend(be, v)
	if err != nil {
		return nil, fmt.Errorf("timing %s %s on rank %d: %w", r.Name, v, be.Rank(), err)
	}
	defer func() {
		if rerr := release(); err == nil {
			err = rerr
		}
	}()
	var groups *Groups
	if slices.ContainsFunc(modes, TimedMode.NeedsGroups) {
		if groups = r.Groups; groups == nil {
			return nil, fmt.Errorf("run %s: its modes run within and across groups, but it has none ([hierarchy] is off)", r.Name)
		}
	}
	sc, closeScopes, err := openScopes(vb, groups)
	if err != nil {
		return nil, fmt.Errorf("timing %s %s on rank %d: %w", r.Name, v, be.Rank(), err)
	}
	defer func() {
		if rerr := closeScopes(); err == nil {
			err = rerr
		}
	}()
	for _, size := range r.SizesBytes {
		for _, dtype := range r.DTypes {
			for _, op := range r.Ops {
				for _, placement := range r.Placements {
					c := timingCase{run: r.Name, size: size, dtype: dtype, op: op, placement: placement, variant: v}
					got, err := timeBuffers(sc, comm, r, modes, c, progress)
					samples = append(samples, got...)
					if err != nil {
						return samples, err
					}
				}
			}
		}
	}
	return samples, nil
}

// variantBackend returns be for Baseline, and otherwise the backend's
// variant, under the same watch; release closes what it opened.
func variantBackend(be Backend, v Variant) (Backend, func() error, error) {
	if v == Baseline {
		return be, noRelease, nil
	}
	vs, err := variantsFor(be, v)
	if err != nil {
		return nil, nil, err
	}
	vb, err := vs.WithVariant(v)
	if err != nil {
		return nil, nil, err
	}
	return rewatch(be, vb), vb.Close, nil
}

// variantsFor is be's variants, when it has them and v among them.
func variantsFor(be Backend, v Variant) (Variants, error) {
	vs, ok := find[Variants](be)
	if !ok {
		return nil, missingVariants(be, v)
	}
	if err := vs.SupportsVariant(v); err != nil {
		return nil, err
	}
	return vs, nil
}

func missingVariants(be Backend, v Variant) error {
	return fmt.Errorf("buffers %q and cta_policy %q need NCCL's fast paths, which the %s backend has not: use plain buffers and the default policy, or the nccl backend",
		v.Buffers, v.CTAPolicy, be.Info().Backend)
}

// runModes returns the records of the run's modes (the seed's two when the
// run names none).
func runModes(r TimingRun) ([]TimedMode, error) {
	names := r.Modes
	if len(names) == 0 {
		names = DefaultModes
	}
	out := make([]TimedMode, len(names))
	for i, n := range names {
		m, ok := ModeOf(n)
		if !ok {
			return nil, fmt.Errorf("run %s: timed mode %q is unknown", r.Name, n)
		}
		out[i] = m
	}
	return out, nil
}

// timeBuffers allocates one (size, dtype, op, placement)'s buffers for every
// mode and times every method over them.
func timeBuffers(sc *scopes, comm Comm, r TimingRun, modes []TimedMode, base timingCase, progress func(string)) (samples []TimingSample, err error) {
	be := sc.be[World]
	a := &arena{be: be}
	defer a.release(&err)
	cases := make([]*modeCase, len(modes))
	for i, m := range modes {
		if cases[i], err = newModeCase(a, sc, m, base.dtype, int(base.size/int64(base.dtype.Size())), base.placement, base.op); err != nil {
			return nil, fmt.Errorf("timing %s %s on rank %d: %w", base, m.Name, be.Rank(), err)
		}
	}
	for _, name := range r.Methods {
		method, ok := methodOf(name)
		if !ok {
			return samples, fmt.Errorf("run %s: timing method %q is unknown", r.Name, name)
		}
		c := base
		c.method, c.batch = name, 1
		if method.batched {
			c.batch = r.Batch
		}
		got, err := timeCase(be, cases, method, c, r)
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
			progress(progressLine(c, modes, got, r.Cycles))
		}
	}
	return samples, nil
}

// progressLine is rank 0's line for a finished case: each mode's median.
func progressLine(c timingCase, modes []TimedMode, got []TimingSample, cycles int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "timing %-44s", c)
	for _, m := range modes {
		fmt.Fprintf(&b, " %s median %10.2f us ", m.Name, medianOf(got, m.Name))
	}
	fmt.Fprintf(&b, " (rank 0, %d cycles, checked)", cycles)
	return b.String()
}

func timeCase(be Backend, modes []*modeCase, method timingMethod, c timingCase, r TimingRun) (samples []TimingSample, err error) {
	fill := c.dtype.Elem(Input(c.op, be.Rank()))
	sample, release, err := method.sampler(be, modes, c.batch)
	if err != nil {
		return nil, err
	}
	defer func() {
		if rerr := release(); err == nil {
			err = rerr
		}
	}()
	filled := make(map[*modeCase]bool, len(modes))
	take := func(m *modeCase) (float64, error) {
		if method.refillAlways || m.writesInput || !filled[m] {
			if err := be.Fill(m.input(), fill); err != nil {
				return 0, err
			}
			filled[m] = true
		}
		// The prepared calls bypass the watch: the sample as a whole is
		// the step the watchdog gives a deadline.
		armStep(be, m.watchOp, c.size)
		return sample(m)
	}
	for range r.Warmups {
		for _, m := range modes {
			if _, err := take(m); err != nil {
				return nil, fmt.Errorf("warmup %s: %w", m.mode.Name, err)
			}
		}
	}
	order := make([]*modeCase, len(modes))
	samples = make([]TimingSample, 0, r.Cycles*len(modes)) // no regrowth between samples
	for cycle := range r.Cycles {
		for i := range modes {
			order[i] = modes[(i+cycle)%len(modes)]
		}
		for _, m := range order {
			us, err := take(m)
			if err != nil {
				return samples, fmt.Errorf("%s cycle %d: %w", m.mode.Name, cycle, err)
			}
			samples = append(samples, TimingSample{Run: c.run, SizeBytes: c.size, DType: c.dtype, Op: c.op,
				Placement: c.placement, Variant: c.variant, Method: c.method, Batch: c.batch, Mode: m.mode.Name,
				Cycle: cycle, DurationUS: us, Correct: true})
		}
	}
	if method.validateAfter {
		for _, m := range modes {
			if err := be.Fill(m.input(), fill); err != nil {
				return samples, err
			}
			armStep(be, m.watchOp, c.size)
			if err := m.run(); err != nil {
				return samples, fmt.Errorf("validation %s: %w", m.mode.Name, err)
			}
		}
	}
	if err := be.Synchronize(); err != nil {
		return samples, err
	}
	for _, m := range modes {
		bad, err := m.check(be, c.dtype)
		if err != nil {
			return samples, err
		}
		if bad != nil {
			for i := range samples {
				samples[i].Correct = false
			}
			return samples, &CheckError{Phase: "timing", What: fmt.Sprintf("%s, %s output: %s", c, m.mode.Name, bad)}
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
