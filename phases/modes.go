package phases

import (
	"fmt"
	"strings"
)

// Step is one collective of a timed mode and the ranks it runs among.
type Step struct {
	Collective
	Scope Scope
}

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
	Steps []Step
	// Input is the input's element count for a full buffer of full
	// elements when it is not the first collective's own (nil): a step of
	// a chain timed alone takes what it takes inside the chain.
	Input func(full int, l Layout) int
	// Bus, when not nil, is the mode's bus factor instead of the sum of
	// its steps'.
	Bus func(l Layout) float64
	// Parts are the modes that time this one's steps alone, when it is a
	// decomposition of AllReduce: the model compares it with direct and
	// splits its time between them.
	Parts []Mode
}

// Layout is the shape of the world a mode runs on: its ranks and, for the
// hierarchical decomposition, the ranks per group (0 without groups).
type Layout struct{ World, Group int }

// size is the number of ranks of a scope.
func (l Layout) size(s Scope) int {
	switch s {
	case InGroup:
		return l.Group
	case AcrossGroups:
		if l.Group == 0 {
			return 0
		}
		return l.World / l.Group
	}
	return l.World
}

func one(s Collective) []Step { return []Step{{s, World}} }

var timedModes = []TimedMode{
	{Name: Direct, Title: "AllReduce (direct)", Label: "direct AllReduce", Short: "AR", Steps: one(AllReduceColl)},
	{Name: Decomposed, Title: "ReduceScatter + AllGather", Label: "RS + AG", Short: "RS+AG",
		Steps: []Step{{ReduceScatterColl, World}, {AllGatherColl, World}},
		Parts: []Mode{ReduceScatterAlone, AllGatherAlone}},
	{Name: ReduceScatterAlone, Title: "ReduceScatter alone", Label: "ReduceScatter", Short: "RS", Steps: one(ReduceScatterColl)},
	{Name: AllGatherAlone, Title: "AllGather alone", Label: "AllGather", Short: "AG", Steps: one(AllGatherColl)},
	// The two-level form: ReduceScatter in the group (a node), AllReduce of
	// each shard across the groups, AllGather in the group. Its bus
	// bandwidth uses the flat AllReduce's factor on the whole world, so
	// that it compares with direct.
	{Name: Hierarchical, Title: "hierarchical RS + AR + AG", Label: "hierarchical", Short: "H",
		Steps: []Step{{ReduceScatterColl, InGroup}, {AllReduceColl, AcrossGroups}, {AllGatherColl, InGroup}},
		Bus:   func(l Layout) float64 { return AllReduceColl.BusFactor(l.World) },
		Parts: []Mode{"hierarchical-reduce-scatter", "hierarchical-all-reduce", "hierarchical-all-gather"}},
	// Each of its steps alone, on the buffers it has in the chain, so that
	// the report shows where the time goes.
	{Name: "hierarchical-reduce-scatter", Title: "hierarchical: ReduceScatter in the group", Label: "H: RS in group",
		Short: "H-RS", Steps: []Step{{ReduceScatterColl, InGroup}}},
	{Name: "hierarchical-all-reduce", Title: "hierarchical: AllReduce across groups", Label: "H: AR across",
		Short: "H-AR", Steps: []Step{{AllReduceColl, AcrossGroups}},
		Input: func(full int, l Layout) int { return full / l.Group }},
	{Name: "hierarchical-all-gather", Title: "hierarchical: AllGather in the group", Label: "H: AG in group",
		Short: "H-AG", Steps: []Step{{AllGatherColl, InGroup}}},
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

// NeedsGroups says whether a step runs within or across groups (the
// hierarchy must be enabled).
func (m TimedMode) NeedsGroups() bool {
	for _, s := range m.Steps {
		if s.Scope != World {
			return true
		}
	}
	return false
}

// BusFactor is nccl-tests' bus-bandwidth factor of the mode: the sum of
// its collectives', each on its own ranks and weighted by the share of the
// case's full buffer it moves (the decomposition's (W-1)/W + (W-1)/W equals
// AllReduce's 2(W-1)/W), unless the record says otherwise. 0 when the
// mode needs groups and the layout has none.
func (m TimedMode) BusFactor(l Layout) float64 {
	if m.NeedsGroups() && l.Group == 0 {
		return 0
	}
	if m.Bus != nil {
		return m.Bus(l)
	}
	// A full buffer every scope divides.
	full := l.World * max(l.Group, 1)
	counts, err := m.counts(full, l)
	if err != nil {
		return 0
	}
	var f float64
	for i, s := range m.Steps {
		f += s.BusFactor(l.size(s.Scope)) * float64(max(counts[i], counts[i+1])) / float64(full)
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
func (m TimedMode) counts(full int, l Layout) ([]int, error) {
	first := m.Steps[0]
	c := []int{first.SendCount(full, l.size(first.Scope))}
	if m.Input != nil {
		c[0] = m.Input(full, l)
	}
	for _, s := range m.Steps {
		n, ok := s.RecvCount(c[len(c)-1], l.size(s.Scope))
		if !ok || n <= 0 {
			return nil, fmt.Errorf("%s: %d elements on %d ranks: %s", s.Name, c[len(c)-1], l.size(s.Scope), s.Rule)
		}
		c = append(c, n)
	}
	return c, nil
}

// bufferBytes are the sizes of the buffers the mode allocates for a full
// buffer of n bytes of elemSize-byte elements: every buffer of the chain
// out of place, the largest alone in place (every other one is a view
// inside it).
func (m TimedMode) bufferBytes(n int64, elemSize int, l Layout, p Placement) []int64 {
	counts, err := m.counts(int(n/int64(elemSize)), l)
	if err != nil {
		return []int64{n}
	}
	if p == InPlace {
		return []int64{int64(maxOf(counts)) * int64(elemSize)}
	}
	out := make([]int64, len(counts))
	for i, c := range counts {
		out[i] = int64(c) * int64(elemSize)
	}
	return out
}

// Footprint is the bytes of the mode's buffers (see bufferBytes).
func (m TimedMode) Footprint(n int64, elemSize int, l Layout, p Placement) int64 {
	var total int64
	for _, b := range m.bufferBytes(n, elemSize, l, p) {
		total += b
	}
	return total
}

func maxOf(v []int) int {
	m := v[0]
	for _, x := range v[1:] {
		m = max(m, x)
	}
	return m
}

// modeCase is one mode's buffers for one case on this rank, and the
// chunk values its output must hold.
type modeCase struct {
	mode  TimedMode
	bufs  []Buffer  // bufs[0] the input, bufs[i+1] step i's output
	want  []float64 // the output's expected value per chunk of chunk elements
	chunk int
	run   func() error      // every step once, prepared (see Preparer)
	loop  func(n int) error // run n times back to back (see LoopPreparer)
	// writesInput: a step writes into the input (in place), so a sample
	// leaves it changed.
	writesInput bool
	// watchOp is the mode's Op, named once: the watchdog is armed with it
	// every sample, and joining the step names there made garbage a GC
	// could collect inside a later timed sample.
	watchOp string
}

func (m *modeCase) input() Buffer  { return m.bufs[0] }
func (m *modeCase) output() Buffer { return m.bufs[len(m.bufs)-1] }

// newModeCase allocates the mode's buffers for a full buffer of full
// elements of dtype: out of place each its own; in place the largest, and
// the others views inside it where their collectives keep them. It
// prepares the chain of collectives once, each on its scope's backend, and
// works out the expected output.
func newModeCase(a *arena, sc *scopes, m TimedMode, dtype DType, full int, p Placement, op Op) (*modeCase, error) {
	be := sc.be[World]
	l := sc.layout()
	counts, err := m.counts(full, l)
	if err != nil {
		return nil, err
	}
	mc := &modeCase{mode: m, bufs: make([]Buffer, len(counts)), chunk: full / l.World, writesInput: p == InPlace,
		watchOp: m.Op()}
	if p == InPlace {
		err = placeInside(a, sc, m, mc.bufs, counts, dtype)
	} else {
		for i, c := range counts {
			if mc.bufs[i], err = a.alloc(dtype, c); err != nil {
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
	mc.run = chain(calls)
	mc.loop = func(n int) error {
		for range n {
			if err := mc.run(); err != nil {
				return err
			}
		}
		return nil
	}
	if s := m.Steps[0]; len(m.Steps) == 1 {
		if lp, ok := find[LoopPreparer](sc.be[s.Scope]); ok {
			if mc.loop, err = lp.PrepareLoop(s.Collective, mc.bufs[0], mc.bufs[1], op); err != nil {
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
func placeInside(a *arena, sc *scopes, m TimedMode, bufs []Buffer, counts []int, dtype DType) error {
	be := sc.be[World]
	top := maxOf(counts)
	whole, err := a.alloc(dtype, top)
	if err != nil {
		return err
	}
	for i, c := range counts {
		if c == top {
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
func expectedChunks(m TimedMode, op Op, g *Groups, world, rank, inputChunks int) []float64 {
	held := make([][]float64, world)
	for r := range held {
		held[r] = make([]float64, inputChunks)
		for c := range held[r] {
			held[r][c] = Input(op, r)
		}
	}
	for _, s := range m.Steps {
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
				held[members[i]] = out
			}
		}
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
