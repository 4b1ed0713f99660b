package phases

import (
	"fmt"
	"strings"
)

// TimedMode is one record per timed mode: what one timed sample runs, as a
// chain of collectives, each feeding the next. Its bus factor, its memory
// footprint, its buffers (out of place and in place), how it runs and what
// its output must hold all follow from its steps, so that a new mode is one
// record here and the harness, the reports and the plots need nothing else.
type TimedMode struct {
	Name  Mode
	Title string // how a legend names it, e.g. "AllReduce (direct)"
	Label string // the report's column header, e.g. "direct AllReduce"
	Short string // a short header, e.g. "AR"
	Steps []Collective
}

var timedModes = []TimedMode{
	{Name: Direct, Title: "AllReduce (direct)", Label: "direct AllReduce", Short: "AR", Steps: []Collective{AllReduceColl}},
	{Name: Decomposed, Title: "ReduceScatter + AllGather", Label: "RS + AG", Short: "RS+AG", Steps: []Collective{ReduceScatterColl, AllGatherColl}},
	{Name: ReduceScatterAlone, Title: "ReduceScatter alone", Label: "ReduceScatter", Short: "RS", Steps: []Collective{ReduceScatterColl}},
	{Name: AllGatherAlone, Title: "AllGather alone", Label: "AllGather", Short: "AG", Steps: []Collective{AllGatherColl}},
}

func modeNames() []Mode {
	out := make([]Mode, len(timedModes))
	for i, m := range timedModes {
		out[i] = m.Name
	}
	return out
}

// ModeOf returns the record of a timed mode.
func ModeOf(m Mode) (TimedMode, bool) {
	for _, tm := range timedModes {
		if tm.Name == m {
			return tm, true
		}
	}
	return TimedMode{}, false
}

// BusFactor is nccl-tests' bus-bandwidth factor of the mode on world ranks:
// the sum of its collectives' (the decomposition's (W-1)/W + (W-1)/W equals
// AllReduce's 2(W-1)/W).
func (m TimedMode) BusFactor(world int) float64 {
	var f float64
	for _, s := range m.Steps {
		f += s.BusFactor(world)
	}
	return f
}

// Op names what a sample of the mode waits for, for the watchdog: its
// collectives, "reduce-scatter + all-gather".
func (m TimedMode) Op() string {
	names := make([]string, len(m.Steps))
	for i, s := range m.Steps {
		names[i] = s.Name
	}
	return strings.Join(names, " + ")
}

// counts are the element counts of the mode's buffers for a full buffer of
// full elements: counts[0] is the input, counts[i+1] step i's output.
func (m TimedMode) counts(full, world int) ([]int, error) {
	c := []int{m.Steps[0].SendCount(full, world)}
	for _, s := range m.Steps {
		n, ok := s.RecvCount(c[len(c)-1], world)
		if !ok {
			return nil, fmt.Errorf("%s: %d elements on %d ranks: %s", s.Name, c[len(c)-1], world, s.Rule)
		}
		c = append(c, n)
	}
	return c, nil
}

// bufferBytes are the sizes of the buffers the mode allocates for a full
// buffer of n bytes of elemSize-byte elements: every buffer of the chain
// out of place, the full buffer alone in place (every other one is a view
// inside it).
func (m TimedMode) bufferBytes(n int64, elemSize, world int, p Placement) []int64 {
	counts, err := m.counts(int(n/int64(elemSize)), world)
	if p == InPlace || err != nil {
		return []int64{n}
	}
	out := make([]int64, len(counts))
	for i, c := range counts {
		out[i] = int64(c) * int64(elemSize)
	}
	return out
}

// Footprint is the bytes of the mode's buffers (see bufferBytes).
func (m TimedMode) Footprint(n int64, elemSize, world int, p Placement) int64 {
	var total int64
	for _, b := range m.bufferBytes(n, elemSize, world, p) {
		total += b
	}
	return total
}

// modeCase is one mode's buffers for one case on this rank, and the
// chunk values its output must hold.
type modeCase struct {
	mode  TimedMode
	bufs  []Buffer  // bufs[0] the input, bufs[i+1] step i's output
	want  []float64 // the output's expected value per chunk of chunk elements
	chunk int
	run   func() error // every step once, prepared (see Preparer)
}

func (m *modeCase) input() Buffer  { return m.bufs[0] }
func (m *modeCase) output() Buffer { return m.bufs[len(m.bufs)-1] }

// newModeCase allocates the mode's buffers for a full buffer of full
// elements of dtype: out of place each its own; in place one full buffer,
// the others views inside it where their collectives keep them. It
// prepares the chain of collectives once, and works out the expected output.
func newModeCase(a *arena, be Backend, m TimedMode, dtype DType, full int, p Placement, op Op) (*modeCase, error) {
	world, rank := be.WorldSize(), be.Rank()
	counts, err := m.counts(full, world)
	if err != nil {
		return nil, err
	}
	mc := &modeCase{mode: m, bufs: make([]Buffer, len(counts)), chunk: full / world}
	if p == InPlace {
		whole, err := a.alloc(dtype, full)
		if err != nil {
			return nil, err
		}
		for i, c := range counts {
			if c == full {
				mc.bufs[i] = whole
				continue
			}
			// A smaller buffer sits where the step that writes it (or, for
			// the input, the step that reads it) keeps it in place.
			s := m.Steps[max(i-1, 0)]
			send, recv := counts[max(i-1, 0)], counts[max(i-1, 0)+1]
			if mc.bufs[i], err = be.View(whole, s.InPlaceOffset(rank, send, recv), c); err != nil {
				return nil, err
			}
		}
	} else {
		for i, c := range counts {
			if mc.bufs[i], err = a.alloc(dtype, c); err != nil {
				return nil, err
			}
		}
	}
	calls := make([]func() error, len(m.Steps))
	for i, s := range m.Steps {
		if calls[i], err = prepare(be, s, mc.bufs[i], mc.bufs[i+1], op); err != nil {
			return nil, err
		}
	}
	mc.run = chain(calls)
	mc.want = expectedChunks(m, op, world, rank, counts[0]/mc.chunk)
	return mc, nil
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
// granularity of chunks (a shard is one), over every rank's input: rank r
// holds Input(op, r) in each of its inputChunks chunks. It returns what
// this rank's output must hold, chunk by chunk.
func expectedChunks(m TimedMode, op Op, world, rank, inputChunks int) []float64 {
	held := make([][]float64, world)
	for r := range held {
		held[r] = make([]float64, inputChunks)
		for c := range held[r] {
			held[r][c] = Input(op, r)
		}
	}
	for _, s := range m.Steps {
		held = s.Reference(held, op)
	}
	return held[rank]
}

// check compares every element of the output with the expected chunk
// values, a run of equal chunks at a time, and returns the first mismatch.
func (m *modeCase) check(be Backend, dtype DType) (*Mismatch, error) {
	out := m.output()
	for c := 0; c < len(m.want); {
		end := c + 1
		for end < len(m.want) && m.want[end] == m.want[c] {
			end++
		}
		view, err := be.View(out, c*m.chunk, (end-c)*m.chunk)
		if err != nil {
			return nil, err
		}
		bad, err := checkConst(be, view, dtype.Elem(m.want[c]))
		if err != nil || bad != nil {
			if bad != nil {
				bad.Index += c * m.chunk
			}
			return bad, err
		}
		c = end
	}
	return nil, nil
}
