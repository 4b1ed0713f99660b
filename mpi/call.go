package mpi

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"
)

// Call is one collective on this communicator with its arguments checked
// once (AllreduceCall, ReduceScatterBlockCall, ReduceScatterBlockMovedCall,
// AllgatherCall): Times runs it n times back to back, and Samples takes
// timed samples of it, both looping in C, as IMB and nccl-tests time.
type Call struct {
	c          *Comm
	mpiName    string // MPI's name, for errors
	kind       kind
	send, recv unsafe.Pointer
	count      int
	dt         Datatype
	op         Op
	inPlace    bool
	// The moved ReduceScatter's block: where it goes (offset) and its size.
	offset, bytes int
}

// kind is which collective a Call makes (rsag_times' cases).
type kind int

const (
	allreduceKind kind = iota
	reduceScatterKind
	reduceScatterMovedKind
	allgatherKind
)

// AllreduceCall is Allreduce, prepared.
func (c *Comm) AllreduceCall(send, recv []byte, count int, dt Datatype, op Op) (*Call, error) {
	const name = "Allreduce"
	if err := c.hostArgs(name, dt, count, count); err != nil {
		return nil, err
	}
	if err := checkOp(name, op); err != nil {
		return nil, err
	}
	es := dt.Size()
	if err := buffers(name, send, count*es, recv, count*es); err != nil {
		return nil, err
	}
	return &Call{c: c, mpiName: "MPI_Allreduce", kind: allreduceKind, send: ptr(send), recv: ptr(recv), count: count,
		dt: dt, op: op, inPlace: send == nil}, nil
}

// ReduceScatterBlockCall is ReduceScatterBlock, prepared.
func (c *Comm) ReduceScatterBlockCall(send, recv []byte, recvCount int, dt Datatype, op Op) (*Call, error) {
	const name = "ReduceScatterBlock"
	total, err := c.reduceScatterArgs(name, recvCount, dt, op)
	if err != nil {
		return nil, err
	}
	es := dt.Size()
	recvBytes := recvCount * es
	if send == nil {
		recvBytes = total * es
	}
	if err := buffers(name, send, total*es, recv, recvBytes); err != nil {
		return nil, err
	}
	return &Call{c: c, mpiName: "MPI_Reduce_scatter_block", kind: reduceScatterKind, send: ptr(send), recv: ptr(recv),
		count: recvCount, dt: dt, op: op, inPlace: send == nil}, nil
}

// ReduceScatterBlockMovedCall is ReduceScatterBlock in place on buf, each
// call followed by moving this rank's block from the start of buf, where
// MPI_IN_PLACE leaves it, to offset bytes in: NCCL's in-place layout, where
// the block stays at rank x block. The rest of buf is left as MPI left it.
func (c *Comm) ReduceScatterBlockMovedCall(buf []byte, offset, recvCount int, dt Datatype, op Op) (*Call, error) {
	const name = "ReduceScatterBlock"
	total, err := c.reduceScatterArgs(name, recvCount, dt, op)
	if err != nil {
		return nil, err
	}
	es := dt.Size()
	if err := buffers(name, nil, 0, buf, total*es); err != nil {
		return nil, err
	}
	if offset < 0 || offset%es != 0 || offset+recvCount*es > total*es {
		return nil, fmt.Errorf("mpi: %s: the block's place %d is not an element of the %d-byte buffer with room for its %d bytes",
			name, offset, total*es, recvCount*es)
	}
	return &Call{c: c, mpiName: "MPI_Reduce_scatter_block", kind: reduceScatterMovedKind, recv: ptr(buf), count: recvCount,
		dt: dt, op: op, inPlace: true, offset: offset, bytes: recvCount * es}, nil
}

// AllgatherCall is Allgather, prepared.
func (c *Comm) AllgatherCall(send, recv []byte, sendCount int, dt Datatype) (*Call, error) {
	const name = "Allgather"
	total := sendCount * c.size
	if err := c.hostArgs(name, dt, sendCount, total); err != nil {
		return nil, err
	}
	es := dt.Size()
	if err := buffers(name, send, sendCount*es, recv, total*es); err != nil {
		return nil, err
	}
	// MPI ignores the send count and type with MPI_IN_PLACE.
	return &Call{c: c, mpiName: "MPI_Allgather", kind: allgatherKind, send: ptr(send), recv: ptr(recv), count: sendCount,
		dt: dt, inPlace: send == nil}, nil
}

// Times runs the call n times back to back, stopping at the first that
// fails.
func (k *Call) Times(n int) error {
	if err := k.runnable("repetitions", n); err != nil {
		return err
	}
	return k.times(n)
}

func (k *Call) runnable(what string, n int) error {
	if err := k.c.live(k.mpiName); err != nil {
		return err
	}
	return cInt(k.mpiName, what, n)
}

// SampleCheck is what Samples compares after each sample: Out (the
// call's output, as it leaves it) must hold Want at each span, a triple of
// a byte offset in Out, a length, and a byte offset in Want; a mismatch is
// named by element, of Elem bytes.
type SampleCheck struct {
	Out   []byte
	Spans []int64
	Want  []byte
	Elem  int
}

// SampleFault is the first element Samples found wrong: in sample Sample
// (-1: none was), element Element of the output, holding Got.
type SampleFault struct {
	Sample, Element int
	Got             []byte
}

// Progress says which sample Samples is taking, to any goroutine, while it
// runs: C stores it before each sample starts.
type Progress struct{ v [2]int64 }

// Sample is the sample running (or last run) and the wall clock's time
// when it began (zero before the first).
func (p *Progress) Sample() (int, time.Time) {
	at := atomic.LoadInt64(&p.v[1])
	s := atomic.LoadInt64(&p.v[0])
	if at == 0 {
		return int(s), time.Time{}
	}
	return int(s), time.Unix(0, at)
}

// maxElem is the largest element a SampleFault names (8 bytes: int64,
// float64).
const maxElem = 8

// Samples takes len(ns) samples of batch calls back to back, each timed
// alone on the monotonic clock (ns[s], nanoseconds for the batch), all in
// one C call: no Go runs between the samples. After each sample's clock
// stops, it compares the output with check when check has spans (ok[s]
// says whether it held; with none, ok is left alone) and returns the first
// wrong element. Before each sample starts, p says which it is. With
// barrier set, each call follows an untimed MPI_Barrier and ns[s] sums the
// calls' own times, as IMB times.
func (k *Call) Samples(batch int, barrier bool, ns []int64, ok []bool, check SampleCheck, p *Progress) (SampleFault, error) {
	if err := k.runnable("batch", batch); err != nil {
		return SampleFault{}, err
	}
	if err := cInt(k.mpiName, "samples", len(ns)); err != nil || len(ns) == 0 {
		return SampleFault{Sample: -1}, err
	}
	if len(ok) != len(ns) {
		return SampleFault{}, fmt.Errorf("mpi: %s: %d samples but room for %d checks", k.mpiName, len(ns), len(ok))
	}
	if err := check.valid(k.mpiName); err != nil {
		return SampleFault{}, err
	}
	held := make([]byte, len(ns))
	var first [2]int64
	got := make([]byte, maxElem)
	// One scheduler slot for the length of the call: with two (job.Main's
	// floor), Go's monitor thread leaves the call's slot alone for 10 ms
	// and wakes every 20 us to 10 ms all the while, on the core the rank
	// polls from when mpirun binds it to one; with one, it takes the slot
	// at its next wake-up, finds nothing to run, and sleeps until the next
	// timer (docs/performance-log.md). Goroutines that are runnable now (a
	// heartbeat's tick) run first, so that the monitor finds nothing to
	// hand the slot to in the call, on this core.
	slots := runtime.GOMAXPROCS(1)
	runtime.Gosched()
	err := k.samples(batch, barrier, ns, check, held, &first, got, p)
	runtime.GOMAXPROCS(slots)
	if len(check.Spans) > 0 {
		for s := range ok {
			ok[s] = held[s] == 1
		}
	}
	f := SampleFault{Sample: int(first[0]), Element: int(first[1])}
	if f.Sample >= 0 {
		f.Got = got[:check.Elem]
	}
	return f, err
}

// valid checks that every span lies within Out and Want, whole elements.
func (s SampleCheck) valid(name string) error {
	if len(s.Spans)%3 != 0 {
		return fmt.Errorf("mpi: %s: check spans come in triples, not %d numbers", name, len(s.Spans))
	}
	if len(s.Spans) > 0 && (s.Elem < 1 || s.Elem > maxElem) {
		return fmt.Errorf("mpi: %s: check element of %d bytes (1 to %d)", name, s.Elem, maxElem)
	}
	for i := 0; i < len(s.Spans); i += 3 {
		at, n, from := s.Spans[i], s.Spans[i+1], s.Spans[i+2]
		if at < 0 || n <= 0 || from < 0 || at+n > int64(len(s.Out)) || from+n > int64(len(s.Want)) ||
			at%int64(s.Elem) != 0 || n%int64(s.Elem) != 0 {
			return fmt.Errorf("mpi: %s: check span %d (%d bytes at %d, from %d) is not whole elements of the %d-byte output and %d-byte pattern",
				name, i/3, n, at, from, len(s.Out), len(s.Want))
		}
	}
	return nil
}
