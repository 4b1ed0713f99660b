package mpi

import (
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// Barrier waits until every rank has reached it.
func (c *Comm) Barrier() error {
	if err := c.live("Barrier"); err != nil {
		return err
	}
	return c.barrier()
}

// Bcast copies root's buf into buf on every rank, as bytes (MPI_BYTE).
// len(buf) must be the same on every rank; it may be 0.
func (c *Comm) Bcast(buf []byte, root int) error {
	if err := c.collective("Bcast", root); err != nil {
		return err
	}
	if err := cInt("Bcast", "length", len(buf)); err != nil {
		return err
	}
	return c.bcast(ptr(buf), len(buf), Byte, root)
}

// BcastUint64s copies root's words into words on every rank through
// gompi's typed broadcast (MPI_UNSIGNED_LONG, 8 bytes a word on the 64-bit
// ABIs rsag builds for): it moves exactly the bytes asked, unlike gompi's
// BcastBytes. gompi drops MPI's return code, so a failure is not seen here:
// callers put a status word in the message that a failed broadcast would
// not carry (the NCCL unique id does).
func (c *Comm) BcastUint64s(words []uint64, root int) error {
	if err := c.collective("BcastUint64s", root); err != nil {
		return err
	}
	if err := cInt("BcastUint64s", "length", len(words)); err != nil {
		return err
	}
	if c.sub {
		return errors.New("mpi: BcastUint64s on a split communicator: gompi's is the world's")
	}
	if len(words) == 0 {
		return nil // gompi indexes words[0]
	}
	c.gompiWorld().BcastUint64s(words, root)
	return nil
}

// BcastBlob returns root's data on every rank: root broadcasts the length,
// then the bytes. Root gets data itself back; the other ranks pass nil and
// get a new slice (empty, not nil, when root's data is empty).
func (c *Comm) BcastBlob(data []byte, root int) ([]byte, error) {
	if err := c.collective("BcastBlob", root); err != nil {
		return nil, err
	}
	// The length travels as an int64 so that every rank, not root alone,
	// sees a length MPI cannot count and fails with it instead of waiting.
	n := int64(len(data))
	if err := c.bcast(unsafe.Pointer(&n), 1, Int64, root); err != nil {
		return nil, err
	}
	if n > math.MaxInt32 {
		return nil, fmt.Errorf("mpi: BcastBlob: %d bytes from rank %d do not fit an MPI count", n, root)
	}
	if c.rank != root {
		data = make([]byte, n)
	}
	if n == 0 {
		return data, nil
	}
	if err := c.bcast(ptr(data), int(n), Byte, root); err != nil {
		return nil, err
	}
	return data, nil
}

// Gather returns, on root, every rank's data in rank order; the lengths may
// differ between ranks and may be 0. The other ranks get nil.
func (c *Comm) Gather(data []byte, root int) ([][]byte, error) {
	if err := c.collective("Gather", root); err != nil {
		return nil, err
	}
	// Every rank learns every length (MPI_Allgather rather than MPI_Gather):
	// a total beyond MPI's int counts then fails on all ranks together,
	// where a failure on root alone would leave the others in MPI_Gatherv.
	counts, displs, total, err := c.layout("Gather", len(data))
	if err != nil {
		return nil, err
	}
	var recv []byte
	if c.rank == root {
		recv = make([]byte, total)
	} else {
		counts, displs = nil, nil
	}
	if err := c.gatherv(data, recv, counts, displs, root); err != nil {
		return nil, err
	}
	if c.rank != root {
		return nil, nil
	}
	return split(recv, counts, displs), nil
}

// AllGather returns every rank's data, in rank order, on every rank; the
// lengths may differ between ranks and may be 0.
func (c *Comm) AllGather(data []byte) ([][]byte, error) {
	if err := c.live("AllGather"); err != nil {
		return nil, err
	}
	counts, displs, total, err := c.layout("AllGather", len(data))
	if err != nil {
		return nil, err
	}
	recv := make([]byte, total)
	if err := c.allgatherv(data, recv, counts, displs); err != nil {
		return nil, err
	}
	return split(recv, counts, displs), nil
}

// layout exchanges every rank's length n and returns the counts and
// displacements of the concatenation in rank order, and its total length.
func (c *Comm) layout(op string, n int) (counts, displs []int32, total int, err error) {
	lengths := make([]int64, c.size)
	mine := int64(n)
	if err := c.allgather(unsafe.Pointer(&mine), 1, unsafe.Pointer(&lengths[0]), Int64, false, 1); err != nil {
		return nil, nil, 0, err
	}
	counts, displs = make([]int32, c.size), make([]int32, c.size)
	for r, l := range lengths {
		if l > math.MaxInt32-int64(total) {
			return nil, nil, 0, fmt.Errorf("mpi: %s: %d bytes up to rank %d do not fit an MPI count",
				op, int64(total)+l, r)
		}
		counts[r], displs[r] = int32(l), int32(total)
		total += int(l)
	}
	return counts, displs, total, nil
}

// split cuts the concatenation into one slice per rank; each slice's
// capacity ends where the next begins, so appending to one cannot overwrite
// another.
func split(buf []byte, counts, displs []int32) [][]byte {
	out := make([][]byte, len(counts))
	for r := range counts {
		start, end := int(displs[r]), int(displs[r])+int(counts[r])
		out[r] = buf[start:end:end]
	}
	return out
}

// AllTrue returns whether ok is true on every rank, and the ranks where it
// is false, in increasing order (nil when there are none).
func (c *Comm) AllTrue(ok bool) (bool, []int, error) {
	if err := c.live("AllTrue"); err != nil {
		return false, nil, err
	}
	mine := []byte{0}
	if ok {
		mine[0] = 1
	}
	all := make([]byte, c.size)
	if err := c.allgather(ptr(mine), 1, ptr(all), Byte, false, 1); err != nil {
		return false, nil, err
	}
	var bad []int
	for r, v := range all {
		if v == 0 {
			bad = append(bad, r)
		}
	}
	return len(bad) == 0, bad, nil
}

// MaxFloat64s replaces each v[i] with the largest v[i] over all ranks, in
// one MPI_Allreduce (in place; more where v outgrows a C int count).
// Every rank passes as many values; none is no call.
func (c *Comm) MaxFloat64s(v []float64) error {
	if err := c.live("MaxFloat64s"); err != nil {
		return err
	}
	for len(v) > 0 {
		n := min(len(v), math.MaxInt32)
		if err := c.allreduce(nil, unsafe.Pointer(&v[0]), n, Float64, Max, true, 1); err != nil {
			return err
		}
		v = v[n:]
	}
	return nil
}

// collective checks what every rooted call needs.
func (c *Comm) collective(op string, root int) error {
	if err := c.live(op); err != nil {
		return err
	}
	if root < 0 || root >= c.size {
		return fmt.Errorf("mpi: %s: root %d is not a rank of a world of %d", op, root, c.size)
	}
	return nil
}
