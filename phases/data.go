package phases

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"rsag/coll"
)

// checkChunk bounds the host memory a full check needs, as the seed's
// full_constant_check did with its 1<<20-element chunks: checking 256 MiB
// reads 4 MiB at a time.
const checkChunk = 1 << 20

func int64sToBytes(v []int64) []byte {
	out := make([]byte, 0, len(v)*8)
	for _, x := range v {
		out = binary.LittleEndian.AppendUint64(out, uint64(x))
	}
	return out
}

func bytesToInt64s(b []byte) []int64 {
	out := make([]int64, len(b)/8)
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return out
}

// writeInt64s allocates an int64 buffer holding v.
func writeInt64s(be coll.Backend, v []int64) (coll.Buffer, error) {
	b, err := be.Alloc(coll.Elems(coll.Int64, len(v)))
	if err != nil {
		return nil, err
	}
	if err := be.Write(b, int64sToBytes(v)); err != nil {
		be.Free(b)
		return nil, err
	}
	return b, nil
}

func readInt64s(be coll.Backend, b coll.Buffer) ([]int64, error) {
	dst := make([]byte, coll.Bytes(b))
	if err := be.Read(b, dst); err != nil {
		return nil, err
	}
	return bytesToInt64s(dst), nil
}

// Mismatch is the first element of a checked buffer that differs from the
// expected value.
type Mismatch struct {
	Index int
	Got   []byte
	Want  []byte
}

func (m *Mismatch) String() string {
	if len(m.Got) == 4 {
		return fmt.Sprintf("element %d is %v, want %v", m.Index,
			math.Float32frombits(binary.LittleEndian.Uint32(m.Got)), math.Float32frombits(binary.LittleEndian.Uint32(m.Want)))
	}
	return fmt.Sprintf("element %d is %x, want %x", m.Index, m.Got, m.Want)
}

// checkConst compares every element of b with elem, reading at most
// checkChunk elements at a time and comparing each chunk with one memcmp
// against a chunk of expected bytes (an element-wise loop in Go took longer
// than the collectives it checks at 256 MiB). It returns the first
// mismatch, or nil.
func checkConst(be coll.Backend, b coll.Buffer, elem []byte) (*Mismatch, error) {
	size := len(elem)
	n := b.Count()
	k := min(n, checkChunk)
	chunk := make([]byte, k*size)
	want := bytes.Repeat(elem, k)
	for off := 0; off < n; off += checkChunk {
		k := min(checkChunk, n-off)
		view, err := be.View(b, off, k)
		if err != nil {
			return nil, err
		}
		host := chunk[:k*size]
		if err := be.Read(view, host); err != nil {
			return nil, err
		}
		if bytes.Equal(host, want[:len(host)]) {
			continue
		}
		for i := 0; i < len(host); i += size {
			if !bytes.Equal(host[i:i+size], elem) {
				return &Mismatch{Index: off + i/size, Got: append([]byte(nil), host[i:i+size]...), Want: elem}, nil
			}
		}
	}
	return nil, nil
}

// arena frees every buffer it allocated when the phase step ends, on
// success and on error alike.
type arena struct {
	be   coll.Backend
	live []coll.Buffer
}

func (a *arena) alloc(s coll.BufferSpec) (coll.Buffer, error) {
	b, err := a.be.Alloc(s)
	if err == nil {
		a.live = append(a.live, b)
	}
	return b, err
}

func (a *arena) int64s(v []int64) (coll.Buffer, error) {
	b, err := writeInt64s(a.be, v)
	if err == nil {
		a.live = append(a.live, b)
	}
	return b, err
}

// free releases one buffer early (the memory phase's lifetimes depend on it).
func (a *arena) free(b coll.Buffer) error {
	for i, l := range a.live {
		if l == b {
			a.live = append(a.live[:i], a.live[i+1:]...)
			return a.be.Free(b)
		}
	}
	return fmt.Errorf("free of a buffer this step did not allocate")
}

// release frees what is left; the first error wins.
func (a *arena) release(err *error) {
	for _, b := range a.live {
		if ferr := a.be.Free(b); ferr != nil && *err == nil {
			*err = ferr
		}
	}
	a.live = nil
}
