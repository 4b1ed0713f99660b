package ncclx

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"rsag/phases"
)

// Bootstrap is what the NCCL backend needs from MPI: who this rank is and a
// byte broadcast to hand NCCL's unique id from rank 0 to every rank. rsag's
// *mpi.Comm implements it.
type Bootstrap interface {
	Rank() int
	Size() int
	LocalRank() int // rank among the ranks on this node
	LocalSize() int // ranks on this node
	Host() string
	// Bcast broadcasts buf (MPI_BYTE, same length on all ranks) from root.
	Bcast(buf []byte, root int) error
}

// stagingBytes is the pinned host buffer Write, Read and 8-byte Fill go
// through: 8 MiB, one chunk for the checker's reads of 1<<20 int64 elements.
const stagingBytes = 8 << 20

// Backend is one rank's GPU and NCCL communicator. It implements
// phases.Backend. Its methods must be called from the goroutine that called
// New, which main keeps on one OS thread: the CUDA context is current on
// that thread only.
type Backend struct {
	cu *cudaAPI
	nc *ncclAPI

	rank, world int
	host        string
	ordinal     int // the GPU: this rank's local rank

	dev         cuDevice
	ctx         cuContext
	ctxRetained bool
	stream      cuStream
	start, end  cuEvent
	comm        ncclComm
	staging     unsafe.Pointer // stagingBytes of pinned host memory

	info        phases.Info
	ncclVersion int // ncclGetVersion's code
	live, peak  int64
	allocs      map[*deviceBuffer]struct{}
	graphs      map[*graph]struct{} // captured and not yet closed
	closed      bool

	// abortAsked is set from another goroutine (the watchdog, a signal);
	// the main goroutine's next device wait aborts the communicator and
	// closes abortDone.
	abortAsked atomic.Bool
	abortDone  chan struct{}
	abortOnce  sync.Once
}

var (
	_ phases.Backend    = (*Backend)(nil)
	_ phases.GraphTimer = (*Backend)(nil)
)

// Probe reports whether this node can run the NCCL backend with localSize
// ranks on it: the CUDA driver and NCCL load, cuInit works, and the node has
// at least localSize GPUs. The error says which check failed and what to do.
func Probe(localSize int) error {
	host, _ := os.Hostname()
	cu, err := loadCUDA()
	if err != nil {
		return fmt.Errorf("NCCL backend unavailable on %s: %w", host, err)
	}
	if _, err := loadNCCL(); err != nil {
		return fmt.Errorf("NCCL backend unavailable on %s: %w", host, err)
	}
	n, err := cu.deviceCount()
	if err != nil {
		return fmt.Errorf("NCCL backend unavailable on %s: %w", host, err)
	}
	if n < localSize {
		return tooFewGPUs(host, n, localSize)
	}
	return nil
}

// tooFewGPUs explains that a node runs more ranks than it has GPUs: every
// rank drives its own GPU (GPU = local rank), as NCCL needs one GPU per rank.
func tooFewGPUs(host string, gpus, localSize int) error {
	fix := fmt.Sprintf("start at most %d ranks per node (e.g. mpirun -np %d, or srun --ntasks-per-node=%d)",
		gpus, gpus, gpus)
	if gpus == 0 {
		fix = "run on a node with GPUs"
	}
	msg := fmt.Sprintf("NCCL backend: node %s has %d GPU(s) but %d ranks run on it: %s", host, gpus, localSize, fix)
	if v, ok := os.LookupEnv("CUDA_VISIBLE_DEVICES"); ok {
		msg += fmt.Sprintf("; CUDA_VISIBLE_DEVICES=%q limits what this rank sees: rsag uses GPU <local rank>, "+
			"so give every rank all of the node's GPUs (no per-task GPU binding such as srun --gpus-per-task)", v)
	}
	return errors.New(msg)
}

// New loads CUDA and NCCL, makes GPU <local rank> current on this thread
// (through its primary context, which NCCL also uses), creates the stream
// and the two timing events, and creates the NCCL communicator over all
// ranks: rank 0 makes the unique id and b broadcasts it. Every rank does the
// same steps in the same order.
func New(boot Bootstrap) (*Backend, error) {
	b := &Backend{
		rank: boot.Rank(), world: boot.Size(), host: boot.Host(), ordinal: boot.LocalRank(),
		allocs: map[*deviceBuffer]struct{}{}, graphs: map[*graph]struct{}{}, abortDone: make(chan struct{}),
	}
	if err := b.open(boot); err != nil {
		_ = b.Close()
		return nil, err
	}
	return b, nil
}

// WaitEnv selects how device waits wait: unset polls (default), "block"
// blocks in the driver.
const WaitEnv = "RSAG_WAIT"

func (b *Backend) open(boot Bootstrap) error {
	var err error
	if b.cu, err = loadCUDA(); err != nil {
		return b.errorf("%w", err)
	}
	if b.nc, err = loadNCCL(); err != nil {
		return b.errorf("%w", err)
	}
	// Every wait for the device polls, so that NCCL's asynchronous errors
	// and an abort asked for by the watchdog end it. RSAG_WAIT=block waits
	// in cuStreamSynchronize instead: no core spins, but a hung collective
	// then ends only when the watchdog exits the process.
	if os.Getenv(WaitEnv) != "block" {
		b.cu.poll = b.pollAbort
	}
	n, err := b.cu.deviceCount()
	if err != nil {
		return b.errorf("%w", err)
	}
	if b.ordinal >= n {
		return fmt.Errorf("rank %d is local rank %d: %w", b.rank, b.ordinal, tooFewGPUs(b.host, n, boot.LocalSize()))
	}
	if b.dev, err = b.cu.device(b.ordinal); err != nil {
		return b.errorf("%w", err)
	}
	if b.ctx, err = b.cu.retainPrimary(b.dev); err != nil {
		return b.errorf("%w", err)
	}
	b.ctxRetained = true
	if err := b.cu.setCurrent(b.ctx); err != nil {
		return b.errorf("%w", err)
	}
	if b.stream, err = b.cu.newStream(); err != nil {
		return b.errorf("%w", err)
	}
	if b.start, err = b.cu.newEvent(); err != nil {
		return b.errorf("%w", err)
	}
	if b.end, err = b.cu.newEvent(); err != nil {
		return b.errorf("%w", err)
	}
	if b.staging, err = b.cu.allocHost(stagingBytes); err != nil {
		return b.errorf("pinned staging buffer of %d bytes: %w", stagingBytes, err)
	}
	if err := b.describe(); err != nil {
		return err
	}
	return b.initComm(boot)
}

// initComm creates the communicator. Rank 0 broadcasts one status byte and
// the 128-byte unique id, so that when ncclGetUniqueId fails there the other
// ranks fail too instead of waiting in ncclCommInitRank.
func (b *Backend) initComm(boot Bootstrap) error {
	var msg [1 + uniqueIDBytes]byte
	var id [uniqueIDBytes]byte
	var idErr error
	if b.rank == 0 {
		idErr = b.nc.uniqueID(&id)
		if idErr == nil {
			msg[0] = 1
			copy(msg[1:], id[:])
		}
	}
	if err := boot.Bcast(msg[:], 0); err != nil {
		return b.errorf("broadcasting the NCCL unique id: %w", err)
	}
	if idErr != nil {
		return b.errorf("%w", idErr)
	}
	if msg[0] != 1 {
		return b.errorf("rank 0 could not create the NCCL unique id (see its error)")
	}
	copy(id[:], msg[1:])
	comm, err := b.nc.initRank(b.world, &id, b.rank)
	if err != nil {
		return b.errorf("creating the NCCL communicator of %d ranks: %w (set NCCL_DEBUG=INFO for NCCL's log)", b.world, err)
	}
	b.comm = comm
	return nil
}

// describe fills Info from the device and the loaded libraries.
func (b *Backend) describe() error {
	name, err := b.cu.deviceName(b.dev)
	if err != nil {
		return b.errorf("%w", err)
	}
	bus, err := b.cu.deviceBusID(b.dev)
	if err != nil {
		return b.errorf("%w", err)
	}
	drv, err := b.cu.driverVersion()
	if err != nil {
		return b.errorf("%w", err)
	}
	nv, err := b.nc.version()
	if err != nil {
		return b.errorf("%w", err)
	}
	b.ncclVersion = nv
	b.info = phases.Info{
		Backend: "nccl", Host: b.host, Device: name, BusID: bus, Driver: formatDriverVersion(drv),
		Libraries: []phases.Library{
			{Name: "nccl", Path: b.nc.path, Version: formatNCCLVersion(nv)},
			{Name: "cuda", Path: b.cu.path, Version: formatDriverVersion(drv)},
		},
	}
	return nil
}

// errorf prefixes an error with where it happened.
func (b *Backend) errorf(format string, args ...any) error {
	return fmt.Errorf("nccl backend, rank %d on %s GPU %d: "+format,
		append([]any{b.rank, b.host, b.ordinal}, args...)...)
}

func (b *Backend) Info() phases.Info {
	info := b.info
	info.Libraries = append([]phases.Library(nil), b.info.Libraries...)
	return info
}

func (b *Backend) Rank() int      { return b.rank }
func (b *Backend) WorldSize() int { return b.world }

// Supports returns nil for every element type and reduction NCCL has, as
// long as the NCCL loaded is new enough for it (bfloat16 and avg came with
// NCCL 2.10), and otherwise says why and what to do.
func (b *Backend) Supports(d phases.DType, o phases.Op) error {
	return ncclSupports(b.ncclVersion, b.nc.path, d, o)
}

// AsyncError returns the communicator's asynchronous NCCL error (a peer that
// died, a network failure), or nil.
func (b *Backend) AsyncError() error {
	if b.comm == nil {
		return nil
	}
	if err := b.nc.asyncError(b.comm); err != nil {
		return b.errorf("%w", err)
	}
	return nil
}

// Abort tears the communicator down without waiting for peers
// (ncclCommAbort), for the path where the job is being aborted. Close after
// Abort releases the rest.
func (b *Backend) Abort() {
	if b.comm != nil {
		_ = b.nc.abort(b.comm)
		b.comm = nil
	}
	b.abortOnce.Do(func() { close(b.abortDone) })
}

// RequestAbort asks, from any goroutine, for the communicator to be aborted.
// NCCL and CUDA calls stay on the main goroutine's thread (the context is
// current there), so the abort happens at the main goroutine's next poll of
// a device wait, which is where it waits for a collective that does not
// end; the returned channel is closed once it has. A main goroutine blocked
// elsewhere (in MPI) never polls: the caller bounds its wait.
func (b *Backend) RequestAbort() <-chan struct{} {
	b.abortAsked.Store(true)
	return b.abortDone
}

// ErrAborted is returned by a device wait that ended because an abort was
// asked for.
var ErrAborted = errors.New("the NCCL communicator was aborted while waiting for the device (watchdog or signal)")

// pollAbort runs inside every device wait, on the main goroutine: it aborts
// the communicator when an abort was asked for or NCCL reports an
// asynchronous error (a peer that died, a network failure), and ends the
// wait with that reason.
func (b *Backend) pollAbort() error {
	if b.abortAsked.Load() {
		b.Abort()
		return b.errorf("%w", ErrAborted)
	}
	if b.comm == nil {
		return nil
	}
	if err := b.nc.asyncError(b.comm); err != nil {
		b.Abort()
		return b.errorf("%w; the communicator was aborted", err)
	}
	return nil
}

// Close waits for the GPU, destroys the communicator, frees buffers still
// allocated, the events, the stream and the staging buffer, and releases the
// primary context. It releases what it can and reports every failure.
func (b *Backend) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	if b.cu == nil {
		return nil
	}
	var errs []error
	keep := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if b.ctxRetained {
		keep(b.cu.ctxSync())
	}
	// Graphs hold NCCL's resources for the collectives they captured: they
	// go before the communicator does.
	for g := range b.graphs {
		keep(g.release())
	}
	if b.comm != nil {
		keep(b.nc.destroy(b.comm))
		b.comm = nil
	}
	for d := range b.allocs {
		if d.ptr != 0 {
			keep(b.cu.free(d.ptr))
		}
		d.freed = true
		delete(b.allocs, d)
	}
	b.live = 0
	if b.start != nil {
		keep(b.cu.destroyEvent(b.start))
	}
	if b.end != nil {
		keep(b.cu.destroyEvent(b.end))
	}
	if b.stream != nil {
		keep(b.cu.destroyStream(b.stream))
	}
	if b.staging != nil {
		keep(b.cu.freeHost(b.staging))
		b.staging = nil
	}
	if b.ctxRetained {
		keep(b.cu.releasePrimary(b.dev))
		b.ctxRetained = false
	}
	if len(errs) > 0 {
		return b.errorf("closing: %w", errors.Join(errs...))
	}
	return nil
}
