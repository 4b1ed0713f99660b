package ncclx

/*
#include "abi.h"
*/
import "C"

import (
	"fmt"
	"os"
	"unsafe"

	"rsag/phases"
)

// NCCLLibraryEnv names the environment variable that overrides where NCCL is
// loaded from (a path to libnccl.so.2); unset, the loader searches for the
// soname libnccl.so.2 the usual way (LD_LIBRARY_PATH, ld.so.cache).
const NCCLLibraryEnv = "RSAG_NCCL_LIBRARY"

const ncclSoname = "libnccl.so.2"

// uniqueIDBytes is NCCL_UNIQUE_ID_BYTES, the size of ncclUniqueId.
const uniqueIDBytes = 128

// NCCL enum values used here (nccl.h, NCCL 2.28).
const (
	ncclSuccess    = 0 // ncclResult_t
	ncclInProgress = 7

	ncclInt64   = 4 // ncclDataType_t
	ncclFloat32 = 7

	ncclSum = 0 // ncclRedOp_t
	ncclMax = 2
)

// ncclDTypes and ncclOps map rsag's types onto NCCL's; -1 is "no mapping".
var (
	ncclDTypes = [...]int{phases.Int64: ncclInt64, phases.Float32: ncclFloat32}
	ncclOps    = [...]int{phases.Sum: ncclSum, phases.Max: ncclMax}
)

type (
	ncclComm     = C.ncclComm_t
	ncclDataType = C.ncclDataType_t
	ncclRedOp    = C.ncclRedOp_t
)

func ncclDType(d phases.DType) (ncclDataType, bool) {
	if d < 0 || int(d) >= len(ncclDTypes) {
		return 0, false
	}
	return ncclDataType(ncclDTypes[d]), true
}

func ncclOp(o phases.Op) (ncclRedOp, bool) {
	if o < 0 || int(o) >= len(ncclOps) {
		return 0, false
	}
	return ncclRedOp(ncclOps[o]), true
}

// ncclAPI is NCCL's function table, filled by dlsym at load.
type ncclAPI struct {
	lib  *library
	path string

	getVersion, getUniqueID, commInitRank, commDestroy, commAbort unsafe.Pointer
	commGetAsyncError, allReduce, reduceScatter, allGather        unsafe.Pointer
	getErrorString, getLastError                                  unsafe.Pointer
}

func (n *ncclAPI) table() []symbol {
	return []symbol{
		sym(&n.getVersion, "ncclGetVersion"),
		sym(&n.getUniqueID, "ncclGetUniqueId"),
		sym(&n.commInitRank, "ncclCommInitRank"),
		sym(&n.commDestroy, "ncclCommDestroy"),
		sym(&n.commAbort, "ncclCommAbort"),
		sym(&n.commGetAsyncError, "ncclCommGetAsyncError"),
		sym(&n.allReduce, "ncclAllReduce"),
		sym(&n.reduceScatter, "ncclReduceScatter"),
		sym(&n.allGather, "ncclAllGather"),
		sym(&n.getErrorString, "ncclGetErrorString"),
		// ncclGetLastError came with NCCL 2.13; without it errors carry only
		// ncclGetErrorString's text.
		{names: []string{"ncclGetLastError"}, ptr: &n.getLastError, optional: true},
	}
}

// loadNCCL opens NCCL from $RSAG_NCCL_LIBRARY or the soname libnccl.so.2.
func loadNCCL() (*ncclAPI, error) {
	name, hint := ncclSoname, fmt.Sprintf("install NCCL 2 (e.g. the libnccl2 package, or pip's nvidia-nccl-cu13) "+
		"and put its lib directory on LD_LIBRARY_PATH, or set %s=/path/to/libnccl.so.2", NCCLLibraryEnv)
	if p := os.Getenv(NCCLLibraryEnv); p != "" {
		name = p
		hint = fmt.Sprintf("%s=%s: point it at an existing libnccl.so.2, or unset it to search the loader path",
			NCCLLibraryEnv, p)
	}
	lib, err := dlopen("nccl", name)
	if err != nil {
		err.(*LoadError).Hint = hint
		return nil, err
	}
	n := &ncclAPI{lib: lib}
	t := n.table()
	if err := lib.bind(t); err != nil {
		err.(*LoadError).Hint = "this is not NCCL 2, or it is too old"
		return nil, err
	}
	n.path = lib.path(t)
	return n, nil
}

// check turns an ncclResult_t into nil or an *Error holding NCCL's own text:
// ncclGetErrorString's, and ncclGetLastError's detail for comm (may be nil).
func (n *ncclAPI) check(op string, r C.ncclResult_t, comm ncclComm) error {
	if r == ncclSuccess {
		return nil
	}
	return n.newError(op, int(r), comm)
}

func (n *ncclAPI) newError(op string, code int, comm ncclComm) *Error {
	e := &Error{Lib: "nccl", Op: op, Code: code, Name: NCCLResult(code).String()}
	var text, last string
	if n != nil && n.getErrorString != nil {
		if s := C.call_ncclGetErrorString(n.getErrorString, C.ncclResult_t(code)); s != nil {
			text = C.GoString(s)
		}
	} else if code >= 0 && code < len(ncclResultText) {
		text = ncclResultText[code]
	}
	if n != nil && n.getLastError != nil {
		if s := C.call_ncclGetLastError(n.getLastError, comm); s != nil {
			last = C.GoString(s)
		}
	}
	e.Msg = joinNonEmpty(": ", text, last)
	return e
}

func (n *ncclAPI) version() (int, error) {
	var v C.int
	err := n.check("ncclGetVersion", C.call_ncclGetVersion(n.getVersion, &v), nil)
	return int(v), err
}

func (n *ncclAPI) uniqueID(id *[uniqueIDBytes]byte) error {
	return n.check("ncclGetUniqueId", C.call_ncclGetUniqueId(n.getUniqueID, unsafe.Pointer(&id[0])), nil)
}

func (n *ncclAPI) initRank(world int, id *[uniqueIDBytes]byte, rank int) (ncclComm, error) {
	var comm C.ncclComm_t
	r := C.call_ncclCommInitRank(n.commInitRank, &comm, C.int(world), unsafe.Pointer(&id[0]), C.int(rank))
	return comm, n.check("ncclCommInitRank", r, nil)
}

func (n *ncclAPI) destroy(comm ncclComm) error {
	return n.check("ncclCommDestroy", C.call_ncclCommOp(n.commDestroy, comm), nil)
}

func (n *ncclAPI) abort(comm ncclComm) error {
	return n.check("ncclCommAbort", C.call_ncclCommOp(n.commAbort, comm), nil)
}

// asyncError returns the communicator's asynchronous error (a failed peer,
// a network error), nil when there is none. ncclInProgress is not an error:
// a non-blocking communicator reports it while an operation is under way.
func (n *ncclAPI) asyncError(comm ncclComm) error {
	var r C.ncclResult_t
	if err := n.check("ncclCommGetAsyncError", C.call_ncclCommGetAsyncError(n.commGetAsyncError, comm, &r), comm); err != nil {
		return err
	}
	if r == ncclInProgress {
		return nil
	}
	return n.check("ncclCommGetAsyncError", r, comm)
}

// The collectives queue one NCCL call on s. They are the hot path: one cgo
// call, no allocation unless NCCL fails.

func (n *ncclAPI) allReduceOn(send, recv devPtr, count int, t C.ncclDataType_t, op C.ncclRedOp_t, comm ncclComm, s cuStream) error {
	if r := C.call_ncclReduceOp(n.allReduce, send, recv, C.size_t(count), t, op, comm, s); r != ncclSuccess {
		return n.newError("ncclAllReduce", int(r), comm)
	}
	return nil
}

func (n *ncclAPI) reduceScatterOn(send, recv devPtr, recvCount int, t C.ncclDataType_t, op C.ncclRedOp_t, comm ncclComm, s cuStream) error {
	if r := C.call_ncclReduceOp(n.reduceScatter, send, recv, C.size_t(recvCount), t, op, comm, s); r != ncclSuccess {
		return n.newError("ncclReduceScatter", int(r), comm)
	}
	return nil
}

func (n *ncclAPI) allGatherOn(send, recv devPtr, sendCount int, t C.ncclDataType_t, comm ncclComm, s cuStream) error {
	if r := C.call_ncclAllGather(n.allGather, send, recv, C.size_t(sendCount), t, comm, s); r != ncclSuccess {
		return n.newError("ncclAllGather", int(r), comm)
	}
	return nil
}

// formatNCCLVersion writes ncclGetVersion's code as major.minor.patch. NCCL
// encodes X.Y.Z as X*10000 + Y*100 + Z from 2.9 on, and as X*1000 + Y*100 + Z
// before (nccl.h's NCCL_VERSION); old codes are all below 10000.
func formatNCCLVersion(code int) string {
	if code < 10000 {
		return fmt.Sprintf("%d.%d.%d", code/1000, code%1000/100, code%100)
	}
	return fmt.Sprintf("%d.%d.%d", code/10000, code%10000/100, code%100)
}
