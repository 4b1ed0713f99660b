package hostmem

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"rsag/coll"
)

// Heap is one rank's host buffers and their exact accounting, kept alike by
// both host-memory backends, so that the test backend cannot drift from the
// product: Alloc adds a buffer's bytes, Free subtracts them, views count
// nothing, and a use after Free or Close is an error, never a fault. The
// rank's backend holds the heap; a backend that Split gives it holds a
// share of it (Share), on the same buffers and accounting, that closes
// alone.
type Heap struct {
	*pool
	share  bool // a Split backend's: Close releases nothing
	closed bool
}

// pool is the buffers and accounting a heap and its shares have in common.
type pool struct {
	opts      Options
	live      map[*region]struct{} // every allocation Free has not released
	liveBytes int64
	peakBytes int64
	closed    bool
}

// Options say whose heap it is, for errors, and where its memory comes
// from.
type Options struct {
	Name    string // starts every error: "mpibackend"
	Backend string // what a foreign buffer is not a buffer of: "the MPI backend"
	Owner   string // whose buffers these are, "rank 3"; "" names no one
	// Map returns n bytes of zeroed memory and Unmap gives them back; nil
	// for both is Go's own memory (make), which the collector returns.
	Map   func(n int) ([]byte, error)
	Unmap func(mem []byte) error
}

// New returns an empty heap.
func New(o Options) *Heap {
	return &Heap{pool: &pool{opts: o, live: map[*region]struct{}{}}}
}

// Share is a heap on h's buffers and accounting whose Close ends it alone.
func (h *Heap) Share() *Heap { return &Heap{pool: h.pool, share: true} }

// region is one allocation; mem is nil once it has been released, so that
// every buffer on it, views included, sees that it is gone.
type region struct {
	pool *pool
	mem  []byte
}

// Buffer is a buffer Alloc returned (view false, off 0) or a view into one.
type Buffer struct {
	region *region
	dtype  coll.DType
	off    int // elements from the start of the region
	count  int
	view   bool
}

func (b *Buffer) Count() int        { return b.count }
func (b *Buffer) DType() coll.DType { return b.dtype }

// Offset is the buffer's first element, counted from the start of its
// allocation (a view's is inside its buffer's).
func (b *Buffer) Offset() int { return b.off }

// SameAllocation says whether b and o lie in one allocation: a buffer and
// its views.
func (b *Buffer) SameAllocation(o *Buffer) bool { return b.region == o.region }

// Check returns an error once h (or the heap it shares) is closed.
func (h *Heap) Check(op string) error {
	if h.closed || h.pool.closed {
		return fmt.Errorf("%s: %s after Close", h.opts.Name, op)
	}
	return nil
}

// Alloc allocates count elements of host memory, after s's offset.
func (h *Heap) Alloc(s coll.BufferSpec) (coll.Buffer, error) {
	dtype, count := s.DType, s.Count
	if err := h.Check("Alloc"); err != nil {
		return nil, err
	}
	if !slices.Contains(coll.AllDTypes, dtype) {
		return nil, fmt.Errorf("%s: Alloc: unknown element type %s", h.opts.Name, dtype)
	}
	skip, err := s.OffsetElems()
	if err != nil {
		return nil, fmt.Errorf("%s: Alloc: %w", h.opts.Name, err)
	}
	if count <= 0 {
		return nil, fmt.Errorf("%s: Alloc: %d elements: a buffer holds at least one", h.opts.Name, count)
	}
	if count > math.MaxInt/dtype.Size()-skip {
		return nil, fmt.Errorf("%s: Alloc: %d %s elements overflow a byte count", h.opts.Name, count, dtype)
	}
	n := (skip + count) * dtype.Size()
	var mem []byte
	if h.opts.Map == nil {
		mem = make([]byte, n)
	} else if mem, err = h.opts.Map(n); err != nil {
		return nil, fmt.Errorf("%s: Alloc of %d bytes: %w", h.opts.Name, n, err)
	}
	r := &region{pool: h.pool, mem: mem}
	h.live[r] = struct{}{}
	h.liveBytes += int64(n)
	h.peakBytes = max(h.peakBytes, h.liveBytes)
	return &Buffer{region: r, dtype: dtype, off: skip, count: count}, nil
}

// View returns count elements of b from element offset; it shares b's
// memory, is not counted by Memory and cannot be freed.
func (h *Heap) View(b coll.Buffer, offset, count int) (coll.Buffer, error) {
	buf, _, err := h.Bytes("View", b)
	if err != nil {
		return nil, err
	}
	if offset < 0 || count < 0 || offset > buf.count-count {
		return nil, fmt.Errorf("%s: View of %d elements at offset %d of a buffer of %d", h.opts.Name, count, offset, buf.count)
	}
	return &Buffer{region: buf.region, dtype: buf.dtype, off: buf.off + offset, count: count, view: true}, nil
}

// Free releases a buffer Alloc returned.
func (h *Heap) Free(b coll.Buffer) error {
	buf, _, err := h.Bytes("Free", b)
	if err != nil {
		return err
	}
	if buf.view {
		return fmt.Errorf("%s: Free of a view: free the buffer it views", h.opts.Name)
	}
	return h.release(buf.region)
}

// release gives r's memory back and stops counting it. Memory that Unmap
// refuses stays counted, and Close tries it again.
func (p *pool) release(r *region) error {
	n := len(r.mem)
	if p.opts.Unmap != nil {
		if err := p.opts.Unmap(r.mem); err != nil {
			return fmt.Errorf("%s: %w", p.opts.Name, err)
		}
	}
	r.mem = nil
	delete(p.live, r)
	p.liveBytes -= int64(n)
	return nil
}

// Memory is the bytes of the buffers allocated and not freed, and their
// peak since the last ResetPeak; there is no device. It reads the same
// after Close, so that what a leak held can still be seen.
func (h *Heap) Memory() (coll.MemoryStats, error) {
	return coll.MemoryStats{LiveBytes: h.liveBytes, PeakBytes: h.peakBytes, DeviceUsedBytes: -1}, nil
}

func (h *Heap) ResetPeak() { h.peakBytes = h.liveBytes }

// Fill sets every element of b to elem (see the function Fill).
func (h *Heap) Fill(b coll.Buffer, elem []byte) error {
	buf, mem, err := h.Bytes("Fill", b)
	if err != nil {
		return err
	}
	if err := Fill(mem, elem, buf.dtype.Size()); err != nil {
		return fmt.Errorf("%s: %w (%s)", h.opts.Name, err, buf.dtype)
	}
	return nil
}

// Write copies src, exactly as long, into b.
func (h *Heap) Write(b coll.Buffer, src []byte) error {
	_, mem, err := h.Bytes("Write", b)
	if err != nil {
		return err
	}
	if err := Write(mem, src); err != nil {
		return fmt.Errorf("%s: %w", h.opts.Name, err)
	}
	return nil
}

// Read copies b into dst, exactly as long.
func (h *Heap) Read(b coll.Buffer, dst []byte) error {
	_, mem, err := h.Bytes("Read", b)
	if err != nil {
		return err
	}
	if err := Read(mem, dst); err != nil {
		return fmt.Errorf("%s: %w", h.opts.Name, err)
	}
	return nil
}

// Bytes returns b as this heap's buffer and its bytes, or an error when h
// is closed, b is not one of its buffers or b's memory has been freed.
func (h *Heap) Bytes(op string, b coll.Buffer) (*Buffer, []byte, error) {
	if err := h.Check(op); err != nil {
		return nil, nil, err
	}
	buf, ok := b.(*Buffer)
	if !ok || buf == nil {
		return nil, nil, fmt.Errorf("%s: %s: %T is not a buffer of %s", h.opts.Name, op, b, h.opts.Backend)
	}
	if p := buf.region.pool; p != h.pool {
		if p.opts.Owner != "" && h.opts.Owner != "" {
			return nil, nil, fmt.Errorf("%s: %s: the buffer belongs to %s, not to %s", h.opts.Name, op, p.opts.Owner, h.opts.Owner)
		}
		return nil, nil, fmt.Errorf("%s: %s: the buffer belongs to another backend", h.opts.Name, op)
	}
	if buf.region.mem == nil {
		return nil, nil, fmt.Errorf("%s: %s: the buffer was freed", h.opts.Name, op)
	}
	es := buf.dtype.Size()
	start, end := buf.off*es, (buf.off+buf.count)*es
	return buf, buf.region.mem[start:end:end], nil
}

// Close ends h. A share releases nothing; the heap itself releases every
// buffer still allocated and reports them as a leak in the caller.
func (h *Heap) Close() error {
	h.closed = true
	if h.share {
		return nil
	}
	h.pool.closed = true
	n, bytes := len(h.live), h.liveBytes
	var errs []error
	for r := range h.live {
		if err := h.release(r); err != nil {
			errs = append(errs, err)
		}
	}
	if n > 0 {
		on := ""
		if h.opts.Owner != "" {
			on = " on " + h.opts.Owner
		}
		errs = append([]error{fmt.Errorf("%s: Close%s: %d buffers (%d bytes) were still allocated; released them", h.opts.Name, on, n, bytes)}, errs...)
	}
	return errors.Join(errs...)
}

// Closed says whether Close has ended h.
func (h *Heap) Closed() bool { return h.closed }
