/*
 * abi.h: rsag's own declarations of the few CUDA driver and NCCL types and
 * calls that package ncclx uses, so that building needs neither cuda.h nor
 * nccl.h. Written by hand against the documented ABI of CUDA 13 (cuda.h) and
 * NCCL 2.28 (nccl.h); every call goes through a function pointer found with
 * dlsym, via one trampoline per call (no symbol is resolved by the linker).
 *
 * All enums below are plain C enums whose values fit in int, so on the 64-bit
 * Linux ABIs (x86-64, aarch64) they are passed as int.
 */
#ifndef RSAG_NCCLX_ABI_H
#define RSAG_NCCLX_ABI_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

/* CUDA driver API (cuda.h). */
typedef int CUresult;                   /* enum cudaError_enum; 0 is CUDA_SUCCESS */
typedef int CUdevice;                   /* CUdevice_v1 */
typedef unsigned long long CUdeviceptr; /* CUdeviceptr_v2: 64-bit device address */
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef int CUstreamCaptureMode; /* enum CUstreamCaptureMode_enum: GLOBAL 0, THREAD_LOCAL 1, RELAXED 2 */

/* CUmemAllocationProp (CUDA 10.2 and later): the properties
 * cuMemGetAllocationGranularity is asked about, as ncclMemAlloc asks. 32
 * bytes on LP64: type 0, requestedHandleTypes 4, location 8 (type 8, id 12),
 * win32HandleMetaData 16, allocFlags 24. */
typedef struct {
	int type;                 /* CUmemAllocationType: CU_MEM_ALLOCATION_TYPE_PINNED 1 */
	int requestedHandleTypes; /* CUmemAllocationHandleType: POSIX_FILE_DESCRIPTOR 1 */
	struct {
		int type; /* CUmemLocationType: CU_MEM_LOCATION_TYPE_DEVICE 1 */
		int id;   /* the device ordinal */
	} location;
	void *win32HandleMetaData;
	struct {
		unsigned char compressionType;
		unsigned char gpuDirectRDMACapable;
		unsigned short usage;
		unsigned char reserved[4];
	} allocFlags;
} rsag_CUmemAllocationProp;

/* NCCL (nccl.h). cudaStream_t is the same handle as CUstream. */
typedef int ncclResult_t;   /* 0 is ncclSuccess */
typedef int ncclDataType_t; /* ncclInt8 = 0 ... ncclBfloat16 = 9: nccl.go's table */
typedef int ncclRedOp_t;    /* ncclSum = 0, ncclProd, ncclMax, ncclMin, ncclAvg = 4 */
typedef struct ncclComm *ncclComm_t;
typedef struct { char internal[128]; } ncclUniqueId; /* NCCL_UNIQUE_ID_BYTES */
typedef struct ncclWindow_vidmem *ncclWindow_t; /* NCCL 2.27 and later */

/* ncclConfig_t as NCCL 2.28's nccl.h has it (struct ncclConfig_v22800).
 * NCCL copies min(size, its own sizeof) bytes over its
 * NCCL_CONFIG_INITIALIZER and ignores the fields that came after version,
 * so this prefix is right for NCCL 2.28 and later, and NCCL 2.27 reads the
 * first 72 bytes. On LP64 the offsets are: size 0, magic 8, version 12,
 * blocking 16, cgaClusterSize 20, minCTAs 24, maxCTAs 28, netName 32,
 * splitShare 40, trafficClass 44, commName 48, collnetEnable 56,
 * CTAPolicy 60, shrinkShare 64, nvlsCTAs 68, nChannelsPerNetPeer 72,
 * nvlinkCentricSched 76; 80 bytes in all (config.go tests them). */
typedef struct {
	size_t size;
	unsigned int magic;
	unsigned int version;
	int blocking;
	int cgaClusterSize;
	int minCTAs;
	int maxCTAs;
	const char *netName;
	int splitShare;
	int trafficClass;
	const char *commName;
	int collnetEnable;
	int CTAPolicy; /* NCCL 2.27 */
	int shrinkShare;
	int nvlsCTAs;
	int nChannelsPerNetPeer; /* NCCL 2.28 */
	int nvlinkCentricSched;
} rsag_ncclConfig;

#define RSAG_NCCL_CONFIG_MAGIC 0xcafebeefu /* NCCL_CONFIG_INITIALIZER's magic */
#define RSAG_NCCL_CONFIG_VERSION 22800     /* NCCL_VERSION(2, 28, 0): the layout above */
#define RSAG_NCCL_UNDEF_INT INT_MIN        /* NCCL_CONFIG_UNDEF_INT */

/* rsag_nccl_config_init does what NCCL_CONFIG_INITIALIZER does: size, magic
 * and version, and every other field undefined, so NCCL takes its default. */
static inline void rsag_nccl_config_init(rsag_ncclConfig *c) {
	c->size = sizeof *c;
	c->magic = RSAG_NCCL_CONFIG_MAGIC;
	c->version = RSAG_NCCL_CONFIG_VERSION;
	c->blocking = c->cgaClusterSize = c->minCTAs = c->maxCTAs = RSAG_NCCL_UNDEF_INT;
	c->netName = NULL;
	c->splitShare = c->trafficClass = RSAG_NCCL_UNDEF_INT;
	c->commName = NULL;
	c->collnetEnable = c->CTAPolicy = c->shrinkShare = c->nvlsCTAs = RSAG_NCCL_UNDEF_INT;
	c->nChannelsPerNetPeer = c->nvlinkCentricSched = RSAG_NCCL_UNDEF_INT;
}

/* Trampolines: f is the address dlsym returned for the name in the comment. */

/* cuGetErrorName, cuGetErrorString */
static inline CUresult call_cuGetErrorText(void *f, CUresult r, const char **s) { return ((CUresult (*)(CUresult, const char **))f)(r, s); }
/* cuInit */
static inline CUresult call_cuInit(void *f, unsigned int flags) { return ((CUresult (*)(unsigned int))f)(flags); }
/* cuDriverGetVersion, cuDeviceGetCount */
static inline CUresult call_cuGetInt(void *f, int *v) { return ((CUresult (*)(int *))f)(v); }
/* cuDeviceGet */
static inline CUresult call_cuDeviceGet(void *f, CUdevice *d, int ordinal) { return ((CUresult (*)(CUdevice *, int))f)(d, ordinal); }
/* cuDeviceGetName, cuDeviceGetPCIBusId */
static inline CUresult call_cuDeviceGetString(void *f, char *s, int len, CUdevice d) { return ((CUresult (*)(char *, int, CUdevice))f)(s, len, d); }
/* cuDevicePrimaryCtxRetain */
static inline CUresult call_cuDevicePrimaryCtxRetain(void *f, CUcontext *c, CUdevice d) { return ((CUresult (*)(CUcontext *, CUdevice))f)(c, d); }
/* cuDevicePrimaryCtxRelease_v2 */
static inline CUresult call_cuDevicePrimaryCtxRelease(void *f, CUdevice d) { return ((CUresult (*)(CUdevice))f)(d); }
/* cuCtxSetCurrent */
static inline CUresult call_cuCtxSetCurrent(void *f, CUcontext c) { return ((CUresult (*)(CUcontext))f)(c); }
/* cuCtxSynchronize */
static inline CUresult call_cuCtxSynchronize(void *f) { return ((CUresult (*)(void))f)(); }
/* cuMemGetInfo_v2 */
static inline CUresult call_cuMemGetInfo(void *f, size_t *free_, size_t *total) { return ((CUresult (*)(size_t *, size_t *))f)(free_, total); }
/* cuMemAlloc_v2 */
static inline CUresult call_cuMemAlloc(void *f, CUdeviceptr *p, size_t n) { return ((CUresult (*)(CUdeviceptr *, size_t))f)(p, n); }
/* cuMemFree_v2 */
static inline CUresult call_cuMemFree(void *f, CUdeviceptr p) { return ((CUresult (*)(CUdeviceptr))f)(p); }
/* cuMemAllocHost_v2 */
static inline CUresult call_cuMemAllocHost(void *f, void **p, size_t n) { return ((CUresult (*)(void **, size_t))f)(p, n); }
/* cuMemFreeHost */
static inline CUresult call_cuMemFreeHost(void *f, void *p) { return ((CUresult (*)(void *))f)(p); }
/* cuMemcpyDtoDAsync_v2 */
static inline CUresult call_cuMemcpyDtoDAsync(void *f, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) { return ((CUresult (*)(CUdeviceptr, CUdeviceptr, size_t, CUstream))f)(dst, src, n, s); }
/* cuMemcpyHtoDAsync_v2 */
static inline CUresult call_cuMemcpyHtoDAsync(void *f, CUdeviceptr dst, const void *src, size_t n, CUstream s) { return ((CUresult (*)(CUdeviceptr, const void *, size_t, CUstream))f)(dst, src, n, s); }
/* cuMemcpyDtoHAsync_v2 */
static inline CUresult call_cuMemcpyDtoHAsync(void *f, void *dst, CUdeviceptr src, size_t n, CUstream s) { return ((CUresult (*)(void *, CUdeviceptr, size_t, CUstream))f)(dst, src, n, s); }
/* cuMemsetD8Async */
static inline CUresult call_cuMemsetD8Async(void *f, CUdeviceptr dst, unsigned char v, size_t n, CUstream s) { return ((CUresult (*)(CUdeviceptr, unsigned char, size_t, CUstream))f)(dst, v, n, s); }
/* cuMemsetD16Async */
static inline CUresult call_cuMemsetD16Async(void *f, CUdeviceptr dst, unsigned short v, size_t n, CUstream s) { return ((CUresult (*)(CUdeviceptr, unsigned short, size_t, CUstream))f)(dst, v, n, s); }
/* cuMemsetD32Async */
static inline CUresult call_cuMemsetD32Async(void *f, CUdeviceptr dst, unsigned int v, size_t n, CUstream s) { return ((CUresult (*)(CUdeviceptr, unsigned int, size_t, CUstream))f)(dst, v, n, s); }
/* cuStreamCreate */
static inline CUresult call_cuStreamCreate(void *f, CUstream *s, unsigned int flags) { return ((CUresult (*)(CUstream *, unsigned int))f)(s, flags); }
/* cuStreamDestroy_v2 */
static inline CUresult call_cuStreamOp(void *f, CUstream s) { return ((CUresult (*)(CUstream))f)(s); }
/* cuEventCreate */
static inline CUresult call_cuEventCreate(void *f, CUevent *e, unsigned int flags) { return ((CUresult (*)(CUevent *, unsigned int))f)(e, flags); }
/* cuEventRecord */
static inline CUresult call_cuEventRecord(void *f, CUevent e, CUstream s) { return ((CUresult (*)(CUevent, CUstream))f)(e, s); }
/* cuEventDestroy_v2 */
static inline CUresult call_cuEventOp(void *f, CUevent e) { return ((CUresult (*)(CUevent))f)(e); }
/* cuStreamSynchronize, cuStreamQuery, cuEventSynchronize, cuEventQuery: a
 * CUstream and a CUevent are both one pointer, passed alike. */
static inline CUresult call_cuWaitOp(void *f, void *h) { return ((CUresult (*)(void *))f)(h); }
/* cuMemGetAllocationGranularity; flags is CUmemAllocationGranularity_flags (RECOMMENDED 1) */
static inline CUresult call_cuMemGetAllocationGranularity(void *f, size_t *g, const rsag_CUmemAllocationProp *p, int flags) {
	return ((CUresult (*)(size_t *, const rsag_CUmemAllocationProp *, int))f)(g, p, flags);
}
/* cuEventElapsedTime_v2 (or cuEventElapsedTime before CUDA 12.8) */
static inline CUresult call_cuEventElapsedTime(void *f, float *ms, CUevent a, CUevent b) { return ((CUresult (*)(float *, CUevent, CUevent))f)(ms, a, b); }

/* cuStreamBeginCapture_v2 (cuda.h maps cuStreamBeginCapture to it) */
static inline CUresult call_cuStreamBeginCapture(void *f, CUstream s, CUstreamCaptureMode mode) { return ((CUresult (*)(CUstream, CUstreamCaptureMode))f)(s, mode); }
/* cuStreamEndCapture */
static inline CUresult call_cuStreamEndCapture(void *f, CUstream s, CUgraph *g) { return ((CUresult (*)(CUstream, CUgraph *))f)(s, g); }
/* cuGraphInstantiateWithFlags (CUDA 12's cuda.h maps cuGraphInstantiate to it) */
static inline CUresult call_cuGraphInstantiateWithFlags(void *f, CUgraphExec *e, CUgraph g, unsigned long long flags) { return ((CUresult (*)(CUgraphExec *, CUgraph, unsigned long long))f)(e, g, flags); }
/* cuGraphLaunch */
static inline CUresult call_cuGraphLaunch(void *f, CUgraphExec e, CUstream s) { return ((CUresult (*)(CUgraphExec, CUstream))f)(e, s); }
/* cuGraphExecDestroy */
static inline CUresult call_cuGraphExecDestroy(void *f, CUgraphExec e) { return ((CUresult (*)(CUgraphExec))f)(e); }
/* cuGraphDestroy */
static inline CUresult call_cuGraphDestroy(void *f, CUgraph g) { return ((CUresult (*)(CUgraph))f)(g); }

/* ncclGetVersion */
static inline ncclResult_t call_ncclGetVersion(void *f, int *v) { return ((ncclResult_t (*)(int *))f)(v); }
/* ncclGetUniqueId: writes the 128 bytes of the id to out. */
static inline ncclResult_t call_ncclGetUniqueId(void *f, void *out) { return ((ncclResult_t (*)(ncclUniqueId *))f)((ncclUniqueId *)out); }
/* ncclCommInitRank: the id is passed by value, as nccl.h declares it. */
static inline ncclResult_t call_ncclCommInitRank(void *f, ncclComm_t *c, int nranks, const void *id, int rank) {
	ncclUniqueId v;
	const char *p = (const char *)id;
	for (int i = 0; i < (int)sizeof v.internal; i++) v.internal[i] = p[i];
	return ((ncclResult_t (*)(ncclComm_t *, int, ncclUniqueId, int))f)(c, nranks, v, rank);
}
/* ncclCommDestroy, ncclCommAbort */
static inline ncclResult_t call_ncclCommOp(void *f, ncclComm_t c) { return ((ncclResult_t (*)(ncclComm_t))f)(c); }
/* ncclCommCount, ncclCommUserRank */
static inline ncclResult_t call_ncclCommInt(void *f, ncclComm_t c, int *v) { return ((ncclResult_t (*)(ncclComm_t, int *))f)(c, v); }
/* ncclCommGetAsyncError */
static inline ncclResult_t call_ncclCommGetAsyncError(void *f, ncclComm_t c, ncclResult_t *r) { return ((ncclResult_t (*)(ncclComm_t, ncclResult_t *))f)(c, r); }
/* ncclAllReduce (count) and ncclReduceScatter (recvcount) when reduces is
 * set; ncclAllGather (sendcount), which takes no reduction, when not. */
static inline ncclResult_t call_ncclColl(void *f, int reduces, CUdeviceptr send, CUdeviceptr recv, size_t count, ncclDataType_t t, ncclRedOp_t op, ncclComm_t c, CUstream s) {
	const void *in = (const void *)(uintptr_t)send;
	void *out = (void *)(uintptr_t)recv;
	if (reduces)
		return ((ncclResult_t (*)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, CUstream))f)(in, out, count, t, op, c, s);
	return ((ncclResult_t (*)(const void *, void *, size_t, ncclDataType_t, ncclComm_t, CUstream))f)(in, out, count, t, c, s);
}
/* ncclCommInitRankConfig (NCCL 2.14): ncclCommInitRank with a config. */
static inline ncclResult_t call_ncclCommInitRankConfig(void *f, ncclComm_t *c, int nranks, const void *id, int rank, rsag_ncclConfig *cfg) {
	ncclUniqueId v;
	const char *p = (const char *)id;
	for (int i = 0; i < (int)sizeof v.internal; i++) v.internal[i] = p[i];
	return ((ncclResult_t (*)(ncclComm_t *, int, ncclUniqueId, int, rsag_ncclConfig *))f)(c, nranks, v, rank, cfg);
}
/* ncclCommSplit (NCCL 2.18); cfg NULL inherits the parent's config. */
static inline ncclResult_t call_ncclCommSplit(void *f, ncclComm_t c, int color, int key, ncclComm_t *out, rsag_ncclConfig *cfg) {
	return ((ncclResult_t (*)(ncclComm_t, int, int, ncclComm_t *, rsag_ncclConfig *))f)(c, color, key, out, cfg);
}
/* ncclMemAlloc (NCCL 2.19): device memory from the CUDA VMM API. */
static inline ncclResult_t call_ncclMemAlloc(void *f, CUdeviceptr *p, size_t n) {
	void *v = NULL;
	ncclResult_t r = ((ncclResult_t (*)(void **, size_t))f)(&v, n);
	*p = (CUdeviceptr)(uintptr_t)v;
	return r;
}
/* ncclMemFree (NCCL 2.19) */
static inline ncclResult_t call_ncclMemFree(void *f, CUdeviceptr p) { return ((ncclResult_t (*)(void *))f)((void *)(uintptr_t)p); }
/* ncclCommRegister (NCCL 2.19) */
static inline ncclResult_t call_ncclCommRegister(void *f, ncclComm_t c, CUdeviceptr p, size_t n, void **handle) {
	return ((ncclResult_t (*)(ncclComm_t, void *, size_t, void **))f)(c, (void *)(uintptr_t)p, n, handle);
}
/* ncclCommDeregister (NCCL 2.19) */
static inline ncclResult_t call_ncclCommDeregister(void *f, ncclComm_t c, void *handle) { return ((ncclResult_t (*)(ncclComm_t, void *))f)(c, handle); }
/* ncclCommWindowRegister (NCCL 2.27); flags: NCCL_WIN_COLL_SYMMETRIC 0x01 */
static inline ncclResult_t call_ncclCommWindowRegister(void *f, ncclComm_t c, CUdeviceptr p, size_t n, ncclWindow_t *win, int flags) {
	return ((ncclResult_t (*)(ncclComm_t, void *, size_t, ncclWindow_t *, int))f)(c, (void *)(uintptr_t)p, n, win, flags);
}
/* ncclCommWindowDeregister (NCCL 2.27) */
static inline ncclResult_t call_ncclCommWindowDeregister(void *f, ncclComm_t c, ncclWindow_t win) { return ((ncclResult_t (*)(ncclComm_t, ncclWindow_t))f)(c, win); }
/* ncclGetErrorString */
static inline const char *call_ncclGetErrorString(void *f, ncclResult_t r) { return ((const char *(*)(ncclResult_t))f)(r); }
/* ncclGetLastError */
static inline const char *call_ncclGetLastError(void *f, ncclComm_t c) { return ((const char *(*)(ncclComm_t))f)(c); }

#endif
