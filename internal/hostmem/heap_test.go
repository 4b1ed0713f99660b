package hostmem

import (
	"strings"
	"testing"

	"rsag/coll"
)

func wantErr(t *testing.T, what string, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: %v, want an error with %q", what, err, want)
	}
}

func wantMemory(t *testing.T, h *Heap, live, peak int64) {
	t.Helper()
	if m, err := h.Memory(); err != nil || m.LiveBytes != live || m.PeakBytes != peak || m.DeviceUsedBytes != -1 {
		t.Errorf("Memory = %+v, %v; want live %d, peak %d, no device", m, err, live, peak)
	}
}

// The heap both host-memory backends keep: Alloc counts a buffer's bytes
// with its offset, a view counts nothing and cannot be freed, Free gives
// the bytes back through Unmap, and any use after Free, of another heap's
// buffer or after Close is an error that names the backend.
func TestHeapAccounting(t *testing.T) {
	var mapped, unmapped int
	h := New(Options{Name: "test", Backend: "the test backend", Owner: "rank 1",
		Map:   func(n int) ([]byte, error) { mapped += n; return make([]byte, n), nil },
		Unmap: func(mem []byte) error { unmapped += len(mem); return nil }})
	a, err := h.Alloc(coll.BufferSpec{DType: coll.Float32, Count: 10, OffsetBytes: 8})
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.Alloc(coll.Elems(coll.Int64, 4))
	if err != nil {
		t.Fatal(err)
	}
	wantMemory(t, h, 48+32, 80)
	v, err := h.View(a, 2, 3)
	if err != nil || v.Count() != 3 || v.(*Buffer).Offset() != 4 || !v.(*Buffer).SameAllocation(a.(*Buffer)) {
		t.Fatalf("View: %v, %v", v, err)
	}
	wantMemory(t, h, 80, 80)
	wantErr(t, "Free of a view", h.Free(v), "test: Free of a view")
	if err := h.Fill(a, []byte{1, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 12)
	if err := h.Read(v, got); err != nil || got[0] != 1 || got[4] != 1 {
		t.Errorf("the view reads %v, %v; want its buffer's ones", got, err)
	}
	if err := h.Free(b); err != nil {
		t.Fatal(err)
	}
	wantMemory(t, h, 48, 80)
	wantErr(t, "Read after Free", h.Read(b, make([]byte, 32)), "test: Read: the buffer was freed")
	h.ResetPeak()
	wantMemory(t, h, 48, 48)

	other := New(Options{Name: "test", Owner: "rank 0"})
	theirs, err := other.Alloc(coll.Elems(coll.Int8, 1))
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, "another heap's buffer", h.Write(theirs, []byte{0}), "test: Write: the buffer belongs to rank 0, not to rank 1")
	wantErr(t, "not a heap's buffer", h.Free(nil), "is not a buffer of the test backend")

	// A share uses the same buffers and accounting and closes alone.
	s := h.Share()
	if err := s.Write(v, make([]byte, 12)); err != nil {
		t.Errorf("a share writes its heap's buffer: %v", err)
	}
	c, err := s.Alloc(coll.Elems(coll.Int8, 2))
	if err != nil {
		t.Fatal(err)
	}
	wantMemory(t, h, 50, 50)
	if err := s.Close(); err != nil {
		t.Errorf("a share's Close: %v", err)
	}
	wantErr(t, "a closed share", s.Free(c), "test: Free after Close")
	if err := h.Read(c, make([]byte, 2)); err != nil {
		t.Errorf("the heap after its share's Close: %v", err)
	}
	wantErr(t, "Close with buffers left", h.Close(), "test: Close on rank 1: 2 buffers (50 bytes) were still allocated; released them")
	if mapped != 82 || unmapped != 82 {
		t.Errorf("mapped %d bytes and unmapped %d; want all 82 of them back", mapped, unmapped)
	}
	wantMemory(t, h, 0, 50)
	_, err = h.Alloc(coll.Elems(coll.Int8, 1))
	wantErr(t, "Alloc after Close", err, "test: Alloc after Close")
	_, err = New(Options{Name: "x"}).Alloc(coll.Elems(coll.Int8, 0))
	wantErr(t, "Alloc of nothing", err, "x: Alloc: 0 elements: a buffer holds at least one")
}
