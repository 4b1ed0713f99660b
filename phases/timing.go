package phases

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"rsag/coll"
	"rsag/internal/quantile"
)

// TimingSample is one timed sample on one rank: its case (with the mode
// timed), its cycle, its time per operation and what the check of its
// output found.
type TimingSample struct {
	coll.Case
	Cycle      int
	DurationUS float64 // per operation
	// Checked says whether the sample's output was checked: every sample's
	// by default, only the last of each mode with timing.check = "last".
	// Correct says it held; an unchecked sample is never Correct.
	Checked, Correct bool
}

// RunTiming times every mode of every case of every sweep: per case,
// warmups, then cycles in which the modes take turns going first (the order
// rotates by one each cycle: for the seed's two modes, direct first on even
// cycles), inputs refilled before each sample. Every element of what every
// sample and warm-up left in its mode's output is checked after its clock
// stopped (or, with the sweep's CheckLast, what the last sample of each
// mode left). A wrong element on any rank fails the run, once every rank
// has finished the case, naming the rank, its host, the case, the mode and
// the cycle. A case that times one mode of one collective out of place,
// batched, takes its samples in one call where the backend can
// (coll.SampleTimer); otherwise every rank yields to Go's scheduler
// between samples, after the same ones (pace.go). Either keeps Go's
// runtime out of the timed loop. groups are the hierarchy's, for the modes that run
// within and across them (nil when [hierarchy] is off). progress, if not
// nil, gets one line per completed case, or in a sweep of more than
// streamAll cases one per eighth of them (sampledProgress).
func RunTiming(be coll.Backend, comm coll.Comm, sweeps []coll.Sweep, groups *Groups, progress func(string)) ([]TimingSample, error) {
	var samples []TimingSample
	total := 0
	for _, sw := range sweeps {
		total += len(sw.Cases())
	}
	if progress != nil {
		progress = sampledProgress(progress, total)
	}
	for _, sw := range sweeps {
		modes, err := sw.TimedModes()
		if err != nil {
			return samples, err
		}
		cases := sw.Cases()
		for len(cases) > 0 {
			n := run(cases, coll.Case.Variant)
			got, err := timeVariant(be, comm, sw, groups, cases[:n], modes, progress)
			samples = append(samples, got...)
			if err != nil {
				return samples, err
			}
			cases = cases[n:]
		}
	}
	return samples, nil
}

// streamAll is how many cases get a streamed line each; a sweep of more
// (sweep-mpi's 256) gets one per eighth of its cases, each "[k/N]" first:
// the Timings table has every case, and hundreds of lines streamed before
// it would say the same.
const streamAll = 32

// sampledProgress passes every line on when there are at most streamAll
// cases, and otherwise every ceil(total/8)-th and the last, numbered.
func sampledProgress(progress func(string), total int) func(string) {
	if total <= streamAll {
		return progress
	}
	every, done := (total+7)/8, 0
	return func(line string) {
		done++
		if done%every == 0 || done == total {
			progress(fmt.Sprintf("[%d/%d] %s", done, total, line))
		}
	}
}

// run is the length of the run of cases at the start of cases that share
// key's value.
func run[K comparable](cases []coll.Case, key func(coll.Case) K) int {
	n := 1
	for n < len(cases) && key(cases[n]) == key(cases[0]) {
		n++
	}
	return n
}

// timeVariant times cases, which share one backend variant, on it.
func timeVariant(be coll.Backend, comm coll.Comm, sw coll.Sweep, groups *Groups, cases []coll.Case, modes []coll.TimedMode, progress func(string)) (samples []TimingSample, err error) {
	v := cases[0].Variant()
	vb, release, err := variantBackend(be, v)
	if err != nil {
		return nil, fmt.Errorf("timing %s %s on rank %d: %w", sw.Name, v, be.Rank(), err)
	}
	defer func() {
		if rerr := release(); err == nil {
			err = rerr
		}
	}()
	if !slices.ContainsFunc(modes, coll.TimedMode.NeedsGroups) {
		groups = nil
	} else if groups == nil {
		return nil, fmt.Errorf("run %s: its modes run within and across groups, but it has none ([hierarchy] is off)", sw.Name)
	}
	sc, closeScopes, err := openScopes(vb, groups)
	if err != nil {
		return nil, fmt.Errorf("timing %s %s on rank %d: %w", sw.Name, v, be.Rank(), err)
	}
	defer func() {
		if rerr := closeScopes(); err == nil {
			err = rerr
		}
	}()
	for len(cases) > 0 {
		n := run(cases, coll.Case.Allocation)
		got, err := timeBuffers(sc, comm, sw, modes, cases[:n], progress)
		samples = append(samples, got...)
		if err != nil {
			return samples, err
		}
		cases = cases[n:]
	}
	return samples, nil
}

// variantBackend returns be for Baseline, and otherwise the backend's
// variant, under the same watch; release closes what it opened.
func variantBackend(be coll.Backend, v coll.Variant) (coll.Backend, func() error, error) {
	if v == coll.Baseline {
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
func variantsFor(be coll.Backend, v coll.Variant) (coll.Variants, error) {
	vs, ok := coll.Find[coll.Variants](be)
	if !ok {
		return nil, missingVariants(be, v)
	}
	if err := vs.SupportsVariant(v); err != nil {
		return nil, err
	}
	return vs, nil
}

func missingVariants(be coll.Backend, v coll.Variant) error {
	return fmt.Errorf("buffers %q and cta_policy %q need NCCL's fast paths, which the %s backend has not: use plain buffers and the default policy, or the nccl backend",
		v.Buffers, v.CTAPolicy, be.Info().Backend)
}

// timeBuffers allocates the buffers every mode of cases needs (the cases
// share them: they differ in method alone) and times each case over them.
func timeBuffers(sc *scopes, comm coll.Comm, sw coll.Sweep, modes []coll.TimedMode, cases []coll.Case, progress func(string)) (samples []TimingSample, err error) {
	be := sc.be[coll.World]
	a := &arena{be: be}
	defer a.release(&err)
	base := cases[0]
	bufs := make([]*modeCase, len(modes))
	for i, m := range modes {
		if bufs[i], err = newModeCase(a, sc, m, base); err != nil {
			return nil, fmt.Errorf("timing %s %s on rank %d: %w", base.Allocation(), m.Name, be.Rank(), err)
		}
	}
	for _, c := range cases {
		method, ok := methodOf(c.Method)
		if !ok {
			return samples, fmt.Errorf("run %s: timing method %q is unknown", sw.Name, c.Method)
		}
		got, err := timeCase(be, comm, bufs, method, c, sw)
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
			// Every rank takes part: the figure is the slowest rank's.
			medians, err := slowestMedians(comm, modes, got, sw.Discard)
			if err != nil {
				return samples, err
			}
			progress(progressLine(c, modes, medians, sw.Cycles, sw.CheckLast))
		}
	}
	return samples, nil
}

// ProgressHeader is the line above the timing phase's progress lines: it
// names the statistic they stream, the Timings table's.
const ProgressHeader = "timing: us per operation, the median over the kept cycles of the slowest rank's time (the Timings table's median)"

// progressLine is rank 0's line for a finished case: each mode's median,
// under its short name, as the Timings table prints it.
// Under timing.check = "last" it says so: only the last sample of each
// mode was checked, not the cycles.
func progressLine(c coll.Case, modes []coll.TimedMode, medians []float64, cycles int, checkLast bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "timing %s:", c)
	for i, m := range modes {
		fmt.Fprintf(&b, " %s %s", m.Short, coll.USText(medians[i]))
	}
	if checkLast {
		fmt.Fprintf(&b, " (%d cycles, the last checked)", cycles)
	} else {
		fmt.Fprintf(&b, " (%d cycles, checked)", cycles)
	}
	return b.String()
}

// slowestMedians is each mode's median, over the cycles past discard, of
// the slowest rank's time in each cycle: the statistic report.TimingStats
// computes from every rank's rows, so that the streamed line and the table
// agree. A collective, one for the whole case: every rank calls it with
// the same cases, and so brings as many samples in the same order.
func slowestMedians(comm coll.Comm, modes []coll.TimedMode, got []TimingSample, discard int) ([]float64, error) {
	var kept []float64
	ends := make([]int, len(modes))
	for i, m := range modes {
		for _, s := range got {
			if s.Mode == m.Name && s.Cycle >= discard {
				kept = append(kept, s.DurationUS)
			}
		}
		ends[i] = len(kept)
	}
	if err := comm.MaxFloat64s(kept); err != nil {
		return nil, err
	}
	out := make([]float64, len(modes))
	start := 0
	for i, end := range ends {
		out[i] = quantile.Median(kept[start:end])
		start = end
	}
	return out, nil
}

func timeCase(be coll.Backend, comm coll.Comm, modes []*modeCase, method timingMethod, c coll.Case, sw coll.Sweep) (samples []TimingSample, err error) {
	fill := c.DType.Elem(coll.Input(c.Op, be.Rank()))
	sample, release, err := method.sampler(be, comm, modes, c.Batch)
	if err != nil {
		return nil, err
	}
	defer func() {
		if rerr := release(); err == nil {
			err = rerr
		}
	}()
	filled := make(map[*modeCase]bool, len(modes))
	take := func(m *modeCase, cycle int, warmup bool) (float64, error) {
		if method.refillAlways || m.writesInput || !filled[m] {
			if err := be.Fill(m.input(), fill); err != nil {
				return 0, err
			}
			filled[m] = true
		}
		// The prepared calls bypass the watch: the sample as a whole is
		// the step the watchdog gives a deadline.
		context := &m.watchCycle
		if warmup {
			context = &m.watchWarmup
		}
		armSample(be, &m.watchOp, c.SizeBytes, context, cycle)
		us, err := sample(m)
		leaveStep(be)
		return us, err
	}
	// verify checks what a sample (or warm-up) of m left, after its clock
	// stopped and before the next refill; the first mismatch on this rank
	// is kept, named by mode and cycle. A batched or graph sample in place
	// ran its operations over their own output, which then holds no value
	// to check: one more operation of the mode, untimed, on a fresh input,
	// stands for it (method.validateAfter). It allocates nothing unless it
	// finds a mismatch.
	var first *CheckError
	verify := func(m *modeCase, cycle int, warmup bool) (bool, error) {
		if method.validateAfter && m.writesInput {
			if err := be.Fill(m.input(), fill); err != nil {
				return false, err
			}
			armSample(be, &m.watchOp, c.SizeBytes, &m.watchCycle, cycle)
			err := m.run()
			leaveStep(be)
			if err != nil {
				return false, fmt.Errorf("validation %s: %w", m.mode.Name, err)
			}
		}
		if err := be.Synchronize(); err != nil {
			return false, err
		}
		bad, err := m.check(be, c.DType)
		if err != nil {
			return false, err
		}
		if bad != nil && first == nil {
			when := fmt.Sprintf("cycle %d", cycle)
			if warmup {
				when = fmt.Sprintf("warm-up %d", cycle)
			}
			if method.validateAfter && m.writesInput {
				when = "the validation operation after " + when
			}
			first = &CheckError{Phase: "timing", What: fmt.Sprintf("rank %d (%s): %s, %s output at %s: %s",
				be.Rank(), be.Info().Host, c, m.mode.Name, when, bad)}
		}
		return bad == nil, nil
	}
	every := !sw.CheckLast
	spent := make([]float64, 0, sw.Warmups*len(modes)) // each warm-up's turn, in seconds
	for w := range sw.Warmups {
		for _, m := range modes {
			start := time.Now()
			if _, err := take(m, w, true); err != nil {
				return nil, fmt.Errorf("warmup %s: %w", m.mode.Name, err)
			}
			if every {
				if _, err := verify(m, w, true); err != nil {
					return nil, fmt.Errorf("warmup %s: %w", m.mode.Name, err)
				}
			}
			spent = append(spent, time.Since(start).Seconds())
		}
	}
	if m := modes[0]; method.oneCall && len(modes) == 1 && m.sampler != nil {
		if !filled[m] { // no warm-up filled it
			if err := be.Fill(m.input(), fill); err != nil {
				return nil, err
			}
		}
		got, bad, err := m.inOneCall(be, c, sw.Cycles, every, method.barrier)
		samples = got // made after the call: nothing to hold room for before it
		if err != nil {
			return samples, fmt.Errorf("%s: %w", m.mode.Name, err)
		}
		if bad != nil && first == nil {
			first = &CheckError{Phase: "timing", What: fmt.Sprintf("rank %d (%s): %s, %s output at cycle %d: %s",
				be.Rank(), be.Info().Host, c, m.mode.Name, bad.cycle, bad.Mismatch)}
		}
	} else {
		// The loop keeps its samples in pointer-free records and makes the
		// rows after it: rows hold strings, and the garbage collector scans
		// a slice of them whole, touching every page of it. Rows allocated
		// up front for 50 million cycles had the collector fault in
		// gigabytes of untouched memory while the loop ran: 300 cycles of
		// 4 KiB took 9.9 s, not 1.6 s (docs/PERFORMANCE.md). The records
		// come a chunk at a time (sampleRecords).
		raw := newSampleRecords(sw.Cycles * len(modes))
		order := make([]int, len(modes))
		pace, err := agreePace(comm, spent)
		if err != nil {
			return nil, err
		}
		for cycle := range sw.Cycles {
			for i := range modes {
				order[i] = (i + cycle) % len(modes)
			}
			for _, i := range order {
				m := modes[i]
				us, err := take(m, cycle, false)
				if err != nil {
					return rowsOf(c, modes, raw), fmt.Errorf("%s cycle %d: %w", m.mode.Name, cycle, err)
				}
				s := rawSample{mode: i, cycle: cycle, us: us}
				if every {
					if s.correct, err = verify(m, cycle, false); err != nil {
						return rowsOf(c, modes, raw), fmt.Errorf("%s cycle %d: %w", m.mode.Name, cycle, err)
					}
					s.checked = true
				}
				raw.add(s)
				pace.between()
			}
		}
		samples = rowsOf(c, modes, raw)
	}
	if !every {
		// timing.check = "last": what the last sample of each mode left (or
		// the validation operation after it) is checked; the rows of the
		// samples before it say nothing (Checked false).
		for _, m := range modes {
			ok, err := verify(m, sw.Cycles-1, false)
			if err != nil {
				return samples, err
			}
			for i := len(samples) - 1; i >= 0; i-- {
				if samples[i].Mode == m.mode.Name {
					// The validation operation is not the sample: its row
					// stays unchecked when it held.
					samples[i].Checked = !ok || !(method.validateAfter && m.writesInput)
					samples[i].Correct = ok && samples[i].Checked
					break
				}
			}
		}
	}
	if first != nil {
		if !every {
			// One check stands for the case: none of its samples is vouched for.
			for i := range samples {
				samples[i].Checked, samples[i].Correct = true, false
			}
		}
		return samples, first
	}
	return samples, nil
}

// rawSample is a timed sample as the loop keeps it: no pointers, so that
// the collector never scans the loop's records.
type rawSample struct {
	mode, cycle      int // mode: an index into the case's modes
	us               float64
	checked, correct bool
}

// sampleRecords holds a case's records in chunks of recordChunk: the
// first, allocated before the loop, holds a case of up to recordChunk
// samples whole, so that such a case allocates nothing between samples; a
// longer one gets another chunk every recordChunk samples, and nothing is
// ever copied. All of them up front was 4 GB a rank for 50 million
// cycles, asked for before the first sample; where Go reused memory
// freed earlier it cleared all of it first, touching every page (3.2 GB
// took 9.5 s on the 2-core machine), while the other ranks waited.
type sampleRecords struct{ chunks [][]rawSample }

// recordChunk is how many samples' records a chunk holds (40 bytes each:
// 2.5 MB).
var recordChunk = 1 << 16

func newSampleRecords(samples int) *sampleRecords {
	return &sampleRecords{chunks: [][]rawSample{make([]rawSample, 0, max(1, min(samples, recordChunk)))}}
}

func (r *sampleRecords) add(s rawSample) {
	last := len(r.chunks) - 1
	if len(r.chunks[last]) == cap(r.chunks[last]) {
		r.chunks = append(r.chunks, make([]rawSample, 0, recordChunk))
		last++
	}
	r.chunks[last] = append(r.chunks[last], s)
}

// rowsOf makes the rows of case c's samples raw.
func rowsOf(c coll.Case, modes []*modeCase, raw *sampleRecords) []TimingSample {
	n := 0
	for _, chunk := range raw.chunks {
		n += len(chunk)
	}
	rows := make([]TimingSample, 0, n)
	for _, chunk := range raw.chunks {
		for _, r := range chunk {
			rc := c
			rc.Mode = modes[r.mode].mode.Name
			rows = append(rows, TimingSample{Case: rc, Cycle: r.cycle, DurationUS: r.us, Checked: r.checked, Correct: r.correct})
		}
	}
	return rows
}

// oneCallFault is the first wrong element a run of samples in one call
// found, and its cycle.
type oneCallFault struct {
	cycle int
	*Mismatch
}

// inOneCall takes cycles samples of m in one call of its sampler, Batch
// operations each, and checks each sample's output after its clock stopped
// when every is set: the rows are those take and verify make one sample at
// a time, and the watchdog and a hang's diagnosis see each sample as a
// step of its own.
func (m *modeCase) inOneCall(be coll.Backend, c coll.Case, cycles int, every, barrier bool) ([]TimingSample, *oneCallFault, error) {
	var check coll.OutputCheck
	if every {
		var err error
		if check, err = m.outputCheck(be, c.DType); err != nil {
			return nil, nil, err
		}
	}
	us, held := make([]float64, cycles), make([]bool, cycles)
	armSamples(be, &m.watchOp, c.SizeBytes, &m.watchCycle, 0, m.sampler)
	f, err := m.sampler.Samples(c.Batch, barrier, us, held, check)
	leaveStep(be)
	if err != nil {
		return nil, nil, err
	}
	sc := c
	sc.Mode = m.mode.Name
	samples := make([]TimingSample, cycles)
	for cycle := range samples {
		samples[cycle] = TimingSample{Case: sc, Cycle: cycle, DurationUS: us[cycle] / float64(c.Batch), Checked: every,
			Correct: every && held[cycle]}
	}
	if f.Sample < 0 {
		return samples, nil, nil
	}
	return samples, &oneCallFault{cycle: f.Sample, Mismatch: m.mismatchAt(f.Element, f.Got, c.DType)}, nil
}

// CheckError is a correctness check that failed: on this rank (Ranks nil)
// or, after the ranks compared notes, on the ranks listed, What then
// saying what each of them found when the ranks could tell each other
// (coll.Gatherer).
type CheckError struct {
	Phase string
	What  string
	Ranks []int
}

func (e *CheckError) Error() string {
	if e.Ranks != nil {
		return fmt.Sprintf("%s check failed on rank(s) %v: %s", e.Phase, e.Ranks, e.What)
	}
	return fmt.Sprintf("%s check failed at %s", e.Phase, e.What)
}

// agree tells every rank whether the check passed on all ranks. local is
// this rank's failure, or nil. When some rank failed, every rank returns
// the same error, with what every failing rank found when the comm can
// gather it, and else with what this rank found (or what was checked).
func agree(comm coll.Comm, phase, what string, local *CheckError) error {
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
	if g, can := comm.(coll.Gatherer); can {
		mine := ""
		if local != nil {
			mine = local.What
		}
		all, err := g.AllGather([]byte(mine))
		if err != nil {
			return err
		}
		var said []string
		for _, s := range all {
			if len(s) > 0 {
				said = append(said, string(s))
			}
		}
		what = strings.Join(said, "; ")
	}
	return &CheckError{Phase: phase, What: what, Ranks: bad}
}
