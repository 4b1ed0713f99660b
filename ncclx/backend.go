package ncclx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"rsag/coll"
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
	// BcastUint64s broadcasts words (the same length on every rank) from
	// root: gompi's typed broadcast, which moves exactly the bytes asked.
	BcastUint64s(words []uint64, root int) error
	// AllGather returns every rank's data, in rank order, on every rank.
	AllGather(data []byte) ([][]byte, error)
}

// stagingBytes is the pinned host buffer Write, Read and 8-byte Fill go
// through: 8 MiB, one chunk for the checker's reads of 1<<20 int64 elements.
const stagingBytes = 8 << 20

// device is what every Backend of one rank shares: the libraries, the
// GPU and its context, the stream, the timing events, the staging buffer,
// the buffers and their accounting, the graphs, and every communicator.
// A variant's or a group's Backend therefore times and counts like the
// one New returned, and any of them may use a buffer any of them made.
type device struct {
	cu *cudaAPI
	nc *ncclAPI

	rank    int // in the world, for errors
	host    string
	ordinal int // the GPU among those this rank sees (chooseGPU)

	dev         cuDevice
	ctx         cuContext
	ctxRetained bool
	stream      cuStream
	start, end  cuEvent
	staging     unsafe.Pointer // stagingBytes of pinned host memory

	info        coll.Info
	ncclVersion int   // ncclGetVersion's code
	granularity int64 // what ncclMemAlloc rounds a size up to (vmmGranularity)
	live, peak  int64
	allocs      map[*deviceBuffer]struct{}
	graphs      map[*graph]struct{} // captured and not yet closed
	comms       []*communicator     // every communicator made, in order
	closed      bool

	// abortAsked is set from another goroutine (the watchdog, a signal);
	// the main goroutine's next device wait aborts every communicator and
	// closes abortDone.
	abortAsked atomic.Bool
	abortDone  chan struct{}
	abortOnce  sync.Once

	// What the device waits' polls of ncclCommGetAsyncError last found
	// (async.go): when every communicator last said ncclSuccess (Unix
	// nanoseconds), and the first error one said.
	asyncOK  atomic.Int64
	asyncErr atomic.Pointer[asyncSaid]
}

// Backend is one rank's GPU and one NCCL communicator on it: the world's
// default one for the Backend New returns, a CTA policy's for a variant
// (WithVariant), a group's for Split. It implements coll.Backend,
// coll.GraphTimer, coll.Variants and coll.Splitter. Its methods must
// be called from the goroutine that called New, which main keeps on one OS
// thread: the CUDA context is current on that thread only.
type Backend struct {
	*device
	c    *communicator
	kind coll.BufferKind // what Alloc makes
	// owns is the group whose communicators Close destroys: the world for
	// the Backend New returned (whose Close releases everything), the
	// group for a Backend Split returned; nil for a variant.
	owns *group
}

var (
	_ coll.Backend    = (*Backend)(nil)
	_ coll.GraphTimer = (*Backend)(nil)
	_ coll.Variants   = (*Backend)(nil)
	_ coll.Splitter   = (*Backend)(nil)
	_ coll.Preparer   = (*Backend)(nil)
)

// Probe reports whether this node can run the NCCL backend with localSize
// ranks on it: the CUDA driver and NCCL load, cuInit works, and a rank
// here sees a GPU it may use (chooseGPU). The error says which check failed
// and what to do.
func Probe(localSize int, opt Options) error {
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
	_, err = chooseGPU(host, n, 0, localSize, opt)
	return err
}

// New loads CUDA and NCCL, makes the rank's GPU (chooseGPU) current on this
// thread (through its primary context, which NCCL also uses), creates the
// stream and the two timing events, checks that no two ranks share a GPU
// unless opt allows it (checkGPUs), and creates the NCCL communicator over
// all ranks: rank 0 makes the unique id and b broadcasts it. Every rank does
// the same steps in the same order.
func New(boot Bootstrap, opt Options) (*Backend, error) {
	d := &device{
		rank: boot.Rank(), host: boot.Host(),
		allocs: map[*deviceBuffer]struct{}{}, graphs: map[*graph]struct{}{}, abortDone: make(chan struct{}),
	}
	world := &group{rank: boot.Rank(), size: boot.Size(), comms: map[coll.CTAPolicy]*communicator{}, boot: boot}
	b := &Backend{device: d, c: &communicator{g: world, policy: coll.DefaultCTAPolicy}, kind: coll.PlainBuffers, owns: world}
	if err := b.open(boot, opt); err != nil {
		_ = b.Close()
		return nil, err
	}
	return b, nil
}

// WaitEnv selects how device waits wait: "poll" (the default, and when
// unset) polls the device and NCCL's asynchronous errors, "block" blocks in
// the driver.
const WaitEnv = "RSAG_WAIT"

// BlockingWait reads a value of RSAG_WAIT: whether device waits block in
// the driver. Any value but poll, block and none is refused: a misspelt
// RSAG_WAIT=blocking would otherwise poll, unseen.
func BlockingWait(v string) (bool, error) {
	switch v {
	case "", "poll":
		return false, nil
	case "block":
		return true, nil
	}
	if len(v) > 40 {
		v = v[:40] + "..." // named, not echoed
	}
	return false, fmt.Errorf("%s=%q is not a way to wait: use poll (the default: poll the device and NCCL's errors, "+
		"spinning for the first 100 ms) or block (wait in the driver, no core spinning), or unset it", WaitEnv, v)
}

func (b *Backend) open(boot Bootstrap, opt Options) error {
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
	block, err := BlockingWait(os.Getenv(WaitEnv))
	if err != nil {
		return err
	}
	if !block {
		b.cu.poll = b.pollAbort
	}
	n, err := b.cu.deviceCount()
	if err != nil {
		return b.errorf("%w", err)
	}
	if b.ordinal, err = chooseGPU(b.host, n, boot.LocalRank(), boot.LocalSize(), opt); err != nil {
		return fmt.Errorf("rank %d is local rank %d: %w", b.rank, boot.LocalRank(), err)
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
	b.granularity = b.symmetricGranularity()
	if err := b.checkGPUs(boot, opt); err != nil {
		return err
	}
	return b.initComm(boot)
}

// initComm creates the world's default communicator, with ncclCommInitRank
// as the seed did (no config: NCCL's defaults).
func (b *Backend) initComm(boot Bootstrap) error {
	id, err := b.uniqueID(boot)
	if err != nil {
		return err
	}
	g := b.c.g
	comm, err := b.nc.initRank(g.size, &id, g.rank)
	if err != nil {
		return b.errorf("creating the NCCL communicator of %d ranks: %w (set NCCL_DEBUG=INFO for NCCL's log)", g.size, err)
	}
	b.c.comm = comm
	b.adopt(b.c)
	return nil
}

// uniqueIDWords is the id message: a status word, then the 128-byte id as
// 16 little-endian words.
const uniqueIDWords = 1 + uniqueIDBytes/8

// idReady is rank 0's status word when its id is in the message; a failed
// ncclGetUniqueId sends 0, and a broadcast that failed (gompi drops MPI's
// return code) leaves the receivers' own 0.
const idReady = 0x7273_6167_6964_0001 // "rsagid" and a version

// uniqueID makes a fresh NCCL unique id on rank 0 and hands it to every
// rank, with a status word, so that when ncclGetUniqueId fails there the
// other ranks fail too instead of waiting in ncclCommInitRank.
func (d *device) uniqueID(boot Bootstrap) ([uniqueIDBytes]byte, error) {
	var msg [uniqueIDWords]uint64
	var id [uniqueIDBytes]byte
	var idErr error
	if boot.Rank() == 0 {
		idErr = d.nc.uniqueID(&id)
		if idErr == nil {
			msg[0] = idReady
			for i := range uniqueIDBytes / 8 {
				msg[1+i] = binary.LittleEndian.Uint64(id[8*i:])
			}
		}
	}
	if err := boot.BcastUint64s(msg[:], 0); err != nil {
		return id, d.errorf("broadcasting the NCCL unique id: %w", err)
	}
	if idErr != nil {
		return id, d.errorf("%w", idErr)
	}
	if msg[0] != idReady {
		return id, d.errorf("rank 0 could not create the NCCL unique id, or its broadcast failed (see rank 0's error)")
	}
	for i := range uniqueIDBytes / 8 {
		binary.LittleEndian.PutUint64(id[8*i:], msg[1+i])
	}
	return id, nil
}

// fallbackGranularity is what a symmetric buffer's footprint is rounded to
// when the driver cannot say: 2 MiB, the granularity CUDA reports for
// device memory on the GPUs NCCL's symmetric kernels run on (Hopper,
// Blackwell). A wrong figure only makes the footprint check before the
// timing phase approximate; NCCL itself asks the driver.
const fallbackGranularity = 2 << 20

// symmetricGranularity is the driver's VMM granularity for this GPU, or
// fallbackGranularity when it has none to give.
func (b *Backend) symmetricGranularity() int64 {
	if g, err := b.cu.vmmGranularity(b.dev); err == nil && g > 0 {
		return g
	}
	return fallbackGranularity
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
	b.info = coll.Info{
		Backend: "nccl", Host: b.host, Device: name, BusID: bus, Driver: formatDriverVersion(drv),
		Libraries: []coll.Library{
			{Name: "nccl", Path: b.nc.path, Version: formatNCCLVersion(nv)},
			{Name: "cuda", Path: b.cu.path, Version: formatDriverVersion(drv)},
		},
	}
	return nil
}

// errorf prefixes an error with where it happened.
func (d *device) errorf(format string, args ...any) error {
	return fmt.Errorf("nccl backend, rank %d on %s GPU %d: "+format,
		append([]any{d.rank, d.host, d.ordinal}, args...)...)
}

func (b *Backend) Info() coll.Info {
	info := b.info
	info.Libraries = append([]coll.Library(nil), b.info.Libraries...)
	return info
}

// Rank and WorldSize are within the Backend's group: the world's, or the
// group Split made.
func (b *Backend) Rank() int      { return b.c.g.rank }
func (b *Backend) WorldSize() int { return b.c.g.size }

// Supports returns nil for every element type and reduction NCCL has, as
// long as the NCCL loaded is new enough for it (bfloat16 and avg came with
// NCCL 2.10), and otherwise says why and what to do.
func (b *Backend) Supports(d coll.DType, o coll.Op) error {
	return ncclSupports(b.ncclVersion, b.nc.path, d, o)
}

// AsyncError returns the first asynchronous NCCL error of any of this
// rank's communicators (a peer that died, a network failure), or nil.
func (b *Backend) AsyncError() error {
	for _, c := range b.comms {
		if c.comm == nil {
			continue
		}
		if err := b.nc.asyncError(c.comm); err != nil {
			return b.errorf("%w", err)
		}
	}
	return nil
}

// Abort tears down every communicator of this rank without waiting for
// peers (ncclCommAbort), for the path where the job is being aborted.
// Close after Abort releases the rest.
func (b *Backend) Abort() { b.device.abort() }

func (d *device) abort() {
	for _, c := range d.comms {
		if c.comm != nil {
			_ = d.nc.abort(c.comm)
			c.comm = nil
		}
	}
	d.abortOnce.Do(func() { close(d.abortDone) })
}

// RequestAbort asks, from any goroutine, for the communicators to be
// aborted. NCCL and CUDA calls stay on the main goroutine's thread (the
// context is current there), so the abort happens at the main goroutine's
// next poll of a device wait, which is where it waits for a collective that
// does not end; the returned channel is closed once it has. A main
// goroutine blocked elsewhere (in MPI) never polls: the caller bounds its
// wait.
func (b *Backend) RequestAbort() <-chan struct{} {
	b.abortAsked.Store(true)
	return b.abortDone
}

// ErrAborted is returned by a device wait that ended because an abort was
// asked for.
var ErrAborted = errors.New("the NCCL communicator was aborted while waiting for the device (watchdog or signal)")

// pollAbort runs inside every device wait, on the main goroutine: it aborts
// the communicators when an abort was asked for or NCCL reports an
// asynchronous error on any of them (a peer that died, a network failure),
// and ends the wait with that reason.
func (d *device) pollAbort() error {
	if d.abortAsked.Load() {
		d.abort()
		return d.errorf("%w", ErrAborted)
	}
	asked := false
	for _, c := range d.comms {
		if c.comm == nil {
			continue
		}
		asked = true
		if err := d.nc.asyncError(c.comm); err != nil {
			d.sawAsync(err)
			d.abort()
			return d.errorf("%w; the communicators were aborted", err)
		}
	}
	if asked {
		d.sawAsync(nil)
	}
	return nil
}

// Close releases what this Backend owns. For the Backend New returned, that
// is everything: it waits for the GPU, destroys the graphs, every
// communicator (each after deregistering the buffers registered with it),
// frees the buffers still allocated, the events, the stream and the staging
// buffer, and releases the primary context; it releases what it can and
// reports every failure. For a Backend Split returned, it destroys the
// group's communicators (see closeGroup); for a variant, nothing.
func (b *Backend) Close() error {
	if b.owns == nil {
		return nil
	}
	if b.owns.parent != nil {
		return b.closeGroup()
	}
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
	// go before the communicators do.
	for g := range b.graphs {
		keep(g.release())
	}
	// The groups split last go first, then the policies, then the world's.
	for i := len(b.comms) - 1; i >= 0; i-- {
		keep(b.destroy(b.comms[i]))
	}
	for d := range b.allocs {
		keep(b.release(d))
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
