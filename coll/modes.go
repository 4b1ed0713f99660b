package coll

import (
	"fmt"
	"slices"
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
	// Colour and Dash are how the figures and the page draw the mode: an
	// RGB colour as CSS writes it, "#0072b2", and a line's dashes, on and
	// off lengths in points (nil: solid). The mode is what a reader
	// compares most (AllReduce against its decomposition), so each has a
	// colour of its own, from Okabe and Ito's palette ("Color Universal
	// Design", 2008) while it lasts, which stays apart under every common
	// colour-vision deficiency, and dashes of their own, so that the modes
	// stay apart in grey-scale print too. Plain data: coll draws nothing.
	Colour string
	Dash   []float64
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
	{Name: Direct, Title: "AllReduce (direct)", Label: "direct AllReduce", Short: "AR", Steps: one(AllReduce),
		Colour: "#0072b2"}, // Okabe-Ito blue, solid
	{Name: Decomposed, Title: "ReduceScatter + AllGather", Label: "RS + AG", Short: "RS+AG",
		Steps:  []Step{{ReduceScatter, World}, {AllGather, World}},
		Parts:  []Mode{ReduceScatterAlone, AllGatherAlone},
		Colour: "#d55e00", Dash: []float64{7, 4}}, // vermillion, dashed
	{Name: ReduceScatterAlone, Title: "ReduceScatter alone", Label: "ReduceScatter", Short: "RS", Steps: one(ReduceScatter),
		Colour: "#009e73", Dash: []float64{3, 3}}, // bluish green, short-dashed
	{Name: AllGatherAlone, Title: "AllGather alone", Label: "AllGather", Short: "AG", Steps: one(AllGather),
		Colour: "#cc79a7", Dash: []float64{10, 3, 2, 3}}, // reddish purple, dash-dotted
	// The two-level form: ReduceScatter in the group (a node), AllReduce of
	// each shard across the groups, AllGather in the group. Its bus
	// bandwidth uses the flat AllReduce's factor on the whole world, so
	// that it compares with direct.
	{Name: Hierarchical, Title: "hierarchical RS + AR + AG", Label: "hierarchical", Short: "H",
		Steps:  []Step{{ReduceScatter, InGroup}, {AllReduce, AcrossGroups}, {AllGather, InGroup}},
		Bus:    func(l Layout) float64 { return AllReduce.BusFactor(l.World) },
		Parts:  []Mode{"hierarchical-reduce-scatter", "hierarchical-all-reduce", "hierarchical-all-gather"},
		Colour: "#e69f00", Dash: []float64{14, 4}}, // orange, long-dashed
	// Each of its steps alone, on the buffers it has in the chain, so that
	// the report shows where the time goes.
	{Name: "hierarchical-reduce-scatter", Title: "hierarchical: ReduceScatter in the group", Label: "H: RS in group",
		Short: "H-RS", Steps: []Step{{ReduceScatter, InGroup}},
		Colour: "#56b4e9", Dash: []float64{12, 3, 4, 3}}, // sky blue
	{Name: "hierarchical-all-reduce", Title: "hierarchical: AllReduce across groups", Label: "H: AR across",
		Short: "H-AR", Steps: []Step{{AllReduce, AcrossGroups}},
		Input:  func(full int, l Layout) int { return full / l.Group },
		Colour: "#000000", Dash: []float64{10, 2, 2, 2, 2, 2}}, // black
	{Name: "hierarchical-all-gather", Title: "hierarchical: AllGather in the group", Label: "H: AG in group",
		Short: "H-AG", Steps: []Step{{AllGather, InGroup}},
		// The pale yellow comes last: it is the palette's faintest on white.
		Colour: "#f0e442", Dash: []float64{5, 2, 5, 6}}, // yellow
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
	counts, err := m.Counts(full, l)
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

// Counts are the element counts of the mode's buffers for a full buffer of
// full elements: counts[0] is the input, counts[i+1] step i's output.
func (m TimedMode) Counts(full int, l Layout) ([]int, error) {
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

// Allocations are the buffers the mode allocates for case c (its size,
// element type and placement), each as c.Buffer says: every buffer of the
// chain out of place, the largest alone in place (every other one is a
// view inside it).
func (m TimedMode) Allocations(c Case, l Layout) []BufferSpec {
	full := int(c.SizeBytes / int64(c.DType.Size()))
	counts, err := m.Counts(full, l)
	if err != nil {
		return []BufferSpec{c.Buffer(full)}
	}
	if c.Placement == InPlace {
		return []BufferSpec{c.Buffer(slices.Max(counts))}
	}
	out := make([]BufferSpec, len(counts))
	for i, n := range counts {
		out[i] = c.Buffer(n)
	}
	return out
}

// Footprint is the bytes of the mode's buffers for case c (see
// Allocations).
func (m TimedMode) Footprint(c Case, l Layout) int64 {
	var total int64
	for _, b := range m.Allocations(c, l) {
		total += b.Bytes()
	}
	return total
}

// Scope is which ranks a step of a timed mode runs among.
type Scope int

const (
	// World is every rank.
	World Scope = iota
	// InGroup is the ranks of this rank's group (its node, or a part of it).
	InGroup
	// AcrossGroups is the ranks at this rank's position in every group.
	AcrossGroups
)

func (s Scope) String() string {
	return [...]string{"world", "in-group", "across-groups"}[s]
}
