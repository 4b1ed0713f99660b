package ncclx

/*
#include <stdlib.h>
#include "abi.h"
*/
import "C"

import (
	"fmt"
	"os"
	"time"
	"unsafe"
)

// cudaLibrary is the CUDA driver's versioned soname. Tests point it at a
// fake driver.
var cudaLibrary = "libcuda.so.1"

// CUDA constants used here (cuda.h, CUDA 13).
const (
	cuStreamNonBlocking  = 0x1 // CU_STREAM_NON_BLOCKING
	cuEventDefault       = 0x0 // CU_EVENT_DEFAULT: timing enabled, spin on sync
	cudaSuccess          = 0   // CUDA_SUCCESS
	cudaErrorOOM         = 2   // CUDA_ERROR_OUT_OF_MEMORY
	cudaErrorStubLibrary = 34  // CUDA_ERROR_STUB_LIBRARY
	cudaErrorNotReady    = 600 // CUDA_ERROR_NOT_READY: cuStreamQuery/cuEventQuery while work is pending

	// CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: while this thread captures, it
	// may not make calls unsafe during capture (cuMemAlloc, a synchronous
	// copy), but other threads may, and NCCL's own threads do. nccl-tests
	// captures in this mode, as GLOBAL fails when NCCL connects peers
	// (allocating) inside the capture.
	cuStreamCaptureModeThreadLocal = 1
)

type (
	cuDevice  = C.CUdevice
	cuContext = C.CUcontext
	cuStream  = C.CUstream
	cuEvent   = C.CUevent
	devPtr    = C.CUdeviceptr
	cuGraph   = C.CUgraph
	cuExec    = C.CUgraphExec
)

// cudaAPI is the CUDA driver's function table, filled by dlsym at load.
type cudaAPI struct {
	lib  *library
	path string // the file loaded, links resolved

	getErrorName, getErrorString                             unsafe.Pointer
	init, driverGetVersion, deviceGetCount, deviceGet        unsafe.Pointer
	deviceGetName, deviceGetPCIBusID                         unsafe.Pointer
	primaryCtxRetain, primaryCtxRelease                      unsafe.Pointer
	ctxSetCurrent, ctxSynchronize                            unsafe.Pointer
	memGetInfo, memAlloc, memFree, memAllocHost, memFreeHost unsafe.Pointer
	memcpyHtoDAsync, memcpyDtoHAsync, memcpyDtoDAsync        unsafe.Pointer
	memsetD8Async, memsetD16Async, memsetD32Async            unsafe.Pointer
	streamCreate, streamDestroy, streamSynchronize           unsafe.Pointer
	streamQuery, eventQuery                                  unsafe.Pointer
	streamWait, eventWait                                    waitCalls // filled from the above at load
	eventCreate, eventRecord, eventSynchronize               unsafe.Pointer
	eventElapsedTime, eventDestroy                           unsafe.Pointer
	elapsedName                                              string // which elapsed-time symbol was bound
	streamBeginCapture, streamEndCapture, graphInstantiate   unsafe.Pointer
	graphLaunch, graphExecDestroy, graphDestroy              unsafe.Pointer
	memGetAllocationGranularity                              unsafe.Pointer // optional: the VMM granularity

	// poll, when set, is called while a wait polls the device; an error
	// stops the wait and is returned. The backend sets it to check NCCL's
	// asynchronous error and an abort asked for by the watchdog.
	poll func() error

	ms *C.float // C memory for cuEventElapsedTime's result: the hot path allocates nothing
}

func (c *cudaAPI) table() []symbol {
	return []symbol{
		sym(&c.getErrorName, "cuGetErrorName"),
		sym(&c.getErrorString, "cuGetErrorString"),
		sym(&c.init, "cuInit"),
		sym(&c.driverGetVersion, "cuDriverGetVersion"),
		sym(&c.deviceGetCount, "cuDeviceGetCount"),
		sym(&c.deviceGet, "cuDeviceGet"),
		sym(&c.deviceGetName, "cuDeviceGetName"),
		sym(&c.deviceGetPCIBusID, "cuDeviceGetPCIBusId"),
		sym(&c.primaryCtxRetain, "cuDevicePrimaryCtxRetain"),
		sym(&c.primaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
		sym(&c.ctxSetCurrent, "cuCtxSetCurrent"),
		sym(&c.ctxSynchronize, "cuCtxSynchronize"),
		sym(&c.memGetInfo, "cuMemGetInfo_v2"),
		sym(&c.memAlloc, "cuMemAlloc_v2"),
		sym(&c.memFree, "cuMemFree_v2"),
		sym(&c.memAllocHost, "cuMemAllocHost_v2"),
		sym(&c.memFreeHost, "cuMemFreeHost"),
		sym(&c.memcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
		sym(&c.memcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
		sym(&c.memcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
		sym(&c.memsetD8Async, "cuMemsetD8Async"),
		sym(&c.memsetD16Async, "cuMemsetD16Async"),
		sym(&c.memsetD32Async, "cuMemsetD32Async"),
		sym(&c.streamCreate, "cuStreamCreate"),
		sym(&c.streamDestroy, "cuStreamDestroy_v2"),
		sym(&c.streamSynchronize, "cuStreamSynchronize"),
		sym(&c.streamQuery, "cuStreamQuery"),
		sym(&c.eventQuery, "cuEventQuery"),
		sym(&c.eventCreate, "cuEventCreate"),
		sym(&c.eventRecord, "cuEventRecord"),
		sym(&c.eventSynchronize, "cuEventSynchronize"),
		sym(&c.eventDestroy, "cuEventDestroy_v2"),
		// CUDA 13's cuda.h maps cuEventElapsedTime to the _v2 ABI name; drivers
		// before 12.8 have only the unversioned one, with the same signature.
		{names: []string{"cuEventElapsedTime_v2", "cuEventElapsedTime"}, ptr: &c.eventElapsedTime, found: &c.elapsedName},
		// CUDA graphs, for the graph timing method. cuda.h maps
		// cuStreamBeginCapture to the _v2 ABI name (CUDA 10.1 on) and, from
		// CUDA 12, cuGraphInstantiate to cuGraphInstantiateWithFlags (in the
		// driver since 11.4); the other names are unversioned.
		sym(&c.streamBeginCapture, "cuStreamBeginCapture_v2"),
		sym(&c.streamEndCapture, "cuStreamEndCapture"),
		sym(&c.graphInstantiate, "cuGraphInstantiateWithFlags"),
		sym(&c.graphLaunch, "cuGraphLaunch"),
		sym(&c.graphExecDestroy, "cuGraphExecDestroy"),
		sym(&c.graphDestroy, "cuGraphDestroy"),
		// Every CUDA 12 driver has it (10.2 on); optional because only the
		// symmetric buffers' footprint needs it, and that has a fallback.
		{names: []string{"cuMemGetAllocationGranularity"}, ptr: &c.memGetAllocationGranularity, optional: true},
	}
}

// loadCUDA opens the driver, binds every symbol and runs cuInit(0).
func loadCUDA() (*cudaAPI, error) {
	lib, err := dlopen("cuda", cudaLibrary)
	if err != nil {
		err.(*LoadError).Hint = "this node has no NVIDIA driver (or it is not on the loader path); run on a GPU node"
		return nil, err
	}
	c := &cudaAPI{lib: lib}
	t := c.table()
	if err := lib.bind(t); err != nil {
		err.(*LoadError).Hint = "the NVIDIA driver is too old for rsag (it needs the CUDA 12.x/13.x driver API)"
		return nil, err
	}
	c.path = lib.path(t)
	c.streamWait = waitCalls{c.streamSynchronize, c.streamQuery, "cuStreamSynchronize", "cuStreamQuery"}
	c.eventWait = waitCalls{c.eventSynchronize, c.eventQuery, "cuEventSynchronize", "cuEventQuery"}
	if err := c.check("cuInit", C.call_cuInit(c.init, 0)); err != nil {
		if err.(*Error).Code == cudaErrorStubLibrary {
			return nil, fmt.Errorf("initialising the CUDA driver (%s): %w: this is the CUDA toolkit's stub "+
				"libcuda, not the driver: remove the toolkit's lib64/stubs directory from LD_LIBRARY_PATH", c.path, err)
		}
		return nil, fmt.Errorf("initialising the CUDA driver (%s): %w: check nvidia-smi, the GPU allocation "+
			"(CUDA_VISIBLE_DEVICES=%q) and that the driver matches its kernel module", c.path, err, os.Getenv("CUDA_VISIBLE_DEVICES"))
	}
	c.ms = (*C.float)(C.malloc(C.sizeof_float))
	return c, nil
}

// check turns a CUresult into nil or an *Error holding the driver's own
// name and description of it.
func (c *cudaAPI) check(op string, r C.CUresult) error {
	if r == cudaSuccess {
		return nil
	}
	return c.newError(op, int(r))
}

func (c *cudaAPI) newError(op string, code int) *Error {
	e := &Error{Lib: "cuda", Op: op, Code: code, Name: CUResult(code).String()}
	if c == nil {
		return e
	}
	var s *C.char
	if c.getErrorName != nil && C.call_cuGetErrorText(c.getErrorName, C.CUresult(code), &s) == cudaSuccess && s != nil {
		e.Name = C.GoString(s)
	}
	s = nil
	if c.getErrorString != nil && C.call_cuGetErrorText(c.getErrorString, C.CUresult(code), &s) == cudaSuccess && s != nil {
		e.Msg = C.GoString(s)
	}
	return e
}

func (c *cudaAPI) driverVersion() (int, error) {
	var v C.int
	err := c.check("cuDriverGetVersion", C.call_cuGetInt(c.driverGetVersion, &v))
	return int(v), err
}

func (c *cudaAPI) deviceCount() (int, error) {
	var n C.int
	err := c.check("cuDeviceGetCount", C.call_cuGetInt(c.deviceGetCount, &n))
	return int(n), err
}

func (c *cudaAPI) device(ordinal int) (cuDevice, error) {
	var d C.CUdevice
	err := c.check("cuDeviceGet", C.call_cuDeviceGet(c.deviceGet, &d, C.int(ordinal)))
	return d, err
}

func (c *cudaAPI) deviceString(op string, f unsafe.Pointer, d cuDevice) (string, error) {
	var buf [256]C.char
	if err := c.check(op, C.call_cuDeviceGetString(f, &buf[0], C.int(len(buf)), d)); err != nil {
		return "", err
	}
	return C.GoString(&buf[0]), nil
}

func (c *cudaAPI) deviceName(d cuDevice) (string, error) {
	return c.deviceString("cuDeviceGetName", c.deviceGetName, d)
}

func (c *cudaAPI) deviceBusID(d cuDevice) (string, error) {
	return c.deviceString("cuDeviceGetPCIBusId", c.deviceGetPCIBusID, d)
}

func (c *cudaAPI) retainPrimary(d cuDevice) (cuContext, error) {
	var ctx C.CUcontext
	err := c.check("cuDevicePrimaryCtxRetain", C.call_cuDevicePrimaryCtxRetain(c.primaryCtxRetain, &ctx, d))
	return ctx, err
}

func (c *cudaAPI) releasePrimary(d cuDevice) error {
	return c.check("cuDevicePrimaryCtxRelease_v2", C.call_cuDevicePrimaryCtxRelease(c.primaryCtxRelease, d))
}

func (c *cudaAPI) setCurrent(ctx cuContext) error {
	return c.check("cuCtxSetCurrent", C.call_cuCtxSetCurrent(c.ctxSetCurrent, ctx))
}

func (c *cudaAPI) ctxSync() error {
	return c.check("cuCtxSynchronize", C.call_cuCtxSynchronize(c.ctxSynchronize))
}

func (c *cudaAPI) memInfo() (free, total int64, err error) {
	var f, t C.size_t
	err = c.check("cuMemGetInfo_v2", C.call_cuMemGetInfo(c.memGetInfo, &f, &t))
	return int64(f), int64(t), err
}

func (c *cudaAPI) alloc(n int64) (devPtr, error) {
	var p C.CUdeviceptr
	err := c.check("cuMemAlloc_v2", C.call_cuMemAlloc(c.memAlloc, &p, C.size_t(n)))
	return p, err
}

func (c *cudaAPI) free(p devPtr) error {
	return c.check("cuMemFree_v2", C.call_cuMemFree(c.memFree, p))
}

func (c *cudaAPI) allocHost(n int) (unsafe.Pointer, error) {
	var p unsafe.Pointer
	err := c.check("cuMemAllocHost_v2", C.call_cuMemAllocHost(c.memAllocHost, &p, C.size_t(n)))
	return p, err
}

func (c *cudaAPI) freeHost(p unsafe.Pointer) error {
	return c.check("cuMemFreeHost", C.call_cuMemFreeHost(c.memFreeHost, p))
}

// htod and dtoh copy between pinned host memory (C memory) and the device,
// queued on s.
func (c *cudaAPI) htod(dst devPtr, src unsafe.Pointer, n int, s cuStream) error {
	return c.check("cuMemcpyHtoDAsync_v2", C.call_cuMemcpyHtoDAsync(c.memcpyHtoDAsync, dst, src, C.size_t(n), s))
}

// dtod copies n bytes within device memory, queued on s.
func (c *cudaAPI) dtod(dst, src devPtr, n int, s cuStream) error {
	return c.check("cuMemcpyDtoDAsync_v2", C.call_cuMemcpyDtoDAsync(c.memcpyDtoDAsync, dst, src, C.size_t(n), s))
}

func (c *cudaAPI) dtoh(dst unsafe.Pointer, src devPtr, n int, s cuStream) error {
	return c.check("cuMemcpyDtoHAsync_v2", C.call_cuMemcpyDtoHAsync(c.memcpyDtoHAsync, dst, src, C.size_t(n), s))
}

func (c *cudaAPI) memsetD8(dst devPtr, v uint8, n int, s cuStream) error {
	return c.check("cuMemsetD8Async", C.call_cuMemsetD8Async(c.memsetD8Async, dst, C.uchar(v), C.size_t(n), s))
}

func (c *cudaAPI) memsetD16(dst devPtr, v uint16, n int, s cuStream) error {
	return c.check("cuMemsetD16Async", C.call_cuMemsetD16Async(c.memsetD16Async, dst, C.ushort(v), C.size_t(n), s))
}

func (c *cudaAPI) memsetD32(dst devPtr, v uint32, n int, s cuStream) error {
	return c.check("cuMemsetD32Async", C.call_cuMemsetD32Async(c.memsetD32Async, dst, C.uint(v), C.size_t(n), s))
}

func (c *cudaAPI) newStream() (cuStream, error) {
	var s C.CUstream
	err := c.check("cuStreamCreate", C.call_cuStreamCreate(c.streamCreate, &s, cuStreamNonBlocking))
	return s, err
}

func (c *cudaAPI) destroyStream(s cuStream) error {
	return c.check("cuStreamDestroy_v2", C.call_cuStreamOp(c.streamDestroy, s))
}

// syncStream waits for the work queued on s (see wait).
func (c *cudaAPI) syncStream(s cuStream) error { return c.wait(&c.streamWait, unsafe.Pointer(s)) }

func (c *cudaAPI) newEvent() (cuEvent, error) {
	var e C.CUevent
	err := c.check("cuEventCreate", C.call_cuEventCreate(c.eventCreate, &e, cuEventDefault))
	return e, err
}

func (c *cudaAPI) destroyEvent(e cuEvent) error {
	return c.check("cuEventDestroy_v2", C.call_cuEventOp(c.eventDestroy, e))
}

func (c *cudaAPI) record(e cuEvent, s cuStream) error {
	if r := C.call_cuEventRecord(c.eventRecord, e, s); r != cudaSuccess {
		return c.newError("cuEventRecord", int(r))
	}
	return nil
}

// syncEvent waits for e (see wait).
func (c *cudaAPI) syncEvent(e cuEvent) error { return c.wait(&c.eventWait, unsafe.Pointer(e)) }

// waitCalls are the driver calls that wait for one kind of handle: one
// that blocks (cuStreamSynchronize, cuEventSynchronize) and one that asks
// (cuStreamQuery, cuEventQuery), with their names for errors.
type waitCalls struct {
	block, query         unsafe.Pointer
	blockName, queryName string
}

// wait waits for the stream or event h. With a poll hook it polls the
// query call instead of blocking (see waiter); without, it blocks.
func (c *cudaAPI) wait(w *waitCalls, h unsafe.Pointer) error {
	if c.poll == nil {
		if r := C.call_cuWaitOp(w.block, h); r != cudaSuccess {
			return c.newError(w.blockName, int(r))
		}
		return nil
	}
	p := waiter{start: time.Now()}
	for i := 0; ; i++ {
		r := C.call_cuWaitOp(w.query, h)
		if r == cudaSuccess {
			return nil
		}
		if r != cudaErrorNotReady {
			return c.newError(w.queryName, int(r))
		}
		if err := p.pause(c, i); err != nil {
			return err
		}
	}
}

// CUmemAllocationProp and cuMemGetAllocationGranularity values (cuda.h).
const (
	cuMemAllocationTypePinned   = 1 // CU_MEM_ALLOCATION_TYPE_PINNED
	cuMemHandleTypePosixFD      = 1 // CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
	cuMemLocationTypeDevice     = 1 // CU_MEM_LOCATION_TYPE_DEVICE
	cuMemAllocGranularityRecomm = 1 // CU_MEM_ALLOC_GRANULARITY_RECOMMENDED
)

// vmmGranularity is the size ncclMemAlloc rounds an allocation on device
// up to: the recommended granularity of pinned device memory that can be
// shared through a file descriptor, which is what NCCL 2.28's ncclMemAlloc
// asks cuMemGetAllocationGranularity for (src/allocator.cc; it adds the
// fabric handle type and the RDMA flag where the GPU has them, which do not
// change the granularity of device memory).
func (c *cudaAPI) vmmGranularity(d cuDevice) (int64, error) {
	if c.memGetAllocationGranularity == nil {
		return 0, fmt.Errorf("the CUDA driver (%s) lacks cuMemGetAllocationGranularity", c.path)
	}
	var p C.rsag_CUmemAllocationProp
	p._type = cuMemAllocationTypePinned
	p.requestedHandleTypes = cuMemHandleTypePosixFD
	p.location._type = cuMemLocationTypeDevice
	p.location.id = C.int(d)
	var g C.size_t
	r := C.call_cuMemGetAllocationGranularity(c.memGetAllocationGranularity, &g, &p, cuMemAllocGranularityRecomm)
	if err := c.check("cuMemGetAllocationGranularity", r); err != nil {
		return 0, err
	}
	return int64(g), nil
}

// beginCapture starts capturing the work queued on s into a graph.
func (c *cudaAPI) beginCapture(s cuStream, mode int) error {
	return c.check("cuStreamBeginCapture_v2", C.call_cuStreamBeginCapture(c.streamBeginCapture, s, C.CUstreamCaptureMode(mode)))
}

// endCapture ends the capture on s and returns the graph. The graph may be
// non-nil even with an error (a capture that was invalidated): the caller
// destroys whatever it gets.
func (c *cudaAPI) endCapture(s cuStream) (cuGraph, error) {
	var g C.CUgraph
	err := c.check("cuStreamEndCapture", C.call_cuStreamEndCapture(c.streamEndCapture, s, &g))
	return g, err
}

func (c *cudaAPI) instantiate(g cuGraph) (cuExec, error) {
	var e C.CUgraphExec
	err := c.check("cuGraphInstantiateWithFlags", C.call_cuGraphInstantiateWithFlags(c.graphInstantiate, &e, g, 0))
	return e, err
}

// launch queues the graph on s; like the collectives, it is timed, so it
// allocates nothing unless it fails.
func (c *cudaAPI) launch(e cuExec, s cuStream) error {
	if r := C.call_cuGraphLaunch(c.graphLaunch, e, s); r != cudaSuccess {
		return c.newError("cuGraphLaunch", int(r))
	}
	return nil
}

func (c *cudaAPI) destroyExec(e cuExec) error {
	return c.check("cuGraphExecDestroy", C.call_cuGraphExecDestroy(c.graphExecDestroy, e))
}

func (c *cudaAPI) destroyGraph(g cuGraph) error {
	return c.check("cuGraphDestroy", C.call_cuGraphDestroy(c.graphDestroy, g))
}

// spinFor is how long a wait queries back to back before it sleeps between
// queries. It is a time, not a count of queries: on 2 x H200 a count of 4096
// queries ran out before a 256 MiB AllReduce (about 1 ms) finished, and a
// 50 us sleep that overslept by up to a millisecond on one rank made the
// other rank's next timed collective wait for it (samples of 2 ms among
// samples of 0.9 ms, docs/performance-log.md). 100 ms covers every collective
// the timing phase measures; a wait that outlasts it costs a core no more.
const spinFor = 100 * time.Millisecond

// waiter paces one wait's queries. Between two queries it runs the poll
// hook every 64th time (it costs a cgo call), and once the wait has lasted
// spinFor it sleeps 50 us each time. This is NCCL's own recommendation for
// a waiter that can abort: query the stream and ncclCommGetAsyncError in a
// loop, and call ncclCommAbort on error, all on the thread that owns the
// communicator, rather than block in cuStreamSynchronize, which nothing but
// the device can end.
type waiter struct {
	start    time.Time
	sleeping bool
}

func (w *waiter) pause(c *cudaAPI, i int) error {
	if i%64 == 0 {
		if err := c.poll(); err != nil {
			return err
		}
		w.sleeping = w.sleeping || time.Since(w.start) > spinFor
	}
	if w.sleeping {
		time.Sleep(50 * time.Microsecond)
	}
	return nil
}

// elapsed returns the milliseconds between two recorded events.
func (c *cudaAPI) elapsed(start, end cuEvent) (float32, error) {
	if r := C.call_cuEventElapsedTime(c.eventElapsedTime, c.ms, start, end); r != cudaSuccess {
		return 0, c.newError(c.elapsedName, int(r))
	}
	return float32(*c.ms), nil
}

// formatDriverVersion writes cuDriverGetVersion's 1000*major + 10*minor
// (13000 -> "13.0", 12080 -> "12.8").
func formatDriverVersion(v int) string {
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}
