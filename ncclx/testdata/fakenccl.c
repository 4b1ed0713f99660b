/*
 * A fake NCCL for ncclx's tests: one rank only, so every collective is a copy
 * of the input into the output. Built with -DOMIT_ALLGATHER it lacks
 * ncclAllGather, to test that loading names a missing symbol. A collective of
 * exactly 12345 elements fails with ncclInvalidUsage, to test error reporting.
 */
#include <stdlib.h>
#include <string.h>

typedef int ncclResult_t;
typedef void *ncclComm_t;
typedef void *cudaStream_t;
typedef struct { char internal[128]; } ncclUniqueId;

static const char *last_error = "";

ncclResult_t ncclGetVersion(int *v) { *v = 22809; return 0; }

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
	memset(id->internal, 0x5a, sizeof id->internal);
	return 0;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
	for (int i = 0; i < 128; i++)
		if (id.internal[i] != 0x5a) { last_error = "fake: bad unique id"; return 4; }
	if (nranks != 1 || rank != 0) { last_error = "fake: one rank only"; return 4; }
	*comm = malloc(1);
	return 0;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) { free(comm); return 0; }
ncclResult_t ncclCommAbort(ncclComm_t comm) { free(comm); return 0; }
/* RSAG_FAKE_NCCL_ASYNC_ERROR: the ncclResult_t the communicator reports (default 0). */
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *r) {
	(void)comm;
	const char *s = getenv("RSAG_FAKE_NCCL_ASYNC_ERROR");
	*r = s ? atoi(s) : 0;
	return 0;
}

static size_t type_size(int t) {
	switch (t) {
	case 0: case 1: return 1;
	case 2: case 3: case 7: return 4;
	case 4: case 5: case 8: return 8;
	case 6: case 9: return 2;
	}
	return 0;
}

static ncclResult_t copy(const void *send, void *recv, size_t count, int t, int op) {
	if (count == 12345) { last_error = "fake: poisoned count 12345"; return 5; }
	if (type_size(t) == 0 || op < 0 || op > 4) { last_error = "fake: bad type or op"; return 4; }
	memmove(recv, send, count * type_size(t));
	return 0;
}

ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, int t, int op, ncclComm_t c, cudaStream_t st) {
	(void)c; (void)st;
	return copy(s, r, n, t, op);
}

ncclResult_t ncclReduceScatter(const void *s, void *r, size_t n, int t, int op, ncclComm_t c, cudaStream_t st) {
	(void)c; (void)st;
	return copy(s, r, n, t, op);
}

#ifndef OMIT_ALLGATHER
ncclResult_t ncclAllGather(const void *s, void *r, size_t n, int t, ncclComm_t c, cudaStream_t st) {
	(void)c; (void)st;
	return copy(s, r, n, t, 0);
}
#endif

const char *ncclGetErrorString(ncclResult_t r) {
	switch (r) {
	case 0: return "no error";
	case 4: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
	case 5: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
	}
	return "unknown result code";
}

const char *ncclGetLastError(ncclComm_t comm) { (void)comm; return last_error; }
