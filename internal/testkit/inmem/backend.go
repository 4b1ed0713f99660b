package inmem

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"rsag/coll"
	"rsag/internal/hostmem"
)

var (
	_ coll.Backend    = (*Backend)(nil)
	_ coll.GraphTimer = (*Backend)(nil)
	_ coll.Splitter   = (*Backend)(nil)
)

// Backend is one rank's backend: host buffers of that rank, collectives
// over its group. It is used from its rank's goroutine only.
type Backend struct {
	job   *job
	group *group
	rank  int // within group
	// The rank's buffers and their accounting, as mpibackend keeps them
	// (hostmem.Heap); a Split backend holds a share of its rank's.
	*hostmem.Heap
	flips  *flips // shared with the backends Split returns on this rank
	closed bool
	info   coll.Info // what Info says; the zero value: "inmem" on host "inmem"
}

// flips counts one rank's calls of Faults.Flip's collective: its
// backend's, or (comm) its host-side communicator's.
type flips struct {
	rank  int // world rank
	comm  bool
	calls int
}

func newHeap(rank int) *hostmem.Heap {
	return hostmem.New(hostmem.Options{Name: "inmem", Backend: "the inmem backend", Owner: fmt.Sprintf("rank %d", rank)})
}

func (be *Backend) Info() coll.Info {
	if be.info.Backend != "" {
		return be.info
	}
	return coll.Info{Backend: "inmem", Host: "inmem", Device: "host memory"}
}

func (be *Backend) Rank() int      { return be.rank }
func (be *Backend) WorldSize() int { return len(be.group.members) }

// Supports is nil for every dtype and op: the reductions run on the host;
// under Faults.Refusals, what they refuse.
func (be *Backend) Supports(d coll.DType, o coll.Op) error {
	if r := be.job.faults.Refusals; r != nil {
		if err := r.Supports(d, o); err != nil {
			return err
		}
	}
	if !slices.Contains(coll.AllDTypes, d) {
		return fmt.Errorf("inmem: unknown element type %s", d)
	}
	if _, ok := reductions[o]; !ok {
		return fmt.Errorf("inmem: unknown reduction %s", o)
	}
	return nil
}

func (be *Backend) usable(op string) error { return be.Check(op) }

// Synchronize does nothing: the collectives have finished when they return.
func (be *Backend) Synchronize() error { return be.usable("Synchronize") }

// Time returns the monotonic wall-clock time of one call of op, in
// microseconds.
func (be *Backend) Time(op func() error) (float64, error) { return be.timeRuns(1, op) }

// timeRuns returns the monotonic wall-clock time of n back-to-back calls
// of op, in microseconds; it stops at the first call that fails.
func (be *Backend) timeRuns(n int, op func() error) (float64, error) {
	if err := be.Synchronize(); err != nil {
		return 0, err
	}
	return hostmem.TimeBatch(n, op)
}

// CaptureGraph records op to be replayed n times by the graph's Time, as a
// CUDA graph would; like a capture, it runs nothing now.
func (be *Backend) CaptureGraph(n int, op func() error) (coll.Graph, error) {
	if err := be.usable("CaptureGraph"); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("inmem: CaptureGraph of %d runs: at least one", n)
	}
	return &graph{be: be, n: n, op: op}, nil
}

type graph struct {
	be     *Backend
	n      int
	op     func() error
	closed bool
}

func (g *graph) Time() (float64, error) {
	if g.closed {
		return 0, errors.New("inmem: graph replayed after Close")
	}
	return g.be.timeRuns(g.n, g.op)
}

func (g *graph) Close() error {
	if g.closed {
		return errors.New("inmem: graph closed twice")
	}
	g.closed = true
	return nil
}

// Split is collective over this backend's group: ranks with the same color
// form a group, ordered by key and then by rank; a rank with coll.NoColor
// takes part and gets none (nil, no error). The group's backend shares
// this rank's buffers and accounting; its Close ends the group only.
func (be *Backend) Split(color, key int) (coll.Backend, error) {
	if err := be.usable("Split"); err != nil {
		return nil, err
	}
	if color < 0 && color != coll.NoColor {
		return nil, fmt.Errorf("inmem: Split: color %d is negative: give 0 or more, or coll.NoColor", color)
	}
	m, err := be.job.meet(be.group, be.rank, "split", [2]int{color, key})
	if err != nil {
		return nil, err
	}
	if color == coll.NoColor {
		return nil, nil
	}
	var mine []int // group ranks of this group, in the new order
	for r, p := range m.payloads {
		if p.([2]int)[0] == color {
			mine = append(mine, r)
		}
	}
	slices.SortStableFunc(mine, func(a, b int) int {
		return cmp.Compare(m.payloads[a].([2]int)[1], m.payloads[b].([2]int)[1])
	})
	j := be.job
	j.mu.Lock()
	defer j.mu.Unlock()
	if m.splits == nil {
		m.splits = map[int]*group{}
	}
	g, ok := m.splits[color]
	if !ok {
		members := make([]int, len(mine))
		for i, r := range mine {
			members[i] = be.group.members[r]
		}
		g = j.newGroup(fmt.Sprintf("%s/color %d", be.group.name, color), members)
		m.splits[color] = g
	}
	return &Backend{job: j, group: g, rank: slices.Index(mine, be.rank), Heap: be.Share(), flips: be.flips, info: be.info}, nil
}

// Close ends this backend. The rank's own backend releases its buffers and
// reports those still allocated as a leak; a group's backend from Split
// releases nothing.
func (be *Backend) Close() error {
	if be.closed {
		return errors.New("inmem: Close: already closed")
	}
	be.closed = true
	return be.Heap.Close()
}
