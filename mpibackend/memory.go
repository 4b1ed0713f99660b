package mpibackend

import (
	"fmt"
	"syscall"

	"rsag/internal/hostmem"
)

// newHeap is a rank's buffers: anonymous mappings, unmapped by Free.
// MAP_POPULATE commits the pages at once, as a device allocation would, so
// that first-touch page faults land in Alloc and not in the first
// collective that writes the buffer. The heap, shared with the in-memory
// test backend, keeps the accounting and refuses a use after Free.
func newHeap() *hostmem.Heap {
	return hostmem.New(hostmem.Options{Name: "mpibackend", Backend: "the MPI backend", Map: mmap, Unmap: munmap})
}

func mmap(n int) ([]byte, error) {
	mem, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|syscall.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	return mem, nil
}

func munmap(mem []byte) error {
	if err := syscall.Munmap(mem); err != nil {
		return fmt.Errorf("munmap of %d bytes: %w", len(mem), err)
	}
	return nil
}
