/*
 * A fake NCCL for ncclx's tests: one rank only, so every collective is a copy
 * of the input into the output, queued on the fake stream (fakestream.h), so
 * that a captured graph replays it. Built with -DOMIT_ALLGATHER it lacks
 * ncclAllGather, to test that loading names a missing symbol. A collective of
 * exactly 12345 elements fails with ncclInvalidUsage, to test error reporting.
 */
#include <stdlib.h>
#include <string.h>

#include "fakestream.h"

typedef int ncclResult_t;
typedef void *ncclComm_t;
typedef void *cudaStream_t;
typedef struct { char internal[128]; } ncclUniqueId;

static const char *last_error = "";

/* RSAG_FAKE_NCCL_VERSION: the version code ncclGetVersion gives (default 22809, 2.28.9). */
ncclResult_t ncclGetVersion(int *v) {
	const char *s = getenv("RSAG_FAKE_NCCL_VERSION");
	*v = s ? atoi(s) : 22809;
	return 0;
}

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

/* The (datatype, op) of the last collective queued, -1 for all-gather's op:
 * rsagFakeLastCall reports it as (datatype+1)*16 + op+1, 0 before any, so
 * that the tests see the enum values that crossed the ABI. */
static int last_type = -1, last_op = -1;

ncclResult_t rsagFakeLastCall(int *v) { *v = (last_type + 1) * 16 + last_op + 1; return 0; }

/* queue checks a collective and queues its one-rank result, a copy, on the
 * stream (recorded when the stream is being captured). */
static ncclResult_t queue(const void *send, void *recv, size_t count, int t, int op, cudaStream_t st) {
	if (count == 12345) { last_error = "fake: poisoned count 12345"; return 5; }
	if (type_size(t) == 0 || op < -1 || op > 4) { last_error = "fake: bad type or op"; return 4; }
	last_type = t;
	last_op = op;
	struct fake_op c = {.run = fake_run_copy, .dst = recv, .src = send, .n = count * type_size(t)};
	if (fake_enqueue(st, &c)) { last_error = "fake: out of memory"; return 2; }
	return 0;
}

ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, int t, int op, ncclComm_t c, cudaStream_t st) {
	(void)c;
	return queue(s, r, n, t, op, st);
}

ncclResult_t ncclReduceScatter(const void *s, void *r, size_t n, int t, int op, ncclComm_t c, cudaStream_t st) {
	(void)c;
	return queue(s, r, n, t, op, st);
}

#ifndef OMIT_ALLGATHER
ncclResult_t ncclAllGather(const void *s, void *r, size_t n, int t, ncclComm_t c, cudaStream_t st) {
	(void)c;
	return queue(s, r, n, t, -1, st);
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
