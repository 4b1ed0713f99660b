package mpi

// This file holds every call into C. cgo declarations are per file, so
// keeping them together keeps the rest of the package plain Go. All calls
// go to MPI_COMM_WORLD; every one returns MPI's code, which check turns into
// an *Error.

/*
#include <mpi.h>
#include <string.h>
#include <time.h>

// MPI_IN_PLACE is a sentinel pointer (1 in Open MPI, -1 in MPICH) that Go
// cannot hold as an unsafe.Pointer, so C substitutes it.
static void *rsag_send(void *send, int in_place) { return in_place ? MPI_IN_PLACE : send; }

static int rsag_init(int *provided) {
	return MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, provided);
}
static int rsag_errors_return(void) {
	return MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}
static int rsag_split_shared(int key, MPI_Comm *local) {
	return MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, key, MPI_INFO_NULL, local);
}
static int rsag_barrier(MPI_Comm comm) { return MPI_Barrier(comm); }
static int rsag_bcast(MPI_Comm comm, void *buf, int count, MPI_Datatype dt, int root) {
	return MPI_Bcast(buf, count, dt, root, comm);
}
static int rsag_gather(MPI_Comm comm, void *send, int count, void *recv, MPI_Datatype dt, int root) {
	return MPI_Gather(send, count, dt, recv, count, dt, root, comm);
}
static int rsag_gatherv(MPI_Comm comm, void *send, int count, void *recv, int *counts, int *displs, int root) {
	return MPI_Gatherv(send, count, MPI_BYTE, recv, counts, displs, MPI_BYTE, root, comm);
}
// The collectives rsag times, one case each: rsag_times runs one n times
// back to back (the timed loops; rsag's own host-side calls pass n = 1)
// and stops at the first call that fails; rsag_samples times many batches
// of one. In place, NCCL's layout keeps a ReduceScatter's block at rank x
// block of the buffer, where MPI_IN_PLACE leaves it at the start: the
// moved kind moves it to offset after each call, in the same loop
// (nothing when offset is 0).
enum { RSAG_ALLREDUCE, RSAG_REDUCE_SCATTER, RSAG_REDUCE_SCATTER_MOVED, RSAG_ALLGATHER };
static int rsag_times(int kind, MPI_Comm comm, void *send, void *recv, int count, MPI_Datatype dt, MPI_Op op, int in_place,
		long offset, long bytes, int n) {
	for (int i = 0; i < n; i++) {
		int rc = MPI_ERR_OTHER;
		switch (kind) {
		case RSAG_ALLREDUCE:
			rc = MPI_Allreduce(rsag_send(send, in_place), recv, count, dt, op, comm);
			break;
		case RSAG_REDUCE_SCATTER:
			rc = MPI_Reduce_scatter_block(rsag_send(send, in_place), recv, count, dt, op, comm);
			break;
		case RSAG_REDUCE_SCATTER_MOVED:
			rc = MPI_Reduce_scatter_block(MPI_IN_PLACE, recv, count, dt, op, comm);
			if (rc == MPI_SUCCESS && offset > 0) memmove((char *)recv + offset, recv, bytes);
			break;
		case RSAG_ALLGATHER:
			rc = MPI_Allgather(rsag_send(send, in_place), count, dt, recv, count, dt, comm);
			break;
		}
		if (rc != MPI_SUCCESS) return rc;
	}
	return MPI_SUCCESS;
}
static long long rsag_clock(clockid_t id) {
	struct timespec t;
	clock_gettime(id, &t);
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}
// rsag_samples takes samples of batch calls back to back, each between two
// reads of the monotonic clock (ns[s]); with barrier set, each call of a
// sample follows an MPI_Barrier outside its clock, and ns[s] is the sum of
// the calls' own times (IMB's way: a stall then lands in the barrier).
// After each sample's clock stops it compares out with want, span by span
// (nspans triples of a byte offset in out, a length and a byte offset in
// want): ok[s] says whether all held,
// and the first element that did not is named in first (its sample and
// element) with its bytes in got. Before sample s starts, progress[1]
// takes the wall clock and progress[0] s, for a watcher on another thread.
static int rsag_samples(int kind, MPI_Comm comm, void *send, void *recv, int count, MPI_Datatype dt, MPI_Op op,
		int in_place, long offset, long bytes, int batch, int barrier, int samples, long long *ns,
		const char *out, const long long *spans, int nspans, const char *want, int elem,
		char *ok, long long *first, char *got, long long *progress) {
	first[0] = first[1] = -1;
	for (int s = 0; s < samples; s++) {
		__atomic_store_n(&progress[1], rsag_clock(CLOCK_REALTIME), __ATOMIC_RELAXED);
		__atomic_store_n(&progress[0], (long long)s, __ATOMIC_RELEASE);
		int rc = MPI_SUCCESS;
		if (barrier) {
			ns[s] = 0;
			for (int b = 0; b < batch && rc == MPI_SUCCESS; b++) {
				if ((rc = MPI_Barrier(comm)) != MPI_SUCCESS) break;
				long long start = rsag_clock(CLOCK_MONOTONIC);
				rc = rsag_times(kind, comm, send, recv, count, dt, op, in_place, offset, bytes, 1);
				ns[s] += rsag_clock(CLOCK_MONOTONIC) - start;
			}
		} else {
			long long start = rsag_clock(CLOCK_MONOTONIC);
			rc = rsag_times(kind, comm, send, recv, count, dt, op, in_place, offset, bytes, batch);
			ns[s] = rsag_clock(CLOCK_MONOTONIC) - start;
		}
		if (rc != MPI_SUCCESS) return rc;
		ok[s] = 1;
		for (int i = 0; i < nspans; i++) {
			const char *o = out + spans[3 * i], *w = want + spans[3 * i + 2];
			long long len = spans[3 * i + 1];
			if (memcmp(o, w, len) == 0) continue;
			ok[s] = 0;
			if (first[0] < 0) {
				long long b = 0;
				while (o[b] == w[b]) b++;
				b -= b % elem;
				first[0] = s;
				first[1] = (spans[3 * i] + b) / elem;
				memcpy(got, o + b, elem);
			}
			break;
		}
	}
	return MPI_SUCCESS;
}
static int rsag_allgatherv(MPI_Comm comm, void *send, int count, void *recv, int *counts, int *displs) {
	return MPI_Allgatherv(send, count, MPI_BYTE, recv, counts, displs, MPI_BYTE, comm);
}
static int rsag_abort(int code) { return MPI_Abort(MPI_COMM_WORLD, code); }
static MPI_Comm rsag_world(void) { return MPI_COMM_WORLD; }
static MPI_Comm rsag_comm_null(void) { return MPI_COMM_NULL; }
// A negative color is MPI_UNDEFINED: the rank takes part and gets
// MPI_COMM_NULL, which has no error handler to set.
static int rsag_split(MPI_Comm comm, int color, int key, MPI_Comm *out) {
	int rc = MPI_Comm_split(comm, color < 0 ? MPI_UNDEFINED : color, key, out);
	if (rc == MPI_SUCCESS && *out != MPI_COMM_NULL) rc = MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
	return rc;
}
static int rsag_is_null(MPI_Comm c) { return c == MPI_COMM_NULL; }
*/
import "C"

import (
	"strings"
	"unsafe"

	gompi "github.com/sbromberger/gompi"
)

// Counts and displacements are passed to C as []int32; this fails to compile
// where a C int is not 32 bits.
var _ [4]byte = [unsafe.Sizeof(C.int(0))]byte{}

// datatypes maps each Datatype to MPI's handle. Adding a type is one line
// here and one constant in collectives.go.
var datatypes = [...]struct {
	name   string
	size   int
	handle C.MPI_Datatype
}{
	Byte:    {"MPI_BYTE", 1, C.MPI_BYTE},
	Int8:    {"MPI_INT8_T", 1, C.MPI_INT8_T},
	Uint8:   {"MPI_UINT8_T", 1, C.MPI_UINT8_T},
	Int32:   {"MPI_INT32_T", 4, C.MPI_INT32_T},
	Uint32:  {"MPI_UINT32_T", 4, C.MPI_UINT32_T},
	Int64:   {"MPI_INT64_T", 8, C.MPI_INT64_T},
	Uint64:  {"MPI_UINT64_T", 8, C.MPI_UINT64_T},
	Float32: {"MPI_FLOAT", 4, C.MPI_FLOAT},
	Float64: {"MPI_DOUBLE", 8, C.MPI_DOUBLE},
}

// ops maps each Op to MPI's handle.
var ops = [...]struct {
	name   string
	handle C.MPI_Op
}{
	Sum:  {"MPI_SUM", C.MPI_SUM},
	Prod: {"MPI_PROD", C.MPI_PROD},
	Max:  {"MPI_MAX", C.MPI_MAX},
	Min:  {"MPI_MIN", C.MPI_MIN},
}

// typeSize is MPI_Type_size of dt's handle: what the library itself thinks
// one element is, which the tests compare with the table's size.
func typeSize(dt Datatype) (int, error) {
	var n C.int
	if err := check("MPI_Type_size", C.MPI_Type_size(datatypes[dt].handle, &n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// check turns an MPI return code into an *Error naming op, or nil.
func check(op string, rc C.int) error {
	if rc == C.MPI_SUCCESS {
		return nil
	}
	return &Error{Op: op, Code: int(rc), Msg: errorString(rc)}
}

func errorString(rc C.int) string {
	buf := make([]byte, C.MPI_MAX_ERROR_STRING+1)
	var n C.int
	if C.MPI_Error_string(rc, (*C.char)(unsafe.Pointer(&buf[0])), &n) != C.MPI_SUCCESS {
		return "unknown MPI error"
	}
	return strings.TrimSpace(string(buf[:n]))
}

// empty stands in for the data pointer of a zero-length buffer: MPI accepts
// any pointer with a count of 0, but some implementations reject NULL.
var empty [1]byte

func ptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return unsafe.Pointer(&empty[0])
	}
	return unsafe.Pointer(&b[0])
}

func flag(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// state reports MPI_Initialized and MPI_Finalized, which MPI allows at any time.
func state() (initialized, finalized bool, err error) {
	var i, f C.int
	if err := check("MPI_Initialized", C.MPI_Initialized(&i)); err != nil {
		return false, false, err
	}
	if err := check("MPI_Finalized", C.MPI_Finalized(&f)); err != nil {
		return false, false, err
	}
	return i != 0, f != 0, nil
}

// initialize calls MPI_Init_thread asking for MPI_THREAD_FUNNELED: the Go
// runtime has other threads, but only the main one (locked by package main)
// calls MPI. gompi.Start would drop MPI_Init's return code.
func initialize() error {
	var provided C.int
	return check("MPI_Init_thread", C.rsag_init(&provided))
}

func errorsReturn() error {
	return check("MPI_Comm_set_errhandler", C.rsag_errors_return())
}

func worldRankSize() (rank, size int) { return gompi.WorldRank(), gompi.WorldSize() }

// handle is an MPI communicator, for the Comm that holds it.
type handle = C.MPI_Comm

func worldHandle() handle { return C.rsag_world() }

// split is MPI_Comm_split of c into the ranks of the same color (a
// negative one: MPI_UNDEFINED, for which ok is false), ordered by
// key; the new communicator returns errors, as the world does.
func (c *Comm) split(color, key int) (h handle, ok bool, err error) {
	out := C.rsag_comm_null()
	if err := check("MPI_Comm_split", C.rsag_split(c.h, C.int(color), C.int(key), &out)); err != nil {
		return out, false, err
	}
	return out, C.rsag_is_null(out) == 0, nil
}

// rankSize is MPI_Comm_rank and MPI_Comm_size of c.
func (c *Comm) rankSize() (rank, size int, err error) {
	var r, s C.int
	if err := check("MPI_Comm_rank", C.MPI_Comm_rank(c.h, &r)); err != nil {
		return 0, 0, err
	}
	if err := check("MPI_Comm_size", C.MPI_Comm_size(c.h, &s)); err != nil {
		return 0, 0, err
	}
	return int(r), int(s), nil
}

// free is MPI_Comm_free.
func (c *Comm) free() error { return check("MPI_Comm_free", C.MPI_Comm_free(&c.h)) }

// gompiWorld is gompi's world communicator, made once, for the typed calls
// rsag takes from gompi.
func (c *Comm) gompiWorld() *gompi.Communicator {
	if c.gompi == nil {
		c.gompi = gompi.NewCommunicator(nil)
	}
	return c.gompi
}

// sharedRankSize returns this process's rank and size within the processes
// that share its memory (its node), ordered by world rank.
func sharedRankSize(worldRank int) (rank, size int, err error) {
	var local C.MPI_Comm
	if err := check("MPI_Comm_split_type", C.rsag_split_shared(C.int(worldRank), &local)); err != nil {
		return 0, 0, err
	}
	var r, s C.int
	err = check("MPI_Comm_rank", C.MPI_Comm_rank(local, &r))
	if err == nil {
		err = check("MPI_Comm_size", C.MPI_Comm_size(local, &s))
	}
	if ferr := check("MPI_Comm_free", C.MPI_Comm_free(&local)); err == nil {
		err = ferr
	}
	return int(r), int(s), err
}

func processorName() (string, error) {
	buf := make([]byte, C.MPI_MAX_PROCESSOR_NAME+1)
	var n C.int
	if err := check("MPI_Get_processor_name", C.MPI_Get_processor_name((*C.char)(unsafe.Pointer(&buf[0])), &n)); err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

func libraryVersion() (string, error) {
	buf := make([]byte, C.MPI_MAX_LIBRARY_VERSION_STRING+1)
	var n C.int
	if err := check("MPI_Get_library_version", C.MPI_Get_library_version((*C.char)(unsafe.Pointer(&buf[0])), &n)); err != nil {
		return "", err
	}
	// Open MPI counts the terminating NUL in n; cut at the first NUL so it
	// never reaches a report.
	v, _, _ := strings.Cut(string(buf[:n]), "\x00")
	return v, nil
}

func finalize() error { return check("MPI_Finalize", C.MPI_Finalize()) }

func abort(code int) { C.rsag_abort(C.int(code)) }

func wtime() float64 { return gompi.WorldTime() }

func (c *Comm) barrier() error { return check("MPI_Barrier", C.rsag_barrier(c.h)) }

func (c *Comm) bcast(buf unsafe.Pointer, count int, dt Datatype, root int) error {
	return check("MPI_Bcast", C.rsag_bcast(c.h, buf, C.int(count), datatypes[dt].handle, C.int(root)))
}

// gather collects count elements from every rank into recv on root.
func (c *Comm) gather(send unsafe.Pointer, count int, recv unsafe.Pointer, dt Datatype, root int) error {
	return check("MPI_Gather", C.rsag_gather(c.h, send, C.int(count), recv, datatypes[dt].handle, C.int(root)))
}

// gatherv collects bytes; counts and displs matter on root only, where they
// have one entry per rank.
func (cm *Comm) gatherv(send []byte, recv []byte, counts, displs []int32, root int) error {
	var c, d *C.int
	if len(counts) > 0 {
		c, d = (*C.int)(unsafe.Pointer(&counts[0])), (*C.int)(unsafe.Pointer(&displs[0]))
	}
	return check("MPI_Gatherv", C.rsag_gatherv(cm.h, ptr(send), C.int(len(send)), ptr(recv), c, d, C.int(root)))
}

func (c *Comm) allgatherv(send []byte, recv []byte, counts, displs []int32) error {
	return check("MPI_Allgatherv", C.rsag_allgatherv(c.h, ptr(send), C.int(len(send)), ptr(recv),
		(*C.int)(unsafe.Pointer(&counts[0])), (*C.int)(unsafe.Pointer(&displs[0]))))
}

func (c *Comm) allgather(send unsafe.Pointer, count int, recv unsafe.Pointer, dt Datatype, inPlace bool, n int) error {
	k := Call{c: c, mpiName: "MPI_Allgather", kind: allgatherKind, send: send, recv: recv, count: count, dt: dt, inPlace: inPlace}
	return k.times(n)
}

func (c *Comm) allreduce(send, recv unsafe.Pointer, count int, dt Datatype, op Op, inPlace bool, n int) error {
	k := Call{c: c, mpiName: "MPI_Allreduce", kind: allreduceKind, send: send, recv: recv, count: count, dt: dt, op: op, inPlace: inPlace}
	return k.times(n)
}

// kinds are rsag_times' cases, by Call kind.
var kinds = [...]C.int{
	allreduceKind:          C.RSAG_ALLREDUCE,
	reduceScatterKind:      C.RSAG_REDUCE_SCATTER,
	reduceScatterMovedKind: C.RSAG_REDUCE_SCATTER_MOVED,
	allgatherKind:          C.RSAG_ALLGATHER,
}

func (k *Call) times(n int) error {
	return check(k.mpiName, C.rsag_times(kinds[k.kind], k.c.h, k.send, k.recv, C.int(k.count), datatypes[k.dt].handle,
		ops[k.op].handle, flag(k.inPlace), C.long(k.offset), C.long(k.bytes), C.int(n)))
}

func (k *Call) samples(batch int, barrier bool, ns []int64, chk SampleCheck, ok []byte, first *[2]int64, got []byte, p *Progress) error {
	var sp *C.longlong
	if len(chk.Spans) > 0 {
		sp = (*C.longlong)(unsafe.Pointer(&chk.Spans[0]))
	}
	return check(k.mpiName, C.rsag_samples(kinds[k.kind], k.c.h, k.send, k.recv, C.int(k.count), datatypes[k.dt].handle,
		ops[k.op].handle, flag(k.inPlace), C.long(k.offset), C.long(k.bytes), C.int(batch), flag(barrier), C.int(len(ns)),
		(*C.longlong)(unsafe.Pointer(&ns[0])), (*C.char)(ptr(chk.Out)), sp, C.int(len(chk.Spans)/3),
		(*C.char)(ptr(chk.Want)), C.int(chk.Elem), (*C.char)(unsafe.Pointer(&ok[0])),
		(*C.longlong)(unsafe.Pointer(&first[0])), (*C.char)(unsafe.Pointer(&got[0])),
		(*C.longlong)(unsafe.Pointer(&p.v[0]))))
}
