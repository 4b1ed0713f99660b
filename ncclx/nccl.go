package ncclx

/*
#include "abi.h"
*/
import "C"

import (
	"fmt"
	"os"
	"unsafe"

	"rsag/coll"
)

// NCCLLibraryEnv names the environment variable that overrides where NCCL is
// loaded from (a path to libnccl.so.2); unset, the loader searches for the
// soname libnccl.so.2 the usual way (LD_LIBRARY_PATH, ld.so.cache).
const NCCLLibraryEnv = "RSAG_NCCL_LIBRARY"

const ncclSoname = "libnccl.so.2"

// uniqueIDBytes is NCCL_UNIQUE_ID_BYTES, the size of ncclUniqueId.
const uniqueIDBytes = 128

// NCCL enum values used here, from nccl.h (NCCL 2.28's src/nccl.h.in; a
// value never changes once NCCL has it).
const (
	ncclSuccess    = 0 // ncclResult_t
	ncclInProgress = 7

	ncclInt8     = 0 // ncclDataType_t
	ncclUint8    = 1
	ncclInt32    = 2
	ncclUint32   = 3
	ncclInt64    = 4
	ncclUint64   = 5
	ncclFloat16  = 6
	ncclFloat32  = 7
	ncclFloat64  = 8
	ncclBfloat16 = 9

	ncclSum  = 0 // ncclRedOp_t
	ncclProd = 1
	ncclMax  = 2
	ncclMin  = 3
	ncclAvg  = 4
)

// NCCL version codes (ncclGetVersion, X*10000 + Y*100 + Z since 2.9) of
// what came after NCCL 2.0 and rsag uses.
const (
	ncclVersionGraphs  = 20900 // 2.9: collectives can be captured into CUDA graphs
	ncclVersionBF16Avg = 21000 // 2.10: ncclBfloat16 and ncclAvg
)

// ncclEnum is one value of an NCCL enum: its number and name in nccl.h, and
// the version code of the first NCCL that has it (0: every NCCL 2).
type ncclEnum struct {
	value int
	name  string
	since int
}

// ncclDTypes and ncclOps map rsag's element types and reductions onto
// NCCL's by name, indexed by coll's constants, whose values are not
// NCCL's. An entry without a name is no mapping.
var (
	ncclDTypes = [...]ncclEnum{
		coll.Int8:     {ncclInt8, "ncclInt8", 0},
		coll.Uint8:    {ncclUint8, "ncclUint8", 0},
		coll.Int32:    {ncclInt32, "ncclInt32", 0},
		coll.Uint32:   {ncclUint32, "ncclUint32", 0},
		coll.Int64:    {ncclInt64, "ncclInt64", 0},
		coll.Uint64:   {ncclUint64, "ncclUint64", 0},
		coll.Float16:  {ncclFloat16, "ncclFloat16", 0},
		coll.BFloat16: {ncclBfloat16, "ncclBfloat16", ncclVersionBF16Avg},
		coll.Float32:  {ncclFloat32, "ncclFloat32", 0},
		coll.Float64:  {ncclFloat64, "ncclFloat64", 0},
	}
	ncclOps = [...]ncclEnum{
		coll.Sum:  {ncclSum, "ncclSum", 0},
		coll.Prod: {ncclProd, "ncclProd", 0},
		coll.Max:  {ncclMax, "ncclMax", 0},
		coll.Min:  {ncclMin, "ncclMin", 0},
		coll.Avg:  {ncclAvg, "ncclAvg", ncclVersionBF16Avg},
	}
)

type (
	ncclComm     = C.ncclComm_t
	ncclDataType = C.ncclDataType_t
	ncclRedOp    = C.ncclRedOp_t
)

// dtypeEnum and opEnum look a type or reduction up; they are on the timed
// path, so they index arrays and copy a small struct.
func dtypeEnum(d coll.DType) (ncclEnum, bool) {
	if d < 0 || int(d) >= len(ncclDTypes) || ncclDTypes[d].name == "" {
		return ncclEnum{}, false
	}
	return ncclDTypes[d], true
}

func opEnum(o coll.Op) (ncclEnum, bool) {
	if o < 0 || int(o) >= len(ncclOps) || ncclOps[o].name == "" {
		return ncclEnum{}, false
	}
	return ncclOps[o], true
}

func ncclDType(d coll.DType) (ncclDataType, bool) {
	e, ok := dtypeEnum(d)
	return ncclDataType(e.value), ok
}

func ncclOp(o coll.Op) (ncclRedOp, bool) {
	e, ok := opEnum(o)
	return ncclRedOp(e.value), ok
}

// ncclSupports says whether NCCL of the given version code (loaded from
// path) runs collectives on d with o, and if not, why and what to do.
func ncclSupports(version int, path string, d coll.DType, o coll.Op) error {
	t, ok := dtypeEnum(d)
	if !ok {
		return fmt.Errorf("the NCCL backend does not know element type %s", d)
	}
	op, ok := opEnum(o)
	if !ok {
		return fmt.Errorf("the NCCL backend does not know reduction %s", o)
	}
	for _, c := range []struct {
		e    ncclEnum
		what string
		drop string
	}{{t, "run collectives on " + d.String(), d.String()}, {op, "reduce with " + o.String(), o.String()}} {
		if version < c.e.since {
			return fmt.Errorf("NCCL %s (%s) cannot %s: %s came with NCCL %s; load NCCL %s or newer (%s=/path/to/libnccl.so.2) or drop %s",
				formatNCCLVersion(version), path, c.what, c.e.name, shortVersion(c.e.since), shortVersion(c.e.since), NCCLLibraryEnv, c.drop)
		}
	}
	return nil
}

// shortVersion writes a feature's version code as major.minor (21000 -> 2.10).
func shortVersion(code int) string { return fmt.Sprintf("%d.%d", code/10000, code%10000/100) }

// ncclAPI is NCCL's function table, filled by dlsym at load.
type ncclAPI struct {
	lib  *library
	path string

	getVersion, getUniqueID, commInitRank, commDestroy, commAbort unsafe.Pointer
	commGetAsyncError, getErrorString, getLastError               unsafe.Pointer
	commCount, commUserRank                                       unsafe.Pointer
	colls                                                         [numColls]unsafe.Pointer // indexed by collective.index

	// What came after NCCL 2.0 and only the fast paths and the splits use:
	// optional, so that an older NCCL still loads (see laterSymbols).
	commInitRankConfig, commSplit, memAlloc, memFree               unsafe.Pointer
	commRegister, commDeregister, windowRegister, windowDeregister unsafe.Pointer
}

// laterSymbol is an optional NCCL symbol and the version code of the first
// NCCL that has it (nccl.h of each release).
type laterSymbol struct {
	name  string
	ptr   func(n *ncclAPI) *unsafe.Pointer
	since int
}

var laterSymbols = []laterSymbol{
	{"ncclCommInitRankConfig", func(n *ncclAPI) *unsafe.Pointer { return &n.commInitRankConfig }, 21400},
	{"ncclCommSplit", func(n *ncclAPI) *unsafe.Pointer { return &n.commSplit }, 21800},
	{"ncclMemAlloc", func(n *ncclAPI) *unsafe.Pointer { return &n.memAlloc }, 21900},
	{"ncclMemFree", func(n *ncclAPI) *unsafe.Pointer { return &n.memFree }, 21900},
	{"ncclCommRegister", func(n *ncclAPI) *unsafe.Pointer { return &n.commRegister }, 21900},
	{"ncclCommDeregister", func(n *ncclAPI) *unsafe.Pointer { return &n.commDeregister }, 21900},
	{"ncclCommWindowRegister", func(n *ncclAPI) *unsafe.Pointer { return &n.windowRegister }, 22700},
	{"ncclCommWindowDeregister", func(n *ncclAPI) *unsafe.Pointer { return &n.windowDeregister }, 22700},
}

func (n *ncclAPI) table() []symbol {
	t := []symbol{
		sym(&n.getVersion, "ncclGetVersion"),
		sym(&n.getUniqueID, "ncclGetUniqueId"),
		sym(&n.commInitRank, "ncclCommInitRank"),
		sym(&n.commDestroy, "ncclCommDestroy"),
		sym(&n.commAbort, "ncclCommAbort"),
		sym(&n.commGetAsyncError, "ncclCommGetAsyncError"),
		sym(&n.getErrorString, "ncclGetErrorString"),
		sym(&n.commCount, "ncclCommCount"),
		sym(&n.commUserRank, "ncclCommUserRank"),
		// ncclGetLastError came with NCCL 2.13; without it errors carry only
		// ncclGetErrorString's text.
		{names: []string{"ncclGetLastError"}, ptr: &n.getLastError, optional: true},
	}
	for _, c := range collectives {
		t = append(t, sym(&n.colls[c.index], c.symbol))
	}
	for _, l := range laterSymbols {
		t = append(t, symbol{names: []string{l.name}, ptr: l.ptr(n), optional: true})
	}
	return t
}

// lacks returns nil when NCCL has every symbol named, and otherwise an
// error naming the first it lacks and the NCCL that brought it.
func (n *ncclAPI) lacks(names ...string) error {
	for _, name := range names {
		for _, l := range laterSymbols {
			if l.name == name && *l.ptr(n) == nil {
				return fmt.Errorf("%s lacks %s, which came with NCCL %s", n.path, name, shortVersion(l.since))
			}
		}
	}
	return nil
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

// collOn queues collective c on s. It is the hot path: one cgo call, no
// allocation unless NCCL fails.
func (n *ncclAPI) collOn(c *collective, send, recv devPtr, count int, t C.ncclDataType_t, op C.ncclRedOp_t, comm ncclComm, s cuStream) error {
	var reduces C.int
	if c.reduces {
		reduces = 1
	}
	if r := C.call_ncclColl(n.colls[c.index], reduces, send, recv, C.size_t(count), t, op, comm, s); r != ncclSuccess {
		return n.newError(c.symbol, int(r), comm)
	}
	return nil
}

// ncclWinCollSymmetric is NCCL_WIN_COLL_SYMMETRIC: every rank's buffer is
// at the same offset of its window in the collectives that use it.
const ncclWinCollSymmetric = 0x01

// ncclWinRequiredAlignment is NCCL_WIN_REQUIRED_ALIGNMENT, the alignment
// ncclCommWindowRegister needs of a window's address.
const ncclWinRequiredAlignment = 4096

func (n *ncclAPI) initRankConfig(world int, id *[uniqueIDBytes]byte, rank int, cfg *C.rsag_ncclConfig) (ncclComm, error) {
	var comm C.ncclComm_t
	r := C.call_ncclCommInitRankConfig(n.commInitRankConfig, &comm, C.int(world), unsafe.Pointer(&id[0]), C.int(rank), cfg)
	return comm, n.check("ncclCommInitRankConfig", r, nil)
}

// ncclSplitNoColor is NCCL_SPLIT_NOCOLOR: the rank takes part in
// ncclCommSplit and gets no communicator (NULL).
const ncclSplitNoColor = -1

// split is ncclCommSplit; cfg nil inherits parent's config.
func (n *ncclAPI) split(parent ncclComm, color, key int, cfg *C.rsag_ncclConfig) (ncclComm, error) {
	var comm C.ncclComm_t
	r := C.call_ncclCommSplit(n.commSplit, parent, C.int(color), C.int(key), &comm, cfg)
	return comm, n.check("ncclCommSplit", r, parent)
}

// countAndRank are the size of comm's group and this rank in it.
func (n *ncclAPI) countAndRank(comm ncclComm) (size, rank int, err error) {
	var s, r C.int
	if err = n.check("ncclCommCount", C.call_ncclCommInt(n.commCount, comm, &s), comm); err != nil {
		return 0, 0, err
	}
	err = n.check("ncclCommUserRank", C.call_ncclCommInt(n.commUserRank, comm, &r), comm)
	return int(s), int(r), err
}

func (n *ncclAPI) memAllocate(size int64) (devPtr, error) {
	var p C.CUdeviceptr
	err := n.check("ncclMemAlloc", C.call_ncclMemAlloc(n.memAlloc, &p, C.size_t(size)), nil)
	return p, err
}

func (n *ncclAPI) memRelease(p devPtr) error {
	return n.check("ncclMemFree", C.call_ncclMemFree(n.memFree, p), nil)
}

func (n *ncclAPI) register(comm ncclComm, p devPtr, size int64) (unsafe.Pointer, error) {
	var h unsafe.Pointer
	err := n.check("ncclCommRegister", C.call_ncclCommRegister(n.commRegister, comm, p, C.size_t(size), &h), comm)
	return h, err
}

func (n *ncclAPI) deregister(comm ncclComm, h unsafe.Pointer) error {
	return n.check("ncclCommDeregister", C.call_ncclCommDeregister(n.commDeregister, comm, h), comm)
}

func (n *ncclAPI) registerWindow(comm ncclComm, p devPtr, size int64) (unsafe.Pointer, error) {
	var w C.ncclWindow_t
	r := C.call_ncclCommWindowRegister(n.windowRegister, comm, p, C.size_t(size), &w, ncclWinCollSymmetric)
	return unsafe.Pointer(w), n.check("ncclCommWindowRegister", r, comm)
}

func (n *ncclAPI) deregisterWindow(comm ncclComm, w unsafe.Pointer) error {
	return n.check("ncclCommWindowDeregister", C.call_ncclCommWindowDeregister(n.windowDeregister, comm, C.ncclWindow_t(w)), comm)
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
