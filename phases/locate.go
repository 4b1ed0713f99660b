package phases

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"rsag/coll"
	"rsag/internal/schedstat"
	"rsag/locate"
)

// LocateSpec is the [locate] table as the phase takes it.
type LocateSpec struct {
	SizesBytes                []int64
	Collectives               []coll.Collective
	Repeats                   int
	Iterations, Warmups       int
	MaxFullNodes, MinPartners int
	// OpDeadline bounds a probe's first operation on a unit (0: no bound):
	// past it, the unit's ranks abandon the probe there (LocateAbandoned)
	// and move on, so that a node too slow to finish is named instead of
	// holding every rank until the watchdog ends the job.
	OpDeadline time.Duration
}

// LocateAbandoned is the Repeat of the one sample of a probe a unit
// abandoned: its first operation took longer than LocateSpec.OpDeadline
// on some rank of the unit. It is no measurement of a repeat; the verdict
// names the unit unresponsive from it.
const LocateAbandoned = -1

// LocateProbe is one measurement every unit takes: a collective at a
// size; a size at or below the geometric mean of the smallest and the
// largest is latency-bound, a larger one bandwidth-bound.
type LocateProbe struct {
	Collective coll.Collective
	SizeBytes  int64
	Latency    bool
}

// Probes are the spec's measurements: each collective at each size, in
// that order; a sample's Probe indexes them.
func (s LocateSpec) Probes() []LocateProbe {
	lo, hi := slices.Min(s.SizesBytes), slices.Max(s.SizesBytes)
	var out []LocateProbe
	for _, c := range s.Collectives {
		for _, size := range s.SizesBytes {
			out = append(out, LocateProbe{Collective: c, SizeBytes: size, Latency: float64(size)*float64(size) <= float64(lo)*float64(hi)})
		}
	}
	return out
}

// LocateLevel is what a step's units are made of, a record: nodes, or the
// ranks within a node; what its suspects are called, a member alone (a
// node, a rank) or a pair of them (a link between nodes, between ranks).
type LocateLevel struct {
	Name         string
	Member, Pair string // the kinds of its suspects
	// OfRanks says the members are world ranks, each within one node;
	// otherwise they are the nodes themselves.
	OfRanks bool
}

// The levels, judged in this order: a rank of a suspect node is explained
// by its node.
var (
	NodeLevel    = LocateLevel{Name: "nodes", Member: "node", Pair: "link"}
	RankLevel    = LocateLevel{Name: "ranks", Member: "rank", Pair: "rank-link", OfRanks: true}
	LocateLevels = []LocateLevel{NodeLevel, RankLevel}
)

// LocateStep is one step of the locate phase, a record: its name, what it
// measures, the level its members are (nodes, or ranks within a node),
// whether its units are pairs of members or a member alone, and how it
// forms its units from the job's nodes. The phase and the reports loop
// over the steps; nothing names one.
type LocateStep struct {
	Name  string // "inside", "pairs", "ranks"
	Title string // what it measures, in words
	Level LocateLevel
	Pairs bool // units are two members (else one member alone)
	// plan forms the rounds, or says why the step cannot run (skip) and
	// what it cannot tell when it does (note).
	plan func(nodes [][]int, spec LocateSpec) (rounds [][]LocateUnit, sched locate.Schedule, skip, note string)
}

// LocateSteps are the phase's steps, in the order they run.
var LocateSteps = []LocateStep{
	{Name: "inside", Title: "inside each node, all nodes at once", Level: NodeLevel, plan: planInside},
	{Name: "pairs", Title: "between nodes, pair by pair", Level: NodeLevel, Pairs: true, plan: planNodePairs},
	{Name: "ranks", Title: "within a node, rank pairs", Level: RankLevel, Pairs: true, plan: planRankPairs},
}

// LocateUnit is what runs on one sub-communicator in a round: a node alone
// (A == B, node indices), two nodes (node indices), or two ranks of a node
// (world ranks; Node is theirs).
type LocateUnit struct {
	A, B    int
	Node    int
	Members []int // the world ranks of its sub-communicator, in their order there
}

// LocatePlan is the phase resolved against the job: its nodes (in the
// order of their first rank) and each step's rounds.
type LocatePlan struct {
	Spec  LocateSpec
	Nodes []string
	Ranks [][]int // each node's world ranks, ascending
	Steps []PlannedStep
}

// PlannedStep is a step and its rounds in this job: every unit of a round
// runs at the same time. Skip says why it cannot run here ("" when it
// does), Note what it cannot tell when it does.
type PlannedStep struct {
	LocateStep
	Rounds   [][]LocateUnit
	Schedule locate.Schedule // a pair step's
	Skip     string
	Note     string
}

// UnitName names a unit of the step: "node3", "node1-node3", "node2:4-5".
func (p LocatePlan) UnitName(s PlannedStep, u LocateUnit) string {
	switch {
	case s.Level.OfRanks:
		return fmt.Sprintf("%s:%d-%d", p.Nodes[u.Node], u.A, u.B)
	case s.Pairs:
		return p.Nodes[u.A] + "-" + p.Nodes[u.B]
	}
	return p.Nodes[u.A]
}

// PlanLocate forms every step's rounds for a job whose rank r runs on
// hosts[r], the same on every rank, and refuses sizes too small for a
// float32 on every rank of the largest sub-communicator.
func PlanLocate(hosts []string, spec LocateSpec) (LocatePlan, error) {
	p := LocatePlan{Spec: spec}
	index := map[string]int{}
	for r, h := range hosts {
		i, ok := index[h]
		if !ok {
			i = len(p.Nodes)
			index[h] = i
			p.Nodes = append(p.Nodes, h)
			p.Ranks = append(p.Ranks, nil)
		}
		p.Ranks[i] = append(p.Ranks[i], r)
	}
	largest := 0
	for _, st := range LocateSteps {
		ps := PlannedStep{LocateStep: st}
		ps.Rounds, ps.Schedule, ps.Skip, ps.Note = st.plan(p.Ranks, spec)
		if ps.Pairs && !ps.Level.OfRanks && ps.Skip == "" && ps.Schedule.Kind == locate.Sampled {
			ps.Note = untriedNote(ps.Schedule, p.Nodes)
		}
		for _, round := range ps.Rounds {
			for _, u := range round {
				largest = max(largest, len(u.Members))
			}
		}
		p.Steps = append(p.Steps, ps)
	}
	unit := int64(largest) * int64(coll.Float32.Size())
	for _, s := range spec.SizesBytes {
		if s < unit {
			return p, fmt.Errorf("locate.sizes_bytes: %d bytes is less than one float32 for each of the %d ranks of the largest sub-communicator: use at least %d", s, largest, unit)
		}
	}
	return p, nil
}

// planInside: each node with two ranks or more runs on its own, all at once.
func planInside(nodes [][]int, _ LocateSpec) ([][]LocateUnit, locate.Schedule, string, string) {
	var round []LocateUnit
	var alone []string
	for n, ranks := range nodes {
		if len(ranks) < 2 {
			alone = append(alone, fmt.Sprint(n))
			continue
		}
		round = append(round, LocateUnit{A: n, B: n, Node: n, Members: ranks})
	}
	if len(round) == 0 {
		return nil, locate.Schedule{}, "every node has one rank: nothing runs inside a node (start two ranks or more per node)", ""
	}
	note := ""
	if len(alone) > 0 {
		note = fmt.Sprintf("%d node(s) with one rank are not measured inside", len(alone))
	}
	return [][]LocateUnit{round}, locate.Schedule{}, "", note
}

// planNodePairs: pairs of nodes on the schedule for their number, each on
// the ranks of both (the first node's, then the second's).
func planNodePairs(nodes [][]int, spec LocateSpec) ([][]LocateUnit, locate.Schedule, string, string) {
	if len(nodes) < 2 {
		return nil, locate.Schedule{}, "one node: there are no pairs of nodes (run on two nodes or more; three or more tell a node from a link)", ""
	}
	sched := locate.Choose(len(nodes), spec.MaxFullNodes, spec.MinPartners)
	var rounds [][]LocateUnit
	for _, round := range sched.Rounds {
		var units []LocateUnit
		for _, pr := range round {
			units = append(units, LocateUnit{A: pr.A, B: pr.B, Node: -1, Members: append(slices.Clone(nodes[pr.A]), nodes[pr.B]...)})
		}
		rounds = append(rounds, units)
	}
	note := ""
	if len(nodes) == 2 {
		note = "two nodes make one pair, which cannot tell a slow node from a slow link or from the other node: three nodes or more do"
	}
	return rounds, sched, "", note
}

// shownUntried bounds the untried pairs a sampled step's note names.
const shownUntried = 6

// untriedNote says what a sampled schedule did not see: the pairs it never
// tries, which it calls neither healthy nor suspect, and the chance that
// one bad link is among them (docs/locate.md has it at 16 to 1,024 nodes).
// The schedule is the same in every run, so running again does not help.
func untriedNote(s locate.Schedule, nodes []string) string {
	tried, all := s.Coverage()
	if tried == all {
		return ""
	}
	var names []string
	for _, p := range s.Untried(shownUntried) {
		names = append(names, nodes[p.A]+"-"+nodes[p.B])
	}
	more := ""
	if all-tried > len(names) {
		more = fmt.Sprintf(" and %d more", all-tried-len(names))
	}
	return fmt.Sprintf("%d of %d pairs never tried, their links neither healthy nor suspect (%s%s): "+
		"one bad link is missed with chance %.0f%%, in every run alike", all-tried, all, strings.Join(names, ", "), more,
		100*s.MissChance())
}

// planRankPairs: within every node of three ranks or more, its rank pairs
// on the node's own schedule, round r of every node at once. With two
// ranks a node's one pair is its inside step, so it is not run again.
func planRankPairs(nodes [][]int, spec LocateSpec) ([][]LocateUnit, locate.Schedule, string, string) {
	var rounds [][]LocateUnit
	var sched locate.Schedule
	for n, ranks := range nodes {
		if len(ranks) < 3 {
			continue
		}
		s := locate.Choose(len(ranks), spec.MaxFullNodes, spec.MinPartners)
		if len(s.Rounds) > len(sched.Rounds) {
			sched = s
		}
		for r, round := range s.Rounds {
			if r == len(rounds) {
				rounds = append(rounds, nil)
			}
			for _, pr := range round {
				a, b := ranks[pr.A], ranks[pr.B]
				rounds[r] = append(rounds[r], LocateUnit{A: a, B: b, Node: n, Members: []int{a, b}})
			}
		}
	}
	if len(rounds) == 0 {
		return nil, sched, "every node has at most two ranks: a node's one pair of ranks is its inside step, and rank pairs need three ranks or more to tell a rank from a link", ""
	}
	return rounds, sched, "", ""
}

// LocateSample is one measurement on one rank: its step, round, repeat and
// unit, the collective and size, and this rank's time per operation.
type LocateSample struct {
	Step   string
	Round  int
	Repeat int
	Unit   string // PlannedStep's UnitName
	A, B   int    // the unit's members (LocateUnit)
	// Probe indexes LocateSpec.Probes: the collective (by name) and the
	// size the config asked; Bytes is the full buffer as nccl-tests
	// counts it, rounded down to a whole float32 per rank of the unit's
	// sub-communicator.
	Probe      int
	Collective string
	SizeBytes  int64
	Bytes      int64
	Ranks      int // in the unit's sub-communicator
	DurationUS float64
}

// LocateComm is the making and freeing of one round's sub-communicator on
// one rank (Member false: the rank sat the round out and took part in the
// split only).
type LocateComm struct {
	Step    string
	Round   int
	Member  bool
	SplitUS float64
	FreeUS  float64
}

// LocateResult is one rank's part of the phase.
type LocateResult struct {
	Samples []LocateSample
	Comms   []LocateComm
	Seconds float64 // the whole phase on this rank
	// WaitedS is how long this rank's thread sat runnable but not running
	// during the phase (schedstat's run_delay): the scheduler's share of
	// its times, 0 where the kernel does not say.
	WaitedS float64
}

// liveRounds bounds the sub-communicators a rank holds at once: the rounds
// of a block are split once, measured repeat after repeat (so the repeats
// of a unit are interleaved with the other rounds' measurements), then
// freed. NCCL communicators hold device memory each, so not every round of
// a 64-node run at once.
const liveRounds = 16

// RunLocate runs the plan's steps on this rank: per block of rounds, one
// split per round (every rank takes part; a rank in no unit of the round
// gets no communicator), then for each repeat, each round in turn after a
// barrier of the world: every unit of the round at once, each collective
// and size warmed up on the sub-communicator's first repeat, then timed
// over Iterations back-to-back operations. A rank in no unit waits at the
// next barrier. Inputs are float32 ones; the outputs are not checked: the
// phase measures, the contracts prove.
func RunLocate(be coll.Backend, comm coll.Comm, plan LocatePlan) (res LocateResult, err error) {
	start := time.Now()
	// The main goroutine is locked to its thread (main's init), so both
	// reads are of the thread that runs the collectives.
	waited0, okWait := schedstat.RunDelay()
	sp, ok := coll.Find[coll.Splitter](be)
	if !ok {
		return res, fmt.Errorf("the locate phase needs sub-communicators, which the %s backend has not", be.Info().Backend)
	}
	rank := be.Rank()
	spec := plan.Spec
	a := &arena{be: be}
	defer a.release(&err)
	n := int(slices.Max(spec.SizesBytes) / int64(coll.Float32.Size()))
	send, err := a.alloc(coll.Elems(coll.Float32, n))
	if err != nil {
		return res, err
	}
	recv, err := a.alloc(coll.Elems(coll.Float32, n))
	if err != nil {
		return res, err
	}
	one := coll.Float32.Elem(1)
	if err := errors.Join(be.Fill(send, one), be.Fill(recv, one)); err != nil {
		return res, err
	}
	// One float64 each way: a unit's ranks agree on its slowest first
	// operation of a probe (OpDeadline).
	var bufs probeBuffers
	bufs.send, bufs.recv = send, recv
	if bufs.agreeSend, err = a.alloc(coll.Elems(coll.Float64, 1)); err != nil {
		return res, err
	}
	if bufs.agreeRecv, err = a.alloc(coll.Elems(coll.Float64, 1)); err != nil {
		return res, err
	}
	for _, st := range plan.Steps {
		if st.Skip != "" {
			continue
		}
		for b := 0; b < len(st.Rounds); b += liveRounds {
			got, comms, err := runBlock(be, sp, comm, plan, st, b, min(b+liveRounds, len(st.Rounds)), bufs)
			res.Samples, res.Comms = append(res.Samples, got...), append(res.Comms, comms...)
			if err != nil {
				return res, fmt.Errorf("locate %s on rank %d: %w", st.Name, rank, err)
			}
		}
	}
	res.Seconds = time.Since(start).Seconds()
	if waited1, ok := schedstat.RunDelay(); ok && okWait && waited1 > waited0 {
		res.WaitedS = (waited1 - waited0).Seconds()
	}
	return res, nil
}

// roundComm is this rank's sub-communicator of one round, and the calls it
// prepared on it, per probe.
type roundComm struct {
	round int
	unit  LocateUnit
	be    coll.Backend // nil: the rank sits this round out
	calls map[int]func() error
	sizes map[int]int64
	// abandoned are the probes whose first operation overran
	// LocateSpec.OpDeadline: not taken again on this unit.
	abandoned map[int]bool
}

// probeBuffers are the probes' send and receive buffers, and the two of
// one float64 on which a unit's ranks agree whether to abandon a probe.
type probeBuffers struct {
	send, recv, agreeSend, agreeRecv coll.Buffer
}

// runBlock runs rounds [from, to) of st.
func runBlock(be coll.Backend, sp coll.Splitter, comm coll.Comm, plan LocatePlan, st PlannedStep, from, to int, bufs probeBuffers) (samples []LocateSample, comms []LocateComm, err error) {
	rank := be.Rank()
	var held []*roundComm
	defer func() {
		for _, h := range held {
			if h.be == nil {
				continue
			}
			armStep(be, "freeing a locate sub-communicator", -1)
			t0 := time.Now()
			cerr := h.be.Close()
			leaveStep(be)
			comms[h.round-from].FreeUS = float64(time.Since(t0).Microseconds())
			if cerr != nil && err == nil {
				err = cerr
			}
		}
	}()
	for r := from; r < to; r++ {
		rc := &roundComm{round: r, calls: map[int]func() error{}, sizes: map[int]int64{}, abandoned: map[int]bool{}}
		color, key := coll.NoColor, 0
		for ui, u := range st.Rounds[r] {
			if k := slices.Index(u.Members, rank); k >= 0 {
				color, key, rc.unit = ui, k, u
			}
		}
		armStep(be, fmt.Sprintf("split for locate %s round %d", st.Name, r), -1)
		t0 := time.Now()
		sub, err := sp.Split(color, key)
		leaveStep(be)
		comms = append(comms, LocateComm{Step: st.Name, Round: r, Member: color != coll.NoColor, SplitUS: float64(time.Since(t0).Microseconds())})
		if err != nil {
			return samples, comms, fmt.Errorf("round %d: %w", r, err)
		}
		if sub != nil {
			rc.be = rewatch(be, sub)
		}
		held = append(held, rc)
	}
	probes := plan.Spec.Probes()
	for rep := range plan.Spec.Repeats {
		for _, rc := range held {
			if err := comm.Barrier(); err != nil {
				return samples, comms, err
			}
			if rc.be == nil {
				continue
			}
			for pr, probe := range probes {
				if rc.abandoned[pr] {
					continue
				}
				s, err := measureProbe(be, rc, plan.Spec, pr, probe, bufs)
				if err != nil {
					return samples, comms, fmt.Errorf("round %d, %s: %w", rc.round, plan.UnitName(st, rc.unit), err)
				}
				s.Step, s.Round, s.Repeat, s.Unit, s.A, s.B = st.Name, rc.round, rep, plan.UnitName(st, rc.unit), rc.unit.A, rc.unit.B
				if rc.abandoned[pr] {
					s.Repeat = LocateAbandoned
				}
				samples = append(samples, s)
			}
		}
	}
	return samples, comms, nil
}

// measureProbe takes probe pr on rc's sub-communicator: prepared and
// warmed up the first time, then timed. The first operation is timed
// alone: when it took longer than spec.OpDeadline on any rank of the unit
// (agreed on the unit's communicator, so that its ranks stop alike), the
// probe is abandoned there (rc.abandoned) and the sample is that one
// operation.
func measureProbe(be coll.Backend, rc *roundComm, spec LocateSpec, pr int, probe LocateProbe, bufs probeBuffers) (LocateSample, error) {
	send, recv := bufs.send, bufs.recv
	c, size := probe.Collective, probe.SizeBytes
	w := rc.be.WorldSize()
	call, ok := rc.calls[pr]
	if !ok {
		full := int(size) / coll.Float32.Size() / w * w
		sendN := c.SendCount(full, w)
		recvN, _ := c.RecvCount(sendN, w)
		sv, err := be.View(send, 0, sendN)
		if err != nil {
			return LocateSample{}, err
		}
		rv, err := be.View(recv, 0, recvN)
		if err != nil {
			return LocateSample{}, err
		}
		if call, err = prepare(rc.be, c, sv, rv, coll.Sum); err != nil {
			return LocateSample{}, err
		}
		rc.calls[pr], rc.sizes[pr] = call, int64(full*coll.Float32.Size())
		armStep(rc.be, c.Name+" warm-up", rc.sizes[pr])
		t0 := time.Now()
		err = call()
		if err == nil {
			// A device's collective is queued: its time is at its end.
			err = rc.be.Synchronize()
		}
		first := time.Since(t0)
		leaveStep(rc.be)
		if err != nil {
			return LocateSample{}, fmt.Errorf("%s warm-up: %w", c.Name, err)
		}
		if spec.OpDeadline > 0 {
			slowest, err := agreeSlowest(be, rc.be, bufs, first)
			if err != nil {
				return LocateSample{}, fmt.Errorf("agreeing on %s's first operation: %w", c.Name, err)
			}
			if slowest > spec.OpDeadline {
				rc.abandoned[pr] = true
				return LocateSample{Probe: pr, Collective: c.Name, SizeBytes: size, Bytes: rc.sizes[pr], Ranks: w,
					DurationUS: float64(slowest.Microseconds())}, nil
			}
		}
		armStep(rc.be, c.Name+" warm-up", rc.sizes[pr])
		for range spec.Warmups - 1 {
			if err := call(); err != nil {
				return LocateSample{}, fmt.Errorf("%s warm-up: %w", c.Name, err)
			}
		}
		leaveStep(rc.be)
	}
	// The prepared calls bypass the watch: the measurement as a whole is
	// the step the watchdog gives a deadline.
	armStep(rc.be, c.Name, rc.sizes[pr])
	us, err := rc.be.Time(func() error {
		for range spec.Iterations {
			if err := call(); err != nil {
				return err
			}
		}
		return nil
	})
	leaveStep(rc.be)
	if err != nil {
		return LocateSample{}, fmt.Errorf("%s at %d bytes: %w", c.Name, rc.sizes[pr], err)
	}
	return LocateSample{Probe: pr, Collective: c.Name, SizeBytes: size, Bytes: rc.sizes[pr], Ranks: w, DurationUS: us / float64(spec.Iterations)}, nil
}

// Described says, per step, what ran or why not, in words.
func (p LocatePlan) Described() []string {
	var out []string
	for _, s := range p.Steps {
		switch {
		case s.Skip != "":
			out = append(out, fmt.Sprintf("%s: not run: %s", s.Title, s.Skip))
		default:
			line := fmt.Sprintf("%s: %d round(s)", s.Title, len(s.Rounds))
			if s.Pairs && !s.Level.OfRanks {
				line = fmt.Sprintf("%s: %s", s.Title, s.Schedule.Describe())
			}
			if s.Note != "" {
				line += "; " + s.Note
			}
			out = append(out, line)
		}
	}
	return out
}

// agreeSlowest is the longest of d over the ranks of sub (an AllReduce of
// one float64 with max), written and read through be, which allocated the
// buffers.
func agreeSlowest(be, sub coll.Backend, bufs probeBuffers, d time.Duration) (time.Duration, error) {
	if err := be.Write(bufs.agreeSend, coll.Float64.Elem(d.Seconds())); err != nil {
		return 0, err
	}
	if err := sub.Run(coll.AllReduce, bufs.agreeSend, bufs.agreeRecv, coll.Max); err != nil {
		return 0, err
	}
	b := make([]byte, coll.Float64.Size())
	if err := be.Read(bufs.agreeRecv, b); err != nil {
		return 0, err
	}
	return time.Duration(coll.Float64.Value(b) * float64(time.Second)), nil
}
