/*
 * A fake CUDA driver for ncclx's tests: "device memory" is host memory and
 * events read the host clock. It exports the symbols ncclx binds, with the
 * ABI of abi.h. Environment knobs (read at call time):
 *   RSAG_FAKE_CUDA_DEVICES  device count (default 1)
 *   RSAG_FAKE_CUDA_INIT     the CUresult cuInit returns (default 0)
 *   RSAG_FAKE_CUDA_HANG     1: queued work never finishes (cuStreamQuery and
 *                           cuEventQuery say CUDA_ERROR_NOT_READY), like a
 *                           collective whose peer never arrives
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext, *CUstream, *CUevent;

static const size_t total_bytes = (size_t)80 << 30;
static size_t used_bytes;

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
CUresult cuDeviceGetCount(int *n) { *n = env_int("RSAG_FAKE_CUDA_DEVICES", 1); return 0; }

CUresult cuDeviceGet(CUdevice *d, int ordinal) {
	if (ordinal < 0 || ordinal >= env_int("RSAG_FAKE_CUDA_DEVICES", 1)) return 101;
	*d = ordinal;
	return 0;
}

CUresult cuDeviceGetName(char *s, int n, CUdevice d) { snprintf(s, n, "Fake H200 #%d", d); return 0; }
CUresult cuDeviceGetPCIBusId(char *s, int n, CUdevice d) { snprintf(s, n, "0000:%02X:00.0", 0x18 + d); return 0; }

static int ctx_storage[64];
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) { *c = &ctx_storage[d & 63]; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) { (void)d; return 0; }
CUresult cuCtxSetCurrent(CUcontext c) { return c ? 0 : 201; }
CUresult cuCtxSynchronize(void) { return 0; }

CUresult cuMemGetInfo_v2(size_t *free_, size_t *total) {
	*free_ = total_bytes - used_bytes;
	*total = total_bytes;
	return 0;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
	if (n == 0) return 1;
	if (n > total_bytes - used_bytes) return 2;
	size_t *h = malloc(n + 2 * sizeof(size_t));
	if (h == NULL) return 2;
	h[0] = n;
	used_bytes += n;
	*p = (CUdeviceptr)(uintptr_t)(h + 2);
	return 0;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
	if (p == 0) return 1;
	size_t *h = (size_t *)(uintptr_t)p - 2;
	used_bytes -= h[0];
	free(h);
	return 0;
}

CUresult cuMemAllocHost_v2(void **p, size_t n) { *p = malloc(n); return *p ? 0 : 2; }
CUresult cuMemFreeHost(void *p) { free(p); return 0; }

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
	(void)s;
	memcpy((void *)(uintptr_t)dst, src, n);
	return 0;
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s) {
	(void)s;
	memcpy(dst, (const void *)(uintptr_t)src, n);
	return 0;
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s) {
	(void)s;
	memset((void *)(uintptr_t)dst, v, n);
	return 0;
}

CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int v, size_t n, CUstream s) {
	(void)s;
	if (dst % 4) return 1;
	unsigned int *p = (unsigned int *)(uintptr_t)dst;
	for (size_t i = 0; i < n; i++) p[i] = v;
	return 0;
}

CUresult cuStreamCreate(CUstream *s, unsigned int flags) { (void)flags; *s = malloc(1); return 0; }
CUresult cuStreamDestroy_v2(CUstream s) { free(s); return 0; }
CUresult cuStreamSynchronize(CUstream s) { return s ? 0 : 400; }
CUresult cuStreamQuery(CUstream s) { return !s ? 400 : env_int("RSAG_FAKE_CUDA_HANG", 0) ? 600 : 0; }

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
