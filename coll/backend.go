package coll

import "time"

// Buffer is memory a Backend allocated (device memory for NCCL, host memory
// for MPI), or a view into such memory.
type Buffer interface {
	// Count is the number of elements.
	Count() int
	DType() DType
}

// Bytes is the size of b in bytes.
func Bytes(b Buffer) int64 { return int64(b.Count()) * int64(b.DType().Size()) }

// MemoryStats is a backend's own accounting of the buffers it allocated,
// the equivalent of torch.cuda.memory_allocated and max_memory_allocated.
type MemoryStats struct {
	LiveBytes int64 // allocated through Alloc and not yet freed
	PeakBytes int64 // the most LiveBytes reached since the last ResetPeak
	// DeviceUsedBytes is the device's own count of used memory (total - free
	// from cuMemGetInfo), which includes the library's internal buffers; -1
	// when the backend has no such count.
	DeviceUsedBytes int64
}

// Library names a shared library a backend loaded.
type Library struct {
	Name    string // "nccl", "cuda", "mpi"
	Path    string // the file that was loaded, "" when linked at build time
	Version string
}

// Info describes a backend on one rank, for the report header.
type Info struct {
	Backend   string // "nccl" or "mpi"
	Host      string
	Device    string // GPU name, or "host memory"
	BusID     string // PCI bus id of the GPU, "" for host memory
	Driver    string // CUDA driver version, "" when none
	Libraries []Library
	LocalRank int // rank among the ranks on its host (the GPU index on GPU nodes); set by the caller from MPI
	// CPUs are the processors the rank may run on (its affinity), set by
	// the caller; none when unknown.
	CPUs []int `json:",omitempty"`
}

// Backend moves data between ranks. Each process owns one Backend, which
// stands for one rank; every method is called from the main goroutine.
type Backend interface {
	Info() Info
	Rank() int
	WorldSize() int

	// Alloc returns a buffer of s.Count elements of s.DType whose contents
	// are undefined.
	Alloc(s BufferSpec) (Buffer, error)
	// View returns count elements of b starting at element offset. The view
	// shares b's memory, is not counted by Memory and must not be freed.
	View(b Buffer, offset, count int) (Buffer, error)
	// Free releases a buffer returned by Alloc.
	Free(b Buffer) error
	Memory() (MemoryStats, error)
	// ResetPeak makes PeakBytes equal to LiveBytes.
	ResetPeak()

	// Fill sets every element of b to the element whose bytes are elem
	// (len(elem) == b.DType().Size()).
	Fill(b Buffer, elem []byte) error
	// Write copies src (len(src) == Bytes(b)) into b.
	Write(b Buffer, src []byte) error
	// Read copies b into dst (len(dst) == Bytes(b)).
	Read(b Buffer, dst []byte) error

	// Run runs collective c (one of Collectives) from send into recv, with
	// op for the collectives that reduce (AllGather ignores it). It checks
	// the buffers with CheckShapes before calling the library, and refuses
	// a collective it does not know by name. A send buffer that is a view
	// of recv at the place the collective reads or writes
	// (c.InPlaceOffset: 0 for AllReduce, rank*recv.Count() for
	// ReduceScatter, rank*send.Count() for AllGather) is an in-place
	// operation.
	Run(c Collective, send, recv Buffer, op Op) error

	// Supports says whether the backend can run collectives on d with o,
	// and if not, why, in words a user can act on.
	Supports(d DType, o Op) error

	// Synchronize waits until the work queued on this rank has finished.
	Synchronize() error
	// Time synchronises, then runs op once between two timestamps (device
	// events on a GPU) and returns the elapsed time in microseconds.
	Time(op func() error) (float64, error)

	Close() error
}

// GraphTimer is a backend that can capture operations into a replayable
// graph (CUDA graphs on NCCL), which removes the launch overhead from what
// is timed.
type GraphTimer interface {
	// CaptureGraph records n back-to-back runs of op into a graph. The
	// buffers op uses must stay allocated until the graph is closed.
	CaptureGraph(n int, op func() error) (Graph, error)
}

// Graph is a captured sequence of operations.
type Graph interface {
	// Time synchronises, replays the graph once between two timestamps and
	// returns the elapsed time in microseconds.
	Time() (float64, error)
	Close() error
}

// Comm is the host-side communication the phases need between ranks,
// independent of the backend that moves the payload.
type Comm interface {
	Rank() int
	Size() int
	Barrier() error
	// AllTrue returns whether ok is true on every rank, and the ranks where
	// it is false.
	AllTrue(ok bool) (bool, []int, error)
	// MaxFloat64s replaces each v[i] with the largest v[i] over all ranks:
	// one collective for any number of values, so that agreeing a case's
	// slowest samples costs one latency at a thousand ranks, not one a
	// sample. Every rank passes as many values.
	MaxFloat64s(v []float64) error
}

// MaxFloat64 returns the largest v over all ranks of comm.
func MaxFloat64(comm Comm, v float64) (float64, error) {
	one := []float64{v}
	err := comm.MaxFloat64s(one)
	return one[0], err
}

// Gatherer is a Comm that can also give every rank what each rank said
// (MPI_Allgatherv of bytes), in rank order: a check that failed on some
// ranks names what each found, and the soak phase diagnoses a wrong
// result from every rank's findings.
type Gatherer interface {
	AllGather(data []byte) ([][]byte, error)
}

// Variants is a backend with fast paths beyond plain buffers on a default
// communicator (NCCL's registered buffers, symmetric windows and CTA
// policies). A backend that does not implement it runs Baseline only.
type Variants interface {
	// SupportsVariant says whether v can run here, and if not, why, in
	// words a user can act on (the missing symbol, the NCCL version).
	SupportsVariant(v Variant) error
	// WithVariant returns a Backend that shares this one's device, stream,
	// timing and memory accounting, whose Alloc returns buffers of
	// v.Buffers (registered, or in symmetric windows, with v's
	// communicator) and whose collectives run on a communicator with
	// v.CTAPolicy, created the first time a policy is asked for. It is
	// collective: every rank asks for the same variants in the same order,
	// and allocates and frees the variant's buffers in the same order
	// (window registration is collective). WithVariant(Baseline) may return
	// the backend itself. Closing the variant releases nothing the parent
	// owns; the parent's Close releases every communicator.
	WithVariant(v Variant) (Backend, error)
	// AllocBytes is the device memory an allocation of n bytes of kind k
	// takes (ncclMemAlloc rounds up to the VMM granularity), for the
	// footprint check before any collective.
	AllocBytes(k BufferKind, n int64) int64
}

// Splitter is a backend whose ranks can be split into groups, each with
// its own communicator (MPI_Comm_split, ncclCommSplit): the hierarchical
// decomposition runs ReduceScatter and AllGather within a group and
// AllReduce across groups; the locate phase runs the pairs of a round, each
// on its own group, while the ranks of no pair sit out.
type Splitter interface {
	// Split is collective over every rank of this backend: ranks that pass
	// the same color form one group, ordered by key (ties by rank). A rank
	// that passes NoColor takes part in the split and gets no group: a nil
	// Backend and no error (MPI_UNDEFINED, NCCL_SPLIT_NOCOLOR); any other
	// negative color is refused. The returned Backend's Rank and WorldSize
	// are within the group; it shares this backend's device, stream, timing
	// and memory accounting, and buffers either allocates may be used by
	// the collectives of both. Its Close releases the group's communicator
	// only.
	Split(color, key int) (Backend, error)
}

// NoColor is the color of a rank that takes part in a Split but joins no
// group.
const NoColor = -1

// Preparer is a backend that checks a collective's arguments once and
// returns a call that only runs it, so that the timed loop pays for the
// library call and nothing else (shape checks, buffer lookups, type
// mapping). The call is valid while its buffers are. A backend without it
// gets each call through Collective.Run.
type Preparer interface {
	Prepare(c Collective, send, recv Buffer, op Op) (func() error, error)
}

// LoopPreparer is a backend that can also run a prepared collective n
// times back to back in the library's own language (a C loop): what IMB and
// nccl-tests time, with nothing of Go's between the calls. The batched
// method uses it for the modes of one collective.
type LoopPreparer interface {
	PrepareLoop(c Collective, send, recv Buffer, op Op) (func(n int) error, error)
}

// SampleTimer is a backend that can also take a run of timed samples of
// a prepared collective in one call, its loop, clock and checks in the
// library's own language (a C loop): with no Go between the samples, Go's
// scheduler has nothing to take from the rank while it runs (see
// phases/pace.go). The batched method uses it for a case that times one
// mode of one collective out of place, what IMB and nccl-tests time.
type SampleTimer interface {
	PrepareSamples(c Collective, send, recv Buffer, op Op) (Sampler, error)
}

// Sampler takes timed samples of one prepared collective.
type Sampler interface {
	// Samples takes len(us) samples of batch operations back to back, each
	// timed alone: us[i] is sample i's microseconds for the batch. With
	// barrier set, each operation follows an untimed barrier of all ranks
	// and us[i] sums the operations' own times (IMB's way). After
	// each sample's clock stops it compares the output with check, when
	// check has spans: held[i] says whether sample i's output held, and
	// the first wrong element is returned (Sample -1: none was).
	Samples(batch int, barrier bool, us []float64, held []bool, check OutputCheck) (SampleFault, error)
	// Progress is the sample being taken (or last taken) and when it
	// began; any goroutine may ask while Samples runs.
	Progress() (sample int, began time.Time)
}

// OutputCheck is what a collective's output must hold: at each span, the
// bytes of Want from the span's WantAt.
type OutputCheck struct {
	Spans []OutputSpan
	Want  []byte
}

// OutputSpan is a part of an output, in bytes from its start, and where
// in OutputCheck.Want its expected bytes begin.
type OutputSpan struct{ Offset, Len, WantAt int }

// SampleFault is the first wrong element a Sampler found: in sample
// Sample (-1: none), element Element of the output, holding Got.
type SampleFault struct {
	Sample, Element int
	Got             []byte
}

// Aborter is a backend that can tear its communication down at once,
// without waiting for peers (ncclCommAbort), for a job that is ending:
// afterwards its collectives fail instead of waiting, and Close releases
// the rest.
type Aborter interface{ Abort() }

// AbortRequester is a backend whose abort can be asked for from any
// goroutine (the watchdog's, a signal's) while its own is blocked in a
// wait; the channel is closed once it has aborted.
type AbortRequester interface{ RequestAbort() <-chan struct{} }

// AsyncReporter is a backend whose library reports errors of its own,
// apart from any call it returns from (NCCL's ncclCommGetAsyncError: a
// failed peer, a network error), which a hang's line quotes. AsyncStatus
// is safe from any goroutine and calls no library: it says what the
// library said when the backend's own goroutine last asked it (in a wait
// for the device), and when; the zero AsyncStatus when it has not asked.
type AsyncReporter interface{ AsyncStatus() AsyncStatus }

// AsyncStatus is what a library last said of its asynchronous errors.
type AsyncStatus struct {
	Call string    // what was asked: "ncclCommGetAsyncError"
	Said string    // "ncclSuccess (no error yet)", or the error's name, code and text
	At   time.Time // when it was asked
}

// Wrapper is a backend around another (a watch), through which Find looks
// for the inner one's abilities.
type Wrapper interface{ Unwrap() Backend }

// Find looks for an optional ability T on be, through any Wrappers.
func Find[T any](be Backend) (T, bool) {
	for {
		if t, ok := be.(T); ok {
			return t, true
		}
		u, ok := be.(Wrapper)
		if !ok {
			var zero T
			return zero, false
		}
		be = u.Unwrap()
	}
}

// FreeMemoryReporter is a backend that can say how much memory its buffers
// may take (cuMemGetInfo on a GPU, MemAvailable on a host), so that a
// payload too large is refused before any collective runs rather than
// failing half way (or, in host memory, ended by the OOM killer).
type FreeMemoryReporter interface {
	// FreeMemory is the bytes this rank's buffers may take now, of a
	// total, and which memory that is, from one reading.
	FreeMemory() (MemoryReading, error)
}

// MemoryReading is what a FreeMemoryReporter measured.
type MemoryReading struct {
	Free, Total int64
	MemoryKind
}

// MemoryKind names the memory a FreeMemoryReporter measures.
type MemoryKind struct {
	Memory string // "device memory", "host memory"
	Where  string // "NVIDIA H200 (GPU 0 of node7)", "node7 (MemAvailable, shared by its 4 ranks)"
	Fix    string // how to have more: "free the GPU of other processes"
}

// GiB is b in binary gigabytes, for messages.
func GiB(b int64) float64 { return float64(b) / (1 << 30) }
