// Package hostmem is what the two host-memory backends (mpibackend, and
// internal/testkit/inmem for the tests) do alike: keep a rank's buffers and
// their exact accounting (Heap), fill a buffer with one element, and time
// back-to-back calls on the monotonic clock.
package hostmem

import (
	"fmt"
	"time"
)

// Fill sets every element of mem, of size bytes each, to elem: it writes
// elem once, then doubles the filled part with copy until mem is full,
// log2(n) memmoves instead of n small copies.
func Fill(mem, elem []byte, size int) error {
	if len(elem) != size {
		return fmt.Errorf("Fill: element of %d bytes for a buffer of %d-byte elements", len(elem), size)
	}
	if len(mem) == 0 {
		return nil
	}
	copy(mem, elem)
	for n := len(elem); n < len(mem); n *= 2 {
		copy(mem[n:], mem[:n])
	}
	return nil
}

// TimeBatch returns the wall-clock time of n back-to-back calls of op in
// microseconds, read from the monotonic clock once before the first and once
// after the last (the nccl-tests method: the caller divides by n). It stops
// at the first call that fails and returns that error.
func TimeBatch(n int, op func() error) (float64, error) {
	if n < 1 {
		return 0, fmt.Errorf("TimeBatch of %d runs: at least one", n)
	}
	start := time.Now()
	for range n {
		if err := op(); err != nil {
			return 0, err
		}
	}
	return float64(time.Since(start).Nanoseconds()) / 1e3, nil
}

// Write copies src, which must be exactly as long, into mem.
func Write(mem, src []byte) error {
	if len(src) != len(mem) {
		return fmt.Errorf("Write of %d bytes into a buffer of %d", len(src), len(mem))
	}
	copy(mem, src)
	return nil
}

// Read copies mem into dst, which must be exactly as long.
func Read(mem, dst []byte) error {
	if len(dst) != len(mem) {
		return fmt.Errorf("Read of a buffer of %d bytes into %d", len(mem), len(dst))
	}
	copy(dst, mem)
	return nil
}
