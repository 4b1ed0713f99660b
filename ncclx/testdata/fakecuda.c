/*
 * A fake CUDA driver for ncclx's tests: "device memory" is host memory and
 * events read the host clock. It exports the symbols ncclx binds, with the
 * ABI of abi.h. Environment knobs (read at call time):
 *   RSAG_FAKE_CUDA_DEVICES  device count (default 1)
 *   RSAG_FAKE_CUDA_VISIBLE  the devices a rank sees, as CUDA_VISIBLE_DEVICES
 *                           lists them ("2" or "0,1"): ordinals into them map
 *                           to those devices, whose names and bus ids stay
 *                           theirs. RSAG_FAKE_CUDA_VISIBLE_<tid> is one
 *                           thread's own, standing in for the variable a
 *                           launcher sets per process (srun --gpus-per-task)
 *   RSAG_FAKE_CUDA_INIT     the CUresult cuInit returns (default 0)
 *   RSAG_FAKE_CUDA_HANG     1: queued work never finishes (cuStreamQuery and
 *                           cuEventQuery say CUDA_ERROR_NOT_READY), like a
 *                           collective whose peer never arrives
 *   RSAG_FAKE_CUDA_INSTANTIATE  the CUresult cuGraphInstantiateWithFlags
 *                           returns (default 0)
 *   RSAG_FAKE_CUDA_GRANULARITY  what cuMemGetAllocationGranularity gives
 *                           (default 2 MiB); built with -DOMIT_GRANULARITY
 *                           the driver lacks that symbol
 *   RSAG_FAKE_LOG           the call log (fakelog.h): cuMemAlloc_v2,
 *                           cuMemFree_v2 and the granularity query, with the
 *                           current device (dev=, a rank's GPU)
 * Several ranks may run in one process, each on its own thread with its own
 * device current (cuCtxSetCurrent): memory is counted per device.
 * Streams are fakestream.h's: work runs when queued, or is recorded while the
 * stream is captured and replayed by cuGraphLaunch. As in CUDA, waiting for a
 * stream that is being captured fails (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
 * and invalidates the capture. Two extra symbols let the tests look inside:
 * rsagFakeLiveGraphs (graphs and executable graphs not yet destroyed) and
 * rsagFakeCaptureMode (the mode of the last capture begun).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fakelog.h"
#include "fakestream.h"

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext, *CUstream, *CUevent;

#define MAX_DEVICES 64

static const size_t total_bytes = (size_t)80 << 30;
static size_t used_bytes[MAX_DEVICES]; /* under mu */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* The device whose context is current on this thread (cuCtxSetCurrent). */
static __thread int current_device;

static int env_int(const char *name, int def) {
	const char *s = getenv(name);
	return s ? atoi(s) : def;
}

CUresult cuGetErrorName(CUresult r, const char **s) {
	switch (r) {
	case 0: *s = "CUDA_SUCCESS"; return 0;
	case 1: *s = "CUDA_ERROR_INVALID_VALUE"; return 0;
	case 2: *s = "CUDA_ERROR_OUT_OF_MEMORY"; return 0;
	case 100: *s = "CUDA_ERROR_NO_DEVICE"; return 0;
	case 101: *s = "CUDA_ERROR_INVALID_DEVICE"; return 0;
	}
	*s = NULL;
	return 1;
}

CUresult cuGetErrorString(CUresult r, const char **s) {
	switch (r) {
	case 0: *s = "no error"; return 0;
	case 1: *s = "invalid argument"; return 0;
	case 2: *s = "out of memory"; return 0;
	case 100: *s = "no CUDA-capable device is detected"; return 0;
	case 101: *s = "invalid device ordinal"; return 0;
	}
	*s = NULL;
	return 1;
}

CUresult cuInit(unsigned int flags) { return flags ? 1 : env_int("RSAG_FAKE_CUDA_INIT", 0); }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
/* visible fills dev with the devices this thread sees, in order, and
 * returns how many: RSAG_FAKE_CUDA_VISIBLE_<tid>, else RSAG_FAKE_CUDA_VISIBLE,
 * else all of RSAG_FAKE_CUDA_DEVICES. A listed device that does not exist
 * ends the list, as in CUDA. */
static int visible(int dev[MAX_DEVICES]) {
	int all = env_int("RSAG_FAKE_CUDA_DEVICES", 1);
	char name[64];
	snprintf(name, sizeof name, "RSAG_FAKE_CUDA_VISIBLE_%ld", (long)syscall(SYS_gettid));
	const char *list = getenv(name);
	if (!list) list = getenv("RSAG_FAKE_CUDA_VISIBLE");
	int n = 0;
	if (!list) {
		for (; n < all && n < MAX_DEVICES; n++) dev[n] = n;
		return n;
	}
	for (const char *p = list; *p && n < MAX_DEVICES;) {
		char *end;
		long d = strtol(p, &end, 10);
		if (end == p || d < 0 || d >= all) break;
		dev[n++] = (int)d;
		p = *end == ',' ? end + 1 : end;
	}
	return n;
}

CUresult cuDeviceGetCount(int *n) {
	int dev[MAX_DEVICES];
	*n = visible(dev);
	return 0;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal) {
	int dev[MAX_DEVICES];
	if (ordinal < 0 || ordinal >= visible(dev)) return 101;
	*d = dev[ordinal];
	return 0;
}

CUresult cuDeviceGetName(char *s, int n, CUdevice d) { snprintf(s, n, "Fake H200 #%d", d); return 0; }
CUresult cuDeviceGetPCIBusId(char *s, int n, CUdevice d) { snprintf(s, n, "0000:%02X:00.0", 0x18 + d); return 0; }

static int ctx_storage[MAX_DEVICES];
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) { *c = &ctx_storage[d & (MAX_DEVICES - 1)]; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) { (void)d; return 0; }
CUresult cuCtxSetCurrent(CUcontext c) {
	if (!c) return 201;
	current_device = (int)((int *)c - ctx_storage);
	return 0;
}
CUresult cuCtxSynchronize(void) { return 0; }

CUresult cuMemGetInfo_v2(size_t *free_, size_t *total) {
	pthread_mutex_lock(&mu);
	*free_ = total_bytes - used_bytes[current_device];
	pthread_mutex_unlock(&mu);
	*total = total_bytes;
	return 0;
}

/* An allocation keeps its size and device in two words before it. */
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
	if (n == 0) return 1;
	pthread_mutex_lock(&mu);
	int d = current_device;
	int full = n > total_bytes - used_bytes[d];
	if (!full) used_bytes[d] += n;
	pthread_mutex_unlock(&mu);
	if (full) return 2;
	size_t *h = malloc(n + 2 * sizeof(size_t));
	if (h == NULL) return 2;
	h[0] = n;
	h[1] = (size_t)d;
	*p = (CUdeviceptr)(uintptr_t)(h + 2);
	fake_log("cuMemAlloc_v2 dev=%d ptr=%#llx size=%zu", d, (unsigned long long)*p, n);
	return 0;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
	if (p == 0) return 1;
	size_t *h = (size_t *)(uintptr_t)p - 2;
	fake_log("cuMemFree_v2 dev=%d ptr=%#llx", (int)h[1], (unsigned long long)p);
	pthread_mutex_lock(&mu);
	used_bytes[h[1]] -= h[0];
	pthread_mutex_unlock(&mu);
	free(h);
	return 0;
}

#ifndef OMIT_GRANULARITY
/* CUmemAllocationProp as cuda.h lays it out (32 bytes). */
struct mem_prop {
	int type, handle_types;
	struct { int type, id; } location;
	void *win32;
	struct { unsigned char compression, rdma; unsigned short usage; unsigned char reserved[4]; } flags;
};

/* It checks what ncclx asks: pinned device memory of a device that
 * exists, shareable by file descriptor, nothing else set, the
 * recommended granularity. */
CUresult cuMemGetAllocationGranularity(size_t *g, const struct mem_prop *p, int flags) {
	if (!g || !p || p->type != 1 || p->handle_types != 1 || p->location.type != 1 || p->win32 ||
	    p->location.id < 0 || p->location.id >= env_int("RSAG_FAKE_CUDA_DEVICES", 1) || flags != 1 ||
	    p->flags.compression || p->flags.rdma || p->flags.usage)
		return 1;
	*g = (size_t)env_int("RSAG_FAKE_CUDA_GRANULARITY", 2 << 20);
	fake_log("cuMemGetAllocationGranularity dev=%d granularity=%zu", p->location.id, *g);
	return 0;
}
#endif

CUresult cuMemAllocHost_v2(void **p, size_t n) { *p = malloc(n); return *p ? 0 : 2; }
CUresult cuMemFreeHost(void *p) { free(p); return 0; }

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
	struct fake_op op = {.run = fake_run_copy, .dst = (void *)(uintptr_t)dst, .src = src, .n = n};
	return fake_enqueue(s, &op);
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
	struct fake_op op = {.run = fake_run_copy, .dst = (void *)(uintptr_t)dst, .src = (const void *)(uintptr_t)src, .n = n};
	return fake_enqueue(s, &op);
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s) {
	struct fake_op op = {.run = fake_run_copy, .dst = dst, .src = (const void *)(uintptr_t)src, .n = n};
	return fake_enqueue(s, &op);
}

static void run_memset(const struct fake_op *op) {
	for (size_t i = 0; i < op->n; i++) {
		char *p = (char *)op->dst + i * op->size;
		switch (op->size) {
		case 1: *(unsigned char *)p = (unsigned char)op->v; break;
		case 2: *(unsigned short *)p = (unsigned short)op->v; break;
		case 4: *(unsigned int *)p = (unsigned int)op->v; break;
		}
	}
}

static CUresult memset_async(CUdeviceptr dst, unsigned size, unsigned long long v, size_t n, CUstream s) {
	if (dst % size) return 1; /* CUDA_ERROR_INVALID_VALUE: misaligned */
	struct fake_op op = {.run = run_memset, .dst = (void *)(uintptr_t)dst, .n = n, .size = size, .v = v};
	return fake_enqueue(s, &op);
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s) { return memset_async(dst, 1, v, n, s); }
CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short v, size_t n, CUstream s) { return memset_async(dst, 2, v, n, s); }
CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int v, size_t n, CUstream s) { return memset_async(dst, 4, v, n, s); }

CUresult cuStreamCreate(CUstream *s, unsigned int flags) {
	(void)flags;
	*s = calloc(1, sizeof(struct fake_stream));
	return *s ? 0 : 2;
}

CUresult cuStreamDestroy_v2(CUstream s) {
	struct fake_stream *fs = s;
	if (fs) free(fs->ops);
	free(fs);
	return 0;
}

/* waitable is what a wait for s returns before the work is considered: 400
 * for no stream, and 900 (invalidating the capture) while s is captured. */
static CUresult waitable(CUstream s) {
	struct fake_stream *fs = s;
	if (!fs) return 400;
	if (fs->capturing) {
		fs->invalidated = 1;
		return 900; /* CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED */
	}
	return 0;
}

CUresult cuStreamSynchronize(CUstream s) { return waitable(s); }
CUresult cuStreamQuery(CUstream s) {
	CUresult r = waitable(s);
	return r ? r : env_int("RSAG_FAKE_CUDA_HANG", 0) ? 600 : 0;
}

static int live_graphs, last_capture_mode = -1; /* under mu */

struct fake_graph {
	size_t nops;
	struct fake_op *ops;
};

CUresult cuStreamBeginCapture_v2(CUstream s, int mode) {
	struct fake_stream *fs = s;
	if (!fs) return 400;
	if (mode < 0 || mode > 2) return 1;
	if (fs->capturing) return 401; /* CUDA_ERROR_ILLEGAL_STATE */
	fs->capturing = 1;
	fs->invalidated = 0;
	fs->nops = 0;
	pthread_mutex_lock(&mu);
	last_capture_mode = mode;
	pthread_mutex_unlock(&mu);
	return 0;
}

CUresult cuStreamEndCapture(CUstream s, void **graph) {
	struct fake_stream *fs = s;
	*graph = NULL;
	if (!fs) return 400;
	if (!fs->capturing) return 401;
	fs->capturing = 0;
	if (fs->invalidated) return 901; /* CUDA_ERROR_STREAM_CAPTURE_INVALIDATED */
	struct fake_graph *g = calloc(1, sizeof *g);
	if (!g) return 2;
	g->nops = fs->nops;
	g->ops = malloc((fs->nops ? fs->nops : 1) * sizeof *g->ops);
	if (!g->ops) { free(g); return 2; }
	memcpy(g->ops, fs->ops, fs->nops * sizeof *g->ops);
	fs->nops = 0;
	pthread_mutex_lock(&mu);
	live_graphs++;
	pthread_mutex_unlock(&mu);
	*graph = g;
	return 0;
}

CUresult cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags) {
	struct fake_graph *g = graph, *e;
	*exec = NULL;
	if (!g || flags) return 1;
	int r = env_int("RSAG_FAKE_CUDA_INSTANTIATE", 0);
	if (r) return r;
	e = calloc(1, sizeof *e);
	if (!e) return 2;
	e->nops = g->nops;
	e->ops = malloc((g->nops ? g->nops : 1) * sizeof *e->ops);
	if (!e->ops) { free(e); return 2; }
	memcpy(e->ops, g->ops, g->nops * sizeof *e->ops);
	pthread_mutex_lock(&mu);
	live_graphs++;
	pthread_mutex_unlock(&mu);
	*exec = e;
	return 0;
}

CUresult cuGraphLaunch(void *exec, CUstream s) {
	struct fake_graph *e = exec;
	if (!e || !s) return 400;
	for (size_t i = 0; i < e->nops; i++) {
		CUresult r = fake_enqueue(s, &e->ops[i]);
		if (r) return r;
	}
	return 0;
}

static CUresult destroy_graph(void *graph) {
	struct fake_graph *g = graph;
	if (!g) return 400;
	free(g->ops);
	free(g);
	pthread_mutex_lock(&mu);
	live_graphs--;
	pthread_mutex_unlock(&mu);
	return 0;
}

CUresult cuGraphExecDestroy(void *exec) { return destroy_graph(exec); }
CUresult cuGraphDestroy(void *graph) { return destroy_graph(graph); }

CUresult rsagFakeLiveGraphs(int *n) {
	pthread_mutex_lock(&mu);
	*n = live_graphs;
	pthread_mutex_unlock(&mu);
	return 0;
}
CUresult rsagFakeCaptureMode(int *m) {
	pthread_mutex_lock(&mu);
	*m = last_capture_mode;
	pthread_mutex_unlock(&mu);
	return 0;
}

CUresult cuEventCreate(CUevent *e, unsigned int flags) {
	(void)flags;
	*e = calloc(1, sizeof(struct timespec));
	return 0;
}
CUresult cuEventRecord(CUevent e, CUstream s) {
	(void)s;
	clock_gettime(CLOCK_MONOTONIC, (struct timespec *)e);
	return 0;
}
CUresult cuEventSynchronize(CUevent e) { return e ? 0 : 400; }
CUresult cuEventQuery(CUevent e) { return !e ? 400 : env_int("RSAG_FAKE_CUDA_HANG", 0) ? 600 : 0; }
CUresult cuEventDestroy_v2(CUevent e) { free(e); return 0; }

CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b) {
	struct timespec *x = a, *y = b;
	*ms = (float)((y->tv_sec - x->tv_sec) * 1e3 + (y->tv_nsec - x->tv_nsec) / 1e6);
	return 0;
}
