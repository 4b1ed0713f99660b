package ncclx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"rsag/coll"
)

// deviceBuffer is device memory from Alloc, or a view into it. Buffers
// belong to the device, not to one Backend: any Backend of the rank (a
// variant, a group) may use any of them.
type deviceBuffer struct {
	owner *device
	ptr   devPtr // device address of element 0; 0 for an empty allocation
	count int
	dtype coll.DType
	root  *deviceBuffer // the allocation a view looks into; nil for an allocation
	freed bool          // allocations only
	// offset is an allocation's bytes before ptr (coll.BufferSpec's
	// OffsetBytes): what was allocated, and is registered and freed,
	// starts at ptr - offset.
	offset int64

	// Allocations only: their kind, and the registration (ncclCommRegister's
	// handle, or the window) with the communicator it belongs to; regComm
	// is nil once it is deregistered.
	kind    coll.BufferKind
	reg     unsafe.Pointer
	regComm *communicator
}

func (d *deviceBuffer) Count() int        { return d.count }
func (d *deviceBuffer) DType() coll.DType { return d.dtype }
func (d *deviceBuffer) bytes() int        { return d.count * d.dtype.Size() }

// buffer checks that buf is live device memory of this rank; what and
// role (e.g. "all-reduce", " input") name it in the error, and are joined
// only then because the collectives call this on the timed path.
func (b *Backend) buffer(buf coll.Buffer, what, role string) (*deviceBuffer, error) {
	d, ok := buf.(*deviceBuffer)
	if !ok || d == nil || d.owner != b.device {
		return nil, b.errorf("%s%s: the buffer was not allocated by this NCCL backend", what, role)
	}
	r := d
	if d.root != nil {
		r = d.root
	}
	if r.freed {
		return nil, b.errorf("%s%s: the buffer was already freed", what, role)
	}
	return d, nil
}

// FreeMemory is the device's free and total bytes (cuMemGetInfo), named
// by its GPU.
func (b *Backend) FreeMemory() (coll.MemoryReading, error) {
	free, total, err := b.deviceMemory()
	return coll.MemoryReading{Free: free, Total: total, MemoryKind: coll.MemoryKind{Memory: "device memory",
		Where: fmt.Sprintf("%s (GPU %d of %s)", b.info.Device, b.ordinal, b.host),
		Fix:   "free the GPU of other processes"}}, err
}

// deviceMemory returns the device's free and total bytes (cuMemGetInfo).
func (b *Backend) deviceMemory() (free, total int64, err error) {
	free, total, err = b.cu.memInfo()
	if err != nil {
		return 0, 0, b.errorf("%w", err)
	}
	return free, total, nil
}

// Alloc allocates count elements of this Backend's buffer kind: plain
// (cuMemAlloc), registered (cuMemAlloc, then ncclCommRegister with this
// Backend's communicator) or symmetric (ncclMemAlloc, then
// ncclCommWindowRegister with NCCL_WIN_COLL_SYMMETRIC, which is collective:
// every rank of the group allocates the same symmetric buffers in the same
// order). The window starts at the allocation, so a view of element k is at
// the same offset of its window on every rank. A request larger than the
// device's free memory (AllocBytes of it) is refused with a *MemoryError
// before CUDA sees it.
func (b *Backend) Alloc(s coll.BufferSpec) (coll.Buffer, error) {
	dtype, count := s.DType, s.Count
	if _, ok := ncclDType(dtype); !ok {
		return nil, b.errorf("alloc: unsupported element type %v", dtype)
	}
	if count < 0 {
		return nil, b.errorf("alloc: negative count %d", count)
	}
	if _, err := s.OffsetElems(); err != nil {
		return nil, b.errorf("alloc: %w", err)
	}
	d := &deviceBuffer{owner: b.device, count: count, dtype: dtype, kind: b.kind}
	n := int64(count) * int64(dtype.Size())
	if n > 0 {
		d.offset = s.OffsetBytes
		n += d.offset
	}
	if n > 0 {
		if b.c.comm == nil && b.kind != coll.PlainBuffers {
			return nil, b.errorf("alloc %s buffer: the communicator was aborted or closed", b.kind)
		}
		free, total, err := b.deviceMemory()
		if err != nil {
			return nil, err
		}
		merr := &MemoryError{Host: b.host, Device: b.ordinal, Requested: b.AllocBytes(b.kind, n), Free: free, Total: total}
		if merr.Requested > free {
			return nil, b.errorf("alloc %d x %v: %w", count, dtype, merr)
		}
		if err := b.allocate(d, n); err != nil {
			var ce *Error
			if errors.As(err, &ce) && ce.Lib == "cuda" && ce.Code == cudaErrorOOM {
				merr.Err = err
				return nil, b.errorf("alloc %d x %v: %w", count, dtype, merr)
			}
			return nil, b.errorf("alloc %d x %v %s: %w", count, dtype, b.kind, err)
		}
		d.ptr += devPtr(d.offset)
	}
	b.allocs[d] = struct{}{}
	b.live += n
	if b.live > b.peak {
		b.peak = b.live
	}
	return d, nil
}

// allocate gets d's n bytes of memory and registers them as d.kind needs;
// when registration fails, the memory is released again.
func (b *Backend) allocate(d *deviceBuffer, n int64) error {
	var err error
	switch d.kind {
	case coll.PlainBuffers:
		d.ptr, err = b.cu.alloc(n)
		return err
	case coll.RegisteredBuffers:
		if d.ptr, err = b.cu.alloc(n); err != nil {
			return err
		}
		if d.reg, err = b.nc.register(b.c.comm, d.ptr, n); err != nil {
			return errors.Join(err, b.cu.free(d.ptr))
		}
	case coll.SymmetricBuffers:
		if d.ptr, err = b.nc.memAllocate(n); err != nil {
			return err
		}
		if d.ptr%ncclWinRequiredAlignment != 0 {
			return errors.Join(fmt.Errorf("ncclMemAlloc returned %#x, which is not aligned to NCCL_WIN_REQUIRED_ALIGNMENT (%d)",
				uint64(d.ptr), ncclWinRequiredAlignment), b.nc.memRelease(d.ptr))
		}
		if d.reg, err = b.nc.registerWindow(b.c.comm, d.ptr, n); err != nil {
			return errors.Join(err, b.nc.memRelease(d.ptr))
		}
		// NCCL 2.28 returns success and no window when the communicator
		// cannot have symmetric memory; a run labelled symmetric would then
		// time plain buffers.
		if d.reg == nil {
			return errors.Join(errors.New("NCCL registered no symmetric window: it has symmetric memory only for a "+
				"communicator on one node whose GPUs all reach each other directly (NVLink P2P), with CUDA VMM "+
				"memory (NCCL_CUMEM_ENABLE not 0) and NCCL_WIN_ENABLE not 0; drop \"symmetric\" from [timing] buffers here"),
				b.nc.memRelease(d.ptr))
		}
	default:
		return fmt.Errorf("unknown buffer kind %q", d.kind)
	}
	d.regComm = b.c
	return nil
}

// unregister releases d's registration with its communicator, when it
// still has one; after an abort NCCL has released it already.
func (dv *device) unregister(d *deviceBuffer) error {
	c := d.regComm
	d.regComm = nil
	if c == nil || c.comm == nil || d.reg == nil {
		return nil
	}
	h := d.reg
	d.reg = nil
	if d.kind == coll.SymmetricBuffers {
		return dv.nc.deregisterWindow(c.comm, h)
	}
	return dv.nc.deregister(c.comm, h)
}

// release deregisters d and frees its memory, with the call that matches
// the one that allocated it.
func (dv *device) release(d *deviceBuffer) error {
	err := dv.unregister(d)
	if base := d.ptr - devPtr(d.offset); d.ptr != 0 {
		if d.kind == coll.SymmetricBuffers {
			err = errors.Join(err, dv.nc.memRelease(base))
		} else {
			err = errors.Join(err, dv.cu.free(base))
		}
	}
	if err == nil {
		d.freed = true
	}
	return err
}

// View returns count elements of buf from element offset, sharing its memory.
func (b *Backend) View(buf coll.Buffer, offset, count int) (coll.Buffer, error) {
	d, err := b.buffer(buf, "view", "")
	if err != nil {
		return nil, err
	}
	if offset < 0 || count < 0 || offset > d.count || count > d.count-offset {
		return nil, b.errorf("view [%d, %d) out of a buffer of %d elements", offset, offset+count, d.count)
	}
	root := d.root
	if root == nil {
		root = d
	}
	return &deviceBuffer{owner: b.device, ptr: d.ptr + devPtr(offset*d.dtype.Size()), count: count, dtype: d.dtype, root: root}, nil
}

// Free releases an allocation after the work queued on it has finished:
// it deregisters it first (registered and symmetric buffers), then frees it.
func (b *Backend) Free(buf coll.Buffer) error {
	d, err := b.buffer(buf, "free", "")
	if err != nil {
		return err
	}
	if d.root != nil {
		return b.errorf("free: the buffer is a view; free the buffer it views instead")
	}
	if d.ptr != 0 {
		// The stream may still use the memory; freeing must not race it.
		if err := b.cu.syncStream(b.stream); err != nil {
			return b.errorf("free: %w", err)
		}
	}
	if err := b.release(d); err != nil {
		return b.errorf("free: %w", err)
	}
	delete(b.allocs, d)
	b.live -= int64(d.bytes()) + d.offset
	return nil
}

// Memory is the exact bytes live and at peak through Alloc, of every kind
// and from every Backend of the rank (what was asked for: a symmetric
// buffer's VMM rounding is in AllocBytes, not here), and the device's used
// bytes (total - free, which includes NCCL's and CUDA's own memory and
// that rounding).
func (b *Backend) Memory() (coll.MemoryStats, error) {
	free, total, err := b.deviceMemory()
	if err != nil {
		return coll.MemoryStats{}, err
	}
	return coll.MemoryStats{LiveBytes: b.live, PeakBytes: b.peak, DeviceUsedBytes: total - free}, nil
}

func (b *Backend) ResetPeak() { b.peak = b.live }

// stagingSlice is the pinned staging buffer seen as bytes.
func (b *Backend) stagingSlice() []byte { return unsafe.Slice((*byte)(b.staging), stagingBytes) }

// Fill queues a fill of buf with elem on the stream. 1-, 2- and 4-byte
// elements are a device memset of their width; an 8-byte element whose
// halves are equal (0, -1) is a 32-bit memset of twice the count; any other
// 8-byte element is copied from a pinned buffer holding the pattern, which
// is then waited for.
// Element bytes are little-endian, as on every CUDA host and device.
func (b *Backend) Fill(buf coll.Buffer, elem []byte) error {
	d, err := b.buffer(buf, "fill", "")
	if err != nil {
		return err
	}
	size := d.dtype.Size()
	if len(elem) != size {
		return b.errorf("fill: element of %d bytes for %v (%d bytes)", len(elem), d.dtype, size)
	}
	if d.count == 0 {
		return nil
	}
	switch size {
	case 1:
		err = b.cu.memsetD8(d.ptr, elem[0], d.count, b.stream)
	case 2:
		err = b.cu.memsetD16(d.ptr, binary.LittleEndian.Uint16(elem), d.count, b.stream)
	case 4:
		err = b.cu.memsetD32(d.ptr, binary.LittleEndian.Uint32(elem), d.count, b.stream)
	case 8:
		lo, hi := binary.LittleEndian.Uint32(elem[:4]), binary.LittleEndian.Uint32(elem[4:])
		if lo == hi {
			err = b.cu.memsetD32(d.ptr, lo, 2*d.count, b.stream)
		} else {
			err = b.fillPattern(d, elem)
		}
	default:
		return b.errorf("fill: unsupported element size %d", size)
	}
	if err != nil {
		return b.errorf("fill: %w", err)
	}
	return nil
}

// fillPattern writes an element no memset can: one small chunk of it from
// pinned host memory, then doubling device-to-device copies. The host copy
// stays small on purpose: filling 16 MiB of int64 through the host took
// about 2 ms on one H200 and 0.1 ms on the other, and in per-op timing the
// fast rank's next collective waited for the slow one's fill (samples of
// 2 ms against 0.1 ms, docs/performance-log.md).
func (b *Backend) fillPattern(d *deviceBuffer, elem []byte) error {
	total := d.bytes()
	seed := min(total, patternSeedBytes) // both multiples of the element size
	st := b.stagingSlice()
	for i := 0; i < seed; i += len(elem) {
		copy(st[i:], elem)
	}
	if err := b.cu.htod(d.ptr, b.staging, seed, b.stream); err != nil {
		return err
	}
	for done := seed; done < total; done *= 2 {
		if err := b.cu.dtod(d.ptr+devPtr(done), d.ptr, min(done, total-done), b.stream); err != nil {
			return err
		}
	}
	// The staging buffer may be reused once the host copy has run.
	return b.cu.syncStream(b.stream)
}

// patternSeedBytes is the part of a patterned fill that comes from the host.
const patternSeedBytes = 64 << 10

// Write copies src into buf through the pinned staging buffer, after the
// work already queued on the stream, and returns when the copy is done.
func (b *Backend) Write(buf coll.Buffer, src []byte) error {
	d, err := b.buffer(buf, "write", "")
	if err != nil {
		return err
	}
	if len(src) != d.bytes() {
		return b.errorf("write: %d bytes into a buffer of %d bytes", len(src), d.bytes())
	}
	st := b.stagingSlice()
	for off := 0; off < len(src); off += stagingBytes {
		n := copy(st, src[off:])
		if err := b.cu.htod(d.ptr+devPtr(off), b.staging, n, b.stream); err != nil {
			return b.errorf("write: %w", err)
		}
		if err := b.cu.syncStream(b.stream); err != nil {
			return b.errorf("write: %w", err)
		}
	}
	return nil
}

// Read copies buf into dst through the pinned staging buffer, after the work
// already queued on the stream (so it sees the result of a collective).
func (b *Backend) Read(buf coll.Buffer, dst []byte) error {
	d, err := b.buffer(buf, "read", "")
	if err != nil {
		return err
	}
	if len(dst) != d.bytes() {
		return b.errorf("read: %d bytes from a buffer of %d bytes", len(dst), d.bytes())
	}
	st := b.stagingSlice()
	for off := 0; off < len(dst); off += stagingBytes {
		n := min(stagingBytes, len(dst)-off)
		if err := b.cu.dtoh(b.staging, d.ptr+devPtr(off), n, b.stream); err != nil {
			return b.errorf("read: %w", err)
		}
		if err := b.cu.syncStream(b.stream); err != nil {
			return b.errorf("read: %w", err)
		}
		copy(dst[off:off+n], st[:n])
	}
	return nil
}
