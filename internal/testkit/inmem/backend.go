package inmem

import (
	"cmp"
	"errors"
	"fmt"
	"math"
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
	job    *job
	group  *group
	rank   int   // within group
	heap   *heap // shared with the backends Split returns on this rank
	owner  bool  // this is the rank's own backend, which owns heap
	closed bool
}

// heap is one rank's buffers and their exact accounting, as mpibackend
// keeps it: Alloc adds, Free subtracts, views count nothing.
type heap struct {
	rank      int // world rank, for messages
	live      map[*region]struct{}
	liveBytes int64
	peakBytes int64
	closed    bool
	calls     int // of Faults.Flip's collective
}

func newHeap(rank int) *heap { return &heap{rank: rank, live: map[*region]struct{}{}} }

// region is one allocation; mem is nil once freed, so that every buffer on
// it, views included, sees that it is gone.
type region struct {
	heap *heap
	mem  []byte
}

// buffer is a buffer Alloc returned (view false, off 0) or a view into one.
type buffer struct {
	region *region
	dtype  coll.DType
	off    int // elements from the start of the region
	count  int
	view   bool
}

func (b *buffer) Count() int        { return b.count }
func (b *buffer) DType() coll.DType { return b.dtype }

func (be *Backend) Info() coll.Info {
	return coll.Info{Backend: "inmem", Host: "inmem", Device: "host memory"}
}

func (be *Backend) Rank() int      { return be.rank }
func (be *Backend) WorldSize() int { return len(be.group.members) }

// Supports is nil for every dtype and op: the reductions run on the host.
func (be *Backend) Supports(d coll.DType, o coll.Op) error {
	if !slices.Contains(coll.AllDTypes, d) {
		return fmt.Errorf("inmem: unknown element type %s", d)
	}
	if _, ok := reductions[o]; !ok {
		return fmt.Errorf("inmem: unknown reduction %s", o)
	}
	return nil
}

func (be *Backend) usable(op string) error {
	if be.closed || be.heap.closed {
		return fmt.Errorf("inmem: %s after Close", op)
	}
	return nil
}

// Alloc allocates count elements of host memory, after s's offset.
func (be *Backend) Alloc(s coll.BufferSpec) (coll.Buffer, error) {
	dtype, count := s.DType, s.Count
	if err := be.usable("Alloc"); err != nil {
		return nil, err
	}
	if !slices.Contains(coll.AllDTypes, dtype) {
		return nil, fmt.Errorf("inmem: Alloc: unknown element type %s", dtype)
	}
	skip, err := s.OffsetElems()
	if err != nil {
		return nil, fmt.Errorf("inmem: Alloc: %w", err)
	}
	if count <= 0 {
		return nil, fmt.Errorf("inmem: Alloc: %d elements: a buffer holds at least one", count)
	}
	if count > math.MaxInt/dtype.Size()-skip {
		return nil, fmt.Errorf("inmem: Alloc: %d %s elements overflow a byte count", count, dtype)
	}
	h := be.heap
	r := &region{heap: h, mem: make([]byte, (skip+count)*dtype.Size())}
	h.live[r] = struct{}{}
	h.liveBytes += int64(len(r.mem))
	h.peakBytes = max(h.peakBytes, h.liveBytes)
	return &buffer{region: r, dtype: dtype, off: skip, count: count}, nil
}

// View returns count elements of b from element offset; it shares b's
// memory, is not counted by Memory and cannot be freed.
func (be *Backend) View(b coll.Buffer, offset, count int) (coll.Buffer, error) {
	buf, _, err := be.memory("View", b)
	if err != nil {
		return nil, err
	}
	if offset < 0 || count < 0 || offset > buf.count-count {
		return nil, fmt.Errorf("inmem: View of %d elements at offset %d of a buffer of %d", count, offset, buf.count)
	}
	return &buffer{region: buf.region, dtype: buf.dtype, off: buf.off + offset, count: count, view: true}, nil
}

// Free releases a buffer Alloc returned.
func (be *Backend) Free(b coll.Buffer) error {
	buf, _, err := be.memory("Free", b)
	if err != nil {
		return err
	}
	if buf.view {
		return errors.New("inmem: Free of a view: free the buffer it views")
	}
	be.heap.release(buf.region)
	return nil
}

func (h *heap) release(r *region) {
	h.liveBytes -= int64(len(r.mem))
	r.mem = nil
	delete(h.live, r)
}

func (be *Backend) Memory() (coll.MemoryStats, error) {
	if err := be.usable("Memory"); err != nil {
		return coll.MemoryStats{}, err
	}
	return coll.MemoryStats{LiveBytes: be.heap.liveBytes, PeakBytes: be.heap.peakBytes, DeviceUsedBytes: -1}, nil
}

func (be *Backend) ResetPeak() { be.heap.peakBytes = be.heap.liveBytes }

// Fill writes elem once, then doubles the filled part until b is full.
func (be *Backend) Fill(b coll.Buffer, elem []byte) error {
	buf, mem, err := be.memory("Fill", b)
	if err != nil {
		return err
	}
	if err := hostmem.Fill(mem, elem, buf.dtype.Size()); err != nil {
		return fmt.Errorf("inmem: %w (%s)", err, buf.dtype)
	}
	return nil
}

func (be *Backend) Write(b coll.Buffer, src []byte) error {
	_, mem, err := be.memory("Write", b)
	if err != nil {
		return err
	}
	if err := hostmem.Write(mem, src); err != nil {
		return fmt.Errorf("inmem: %w", err)
	}
	return nil
}

func (be *Backend) Read(b coll.Buffer, dst []byte) error {
	_, mem, err := be.memory("Read", b)
	if err != nil {
		return err
	}
	if err := hostmem.Read(mem, dst); err != nil {
		return fmt.Errorf("inmem: %w", err)
	}
	return nil
}

// memory returns b as this rank's buffer and its bytes, or an error when b
// is not an inmem buffer, belongs to another rank, or was freed.
func (be *Backend) memory(op string, b coll.Buffer) (*buffer, []byte, error) {
	if err := be.usable(op); err != nil {
		return nil, nil, err
	}
	buf, ok := b.(*buffer)
	if !ok || buf == nil {
		return nil, nil, fmt.Errorf("inmem: %s: %T is not a buffer of the inmem backend", op, b)
	}
	if buf.region.heap != be.heap {
		return nil, nil, fmt.Errorf("inmem: %s: the buffer belongs to rank %d, not to rank %d", op, buf.region.heap.rank, be.heap.rank)
	}
	if buf.region.mem == nil {
		return nil, nil, fmt.Errorf("inmem: %s: the buffer was freed", op)
	}
	es := buf.dtype.Size()
	start, end := buf.off*es, (buf.off+buf.count)*es
	return buf, buf.region.mem[start:end:end], nil
}

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
	return &Backend{job: j, group: g, rank: slices.Index(mine, be.rank), heap: be.heap}, nil
}

// Close ends this backend. The rank's own backend releases its buffers and
// reports those still allocated as a leak; a group's backend from Split
// releases nothing.
func (be *Backend) Close() error {
	if be.closed {
		return errors.New("inmem: Close: already closed")
	}
	be.closed = true
	if !be.owner {
		return nil
	}
	h := be.heap
	h.closed = true
	n, bytes := len(h.live), h.liveBytes
	for r := range h.live {
		h.release(r)
	}
	if n > 0 {
		return fmt.Errorf("inmem: Close on rank %d: %d buffers (%d bytes) were still allocated; released them", h.rank, n, bytes)
	}
	return nil
}
