package phases

import (
	"bytes"
	"slices"

	"rsag/coll"
)

// modeCase is one mode's buffers for one case on this rank, and the
// chunk values its output must hold.
type modeCase struct {
	mode  coll.TimedMode
	bufs  []coll.Buffer // bufs[0] the input, bufs[i+1] step i's output
	want  []float64     // the output's expected value per chunk of chunk elements
	chunk int
	run   func() error      // every step once, prepared (see Preparer)
	steps []func() error    // each step alone, prepared: steps[i] writes bufs[i+1]
	loop  func(n int) error // run n times back to back (see LoopPreparer)
	// sampler takes a run of timed samples in one call (coll.SampleTimer):
	// a mode of one collective out of place, on a backend that can.
	sampler coll.Sampler
	// writesInput: a step writes into the input (in place), so a sample
	// leaves it changed.
	writesInput bool
	// watchOp is the mode's Op, named once: the watchdog is armed with it
	// every sample, and joining the step names there made garbage a GC
	// could collect inside a later timed sample.
	watchOp string
	// watchCycle and watchWarmup say which mode a sample is of, and what
	// its round counts, for a hang's diagnosis ("direct, cycle"); stepOps
	// name each step alone (the soak's); all named once, as watchOp is.
	watchCycle, watchWarmup string
	stepOps                 []string
	// checks and host are what checking the output needs (prepareChecks),
	// made at the first check.
	checks []checkView
	host   []byte
	// outCheck is checks as a Sampler takes them, made at its first run.
	outCheck *coll.OutputCheck
}

func (m *modeCase) input() coll.Buffer  { return m.bufs[0] }
func (m *modeCase) output() coll.Buffer { return m.bufs[len(m.bufs)-1] }

// newModeCase allocates the mode's buffers for case c (a full buffer of
// c.SizeBytes, each buffer as c.Buffer says): out of place each its own; in place the largest, and
// the others views inside it where their collectives keep them. It
// prepares the chain of collectives once, each on its scope's backend, and
// works out the expected output.
func newModeCase(a *arena, sc *scopes, m coll.TimedMode, c coll.Case) (*modeCase, error) {
	p, op := c.Placement, c.Op
	full := int(c.SizeBytes / int64(c.DType.Size()))
	be := sc.be[coll.World]
	l := sc.layout()
	counts, err := m.Counts(full, l)
	if err != nil {
		return nil, err
	}
	mc := &modeCase{mode: m, bufs: make([]coll.Buffer, len(counts)), chunk: full / l.World, writesInput: p == coll.InPlace,
		watchOp: m.Op(), watchCycle: string(m.Name) + ", cycle", watchWarmup: string(m.Name) + ", warm-up"}
	for _, s := range m.Steps {
		mc.stepOps = append(mc.stepOps, s.Name)
	}
	if p == coll.InPlace {
		err = placeInside(a, sc, m, mc.bufs, counts, c)
	} else {
		for i, n := range counts {
			if mc.bufs[i], err = a.alloc(c.Buffer(n)); err != nil {
				break
			}
		}
	}
	if err != nil {
		return nil, err
	}
	calls := make([]func() error, len(m.Steps))
	for i, s := range m.Steps {
		if calls[i], err = prepare(sc.be[s.Scope], s.Collective, mc.bufs[i], mc.bufs[i+1], op); err != nil {
			return nil, err
		}
	}
	mc.run, mc.steps = chain(calls), calls
	mc.loop = func(n int) error {
		for range n {
			if err := mc.run(); err != nil {
				return err
			}
		}
		return nil
	}
	if s := m.Steps[0]; len(m.Steps) == 1 {
		if lp, ok := coll.Find[coll.LoopPreparer](sc.be[s.Scope]); ok {
			if mc.loop, err = lp.PrepareLoop(s.Collective, mc.bufs[0], mc.bufs[1], op); err != nil {
				return nil, err
			}
		}
		if st, ok := coll.Find[coll.SampleTimer](sc.be[s.Scope]); ok && p == coll.OutOfPlace {
			if mc.sampler, err = st.PrepareSamples(s.Collective, mc.bufs[0], mc.bufs[1], op); err != nil {
				return nil, err
			}
		}
	}
	mc.want = expectedChunks(m, op, sc.groups, be.WorldSize(), be.Rank(), counts[0]/mc.chunk)
	return mc, nil
}

// placeInside lays an in-place chain into one buffer of the largest count:
// a step whose output is smaller than its input (ReduceScatter) leaves it
// inside the input, one whose input is smaller (AllGather) reads it from
// inside its output, each at its collective's in-place offset on this
// rank's place in the step's scope; equal counts share the buffer.
func placeInside(a *arena, sc *scopes, m coll.TimedMode, bufs []coll.Buffer, counts []int, c coll.Case) error {
	be := sc.be[coll.World]
	top := slices.Max(counts)
	whole, err := a.alloc(c.Buffer(top))
	if err != nil {
		return err
	}
	for i, n := range counts {
		if n == top {
			bufs[i] = whole
		}
	}
	offset := func(i int) int { // step i's inner buffer's offset in its outer one
		s := m.Steps[i]
		return s.InPlaceOffset(sc.be[s.Scope].Rank(), counts[i], counts[i+1])
	}
	for i := 1; i < len(counts); i++ {
		switch {
		case bufs[i] != nil || bufs[i-1] == nil:
		case counts[i] == counts[i-1]:
			bufs[i] = bufs[i-1]
		case counts[i] < counts[i-1]:
			if bufs[i], err = be.View(bufs[i-1], offset(i-1), counts[i]); err != nil {
				return err
			}
		}
	}
	for i := len(counts) - 2; i >= 0; i-- {
		switch {
		case bufs[i] != nil:
		case counts[i] == counts[i+1]:
			bufs[i] = bufs[i+1]
		default:
			if bufs[i], err = be.View(bufs[i+1], offset(i), counts[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// chain runs calls in order, stopping at the first error.
func chain(calls []func() error) func() error {
	if len(calls) == 1 {
		return calls[0]
	}
	return func() error {
		for _, c := range calls {
			if err := c(); err != nil {
				return err
			}
		}
		return nil
	}
}

// expectedChunks runs the mode's collectives on the host, at the
// granularity of chunks (a world shard is one), over every rank's input:
// rank r holds Input(op, r) in each of its inputChunks chunks, and each
// step runs within every group of its scope. It returns what this rank's
// output must hold, chunk by chunk.
func expectedChunks(m coll.TimedMode, op coll.Op, g *Groups, world, rank, inputChunks int) []float64 {
	held := make([][]float64, world)
	for r := range held {
		held[r] = make([]float64, inputChunks)
		for c := range held[r] {
			held[r][c] = coll.Input(op, r)
		}
	}
	for _, s := range m.Steps {
		held = stepChunks(s, op, g, held)
	}
	return held[rank]
}

// stepChunks runs step s on the host, at the granularity of chunks, within
// every group of its scope: held[r] is what world rank r holds before it,
// and the result what each holds after it.
func stepChunks(s coll.Step, op coll.Op, g *Groups, held [][]float64) [][]float64 {
	world := len(held)
	after := make([][]float64, world)
	done := make([]bool, world)
	for r := range world {
		if done[r] {
			continue
		}
		members, _ := g.members(s.Scope, r, world)
		in := make([][]float64, len(members))
		for i, q := range members {
			in[i], done[q] = held[q], true
		}
		for i, out := range s.Reference(in, op) {
			after[members[i]] = out
		}
	}
	return after
}

// checkView is a part of a mode's output to check: a view of at most
// checkChunk elements, where the output starts it, and the bytes it must
// hold (its expected element repeated, shared by the views of one value).
type checkView struct {
	view  coll.Buffer
	start int
	want  []byte
}

// prepareChecks splits the output into views of at most checkChunk
// elements of one expected value each, with a host buffer to read them
// into, once per mode and buffers: checking every sample then allocates
// nothing.
func (m *modeCase) prepareChecks(be coll.Backend, dtype coll.DType) error {
	if m.checks != nil {
		return nil
	}
	out, size := m.output(), dtype.Size()
	most := map[float64]int{} // the largest view of each value, in elements
	var views []checkView
	var values []float64
	for c := 0; c < len(m.want); {
		end := c + 1
		for end < len(m.want) && m.want[end] == m.want[c] {
			end++
		}
		for off := c * m.chunk; off < end*m.chunk; off += checkChunk {
			k := min(checkChunk, end*m.chunk-off)
			view, err := be.View(out, off, k)
			if err != nil {
				return err
			}
			views, values = append(views, checkView{view: view, start: off}), append(values, m.want[c])
			most[m.want[c]] = max(most[m.want[c]], k)
		}
		c = end
	}
	patterns := map[float64][]byte{}
	longest := 0
	for v, k := range most {
		patterns[v] = bytes.Repeat(dtype.Elem(v), k)
		longest = max(longest, k)
	}
	for i := range views {
		views[i].want = patterns[values[i]]
	}
	m.checks, m.host = views, make([]byte, longest*size)
	return nil
}

// check compares every element of the output with the expected chunk
// values, one memcmp per view of at most checkChunk elements (an
// element-wise loop in Go took longer than the collectives it checks at
// 256 MiB), and returns the first mismatch.
func (m *modeCase) check(be coll.Backend, dtype coll.DType) (*Mismatch, error) {
	if err := m.prepareChecks(be, dtype); err != nil {
		return nil, err
	}
	size := dtype.Size()
	for _, v := range m.checks {
		host := m.host[:v.view.Count()*size]
		if err := be.Read(v.view, host); err != nil {
			return nil, err
		}
		if bytes.Equal(host, v.want[:len(host)]) {
			continue
		}
		for i := 0; i < len(host); i += size {
			if !bytes.Equal(host[i:i+size], v.want[i:i+size]) {
				return &Mismatch{Index: v.start + i/size, Got: append([]byte(nil), host[i:i+size]...),
					Want: append([]byte(nil), v.want[i:i+size]...)}, nil
			}
		}
	}
	return nil, nil
}

// outputCheck is the checks of prepareChecks as a Sampler compares them:
// each view's bytes in the output, and the patterns they must hold, each
// once.
func (m *modeCase) outputCheck(be coll.Backend, dtype coll.DType) (coll.OutputCheck, error) {
	if m.outCheck != nil {
		return *m.outCheck, nil
	}
	if err := m.prepareChecks(be, dtype); err != nil {
		return coll.OutputCheck{}, err
	}
	var oc coll.OutputCheck
	at := map[*byte]int{} // where each pattern starts in oc.Want
	size := dtype.Size()
	for _, v := range m.checks {
		n := v.view.Count() * size
		key := &v.want[0]
		from, ok := at[key]
		if !ok {
			from = len(oc.Want)
			at[key] = from
			oc.Want = append(oc.Want, v.want...)
		}
		oc.Spans = append(oc.Spans, coll.OutputSpan{Offset: v.start * size, Len: n, WantAt: from})
	}
	m.outCheck = &oc
	return oc, nil
}

// mismatchAt is what a Sampler found wrong, with the value element
// index must hold.
func (m *modeCase) mismatchAt(index int, got []byte, dtype coll.DType) *Mismatch {
	size := dtype.Size()
	for _, v := range m.checks {
		if index >= v.start && index < v.start+v.view.Count() {
			return &Mismatch{Index: index, Got: got, Want: v.want[:size]}
		}
	}
	return &Mismatch{Index: index, Got: got}
}
