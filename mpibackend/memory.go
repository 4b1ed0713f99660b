package mpibackend

import (
	"errors"
	"fmt"
	"math"
	"syscall"

	"rsag/coll"
	"rsag/internal/hostmem"
)

// region is one anonymous mapping; mem is nil once it has been unmapped, so
// that every buffer on it, views included, sees that it is gone.
type region struct{ mem []byte }

// buffer is a buffer Alloc returned (view false, off 0) or a view into one.
type buffer struct {
	owner  *Backend
	region *region
	dtype  coll.DType
	off    int // elements from the start of the region
	count  int
	view   bool
}

func (b *buffer) Count() int        { return b.count }
func (b *buffer) DType() coll.DType { return b.dtype }

// Alloc maps count elements of host memory, after s's offset. MAP_POPULATE
// commits the pages now, as a device allocation would, so that first-touch
// page faults land in Alloc and not in the first collective that writes the
// buffer.
func (be *Backend) Alloc(s coll.BufferSpec) (coll.Buffer, error) {
	dtype, count := s.DType, s.Count
	if be.closed || be.pool.closed {
		return nil, errors.New("mpibackend: Alloc after Close")
	}
	// Types MPI cannot reduce (float16) still have host memory; only the
	// collectives refuse them.
	_, mapped := datatypes[dtype]
	if _, unmapped := noDatatype[dtype]; !mapped && !unmapped {
		return nil, fmt.Errorf("mpibackend: Alloc: unknown element type %s", dtype)
	}
	skip, err := s.OffsetElems()
	if err != nil {
		return nil, fmt.Errorf("mpibackend: Alloc: %w", err)
	}
	if count <= 0 {
		return nil, fmt.Errorf("mpibackend: Alloc: %d elements: a buffer holds at least one (mmap cannot map 0 bytes)", count)
	}
	if count > math.MaxInt/dtype.Size()-skip {
		return nil, fmt.Errorf("mpibackend: Alloc: %d %s elements overflow a byte count", count, dtype)
	}
	n := (skip + count) * dtype.Size()
	mem, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|syscall.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("mpibackend: Alloc of %d bytes: mmap: %w", n, err)
	}
	r := &region{mem: mem}
	be.live[r] = struct{}{}
	be.liveBytes += int64(n)
	be.peakBytes = max(be.peakBytes, be.liveBytes)
	return &buffer{owner: be, region: r, dtype: dtype, off: skip, count: count}, nil
}

// View returns count elements of b from element offset; it shares b's
// memory, is not counted by Memory and cannot be freed.
func (be *Backend) View(b coll.Buffer, offset, count int) (coll.Buffer, error) {
	buf, _, err := be.memory("View", b)
	if err != nil {
		return nil, err
	}
	if offset < 0 || count < 0 || offset > buf.count-count {
		return nil, fmt.Errorf("mpibackend: View of %d elements at offset %d of a buffer of %d", count, offset, buf.count)
	}
	return &buffer{owner: be, region: buf.region, dtype: buf.dtype, off: buf.off + offset, count: count, view: true}, nil
}

// Free unmaps a buffer that Alloc returned.
func (be *Backend) Free(b coll.Buffer) error {
	buf, _, err := be.memory("Free", b)
	if err != nil {
		return err
	}
	if buf.view {
		return errors.New("mpibackend: Free of a view: free the buffer it views")
	}
	return be.release(buf.region)
}

// release unmaps r and stops counting it. A mapping that munmap refuses
// stays counted, and Close tries it again.
func (be *Backend) release(r *region) error {
	n := len(r.mem)
	if err := syscall.Munmap(r.mem); err != nil {
		return fmt.Errorf("mpibackend: munmap of %d bytes: %w", n, err)
	}
	r.mem = nil
	delete(be.live, r)
	be.liveBytes -= int64(n)
	return nil
}

func (be *Backend) Memory() (coll.MemoryStats, error) {
	return coll.MemoryStats{LiveBytes: be.liveBytes, PeakBytes: be.peakBytes, DeviceUsedBytes: -1}, nil
}

func (be *Backend) ResetPeak() { be.peakBytes = be.liveBytes }

// Fill writes elem once, then doubles the filled part with copy until the
// buffer is full: log2(n) memmoves instead of n small copies.
func (be *Backend) Fill(b coll.Buffer, elem []byte) error {
	buf, mem, err := be.memory("Fill", b)
	if err != nil {
		return err
	}
	if err := hostmem.Fill(mem, elem, buf.dtype.Size()); err != nil {
		return fmt.Errorf("mpibackend: %w (%s)", err, buf.dtype)
	}
	return nil
}

func (be *Backend) Write(b coll.Buffer, src []byte) error {
	_, mem, err := be.memory("Write", b)
	if err != nil {
		return err
	}
	if err := hostmem.Write(mem, src); err != nil {
		return fmt.Errorf("mpibackend: %w", err)
	}
	return nil
}

func (be *Backend) Read(b coll.Buffer, dst []byte) error {
	_, mem, err := be.memory("Read", b)
	if err != nil {
		return err
	}
	if err := hostmem.Read(mem, dst); err != nil {
		return fmt.Errorf("mpibackend: %w", err)
	}
	return nil
}

// memory returns b as this backend's buffer and its bytes, or an error when
// b is not this backend's or its memory has been freed: a use after Free is
// an error here, never a fault.
func (be *Backend) memory(op string, b coll.Buffer) (*buffer, []byte, error) {
	buf, ok := b.(*buffer)
	if !ok || buf == nil {
		return nil, nil, fmt.Errorf("mpibackend: %s: %T is not a buffer of the MPI backend", op, b)
	}
	if buf.owner.pool != be.pool {
		return nil, nil, fmt.Errorf("mpibackend: %s: the buffer belongs to another backend", op)
	}
	if buf.region.mem == nil {
		return nil, nil, fmt.Errorf("mpibackend: %s: the buffer was freed", op)
	}
	es := buf.dtype.Size()
	start, end := buf.off*es, (buf.off+buf.count)*es
	return buf, buf.region.mem[start:end:end], nil
}
