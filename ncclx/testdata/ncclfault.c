/*
 * A fault injector that stands in for libnccl.so.2 and passes every call on
 * to the real one: rsag loads it through RSAG_NCCL_LIBRARY. It is linked
 * against libnccl.so.2 (DT_NEEDED), so that every symbol it does not define
 * is found there, and defines only the collectives, which it passes on
 * (dlsym of the real library, NCCL_FAULT_REAL or "libnccl.so.2") before or
 * after its fault. Faults come from outside rsag, as the PMPI interposers'
 * do on MPI (e2e/testdata). Environment (read at each call):
 *   NCCL_FAULT        corrupt: after the collective, write 0xA5 over one
 *                     element of its output, on the stream (cuMemsetD8Async);
 *                     stop: after enqueuing the collective, SIGSTOP this
 *                     process, so that it stops inside the collective;
 *                     slow: sleep NCCL_FAULT_SLOW_US before each collective
 *                     from the NCCL_FAULT_AT-th on
 *   NCCL_FAULT_COLL   the collective: ncclAllReduce, ncclReduceScatter or
 *                     ncclAllGather (slow: any, when unset)
 *   NCCL_FAULT_RANK   the rank it strikes: the process's rank in the job, as
 *                     its launcher says (OMPI_COMM_WORLD_RANK, PMIX_RANK,
 *                     PMI_RANK, SLURM_PROCID), so that a rank is struck in
 *                     every sub-communicator it joins (locate's pairs);
 *                     ncclCommUserRank of the call's communicator where no
 *                     launcher says
 *   NCCL_FAULT_AT     the call of that collective it strikes, from 1, counted
 *                     per thread (a rank is one thread of one process);
 *                     corrupt: the first call from it on whose output holds
 *                     the element (a soak's small sizes leave a rank a shard
 *                     of one element: writing past it proves nothing)
 *   NCCL_FAULT_ELEMENT  corrupt: the output element (default 0)
 *   NCCL_FAULT_CUDA   corrupt: the CUDA driver to write with (default
 *                     libcuda.so.1, the one already loaded)
 *   NCCL_FAULT_SLOW_US  slow: microseconds (default 1000)
 * Each fault it injects is said on stderr, once. Build it with
 *   gcc -shared -fPIC -o libncclfault.so ncclfault.c -ldl -Wl,--no-as-needed DIR/libnccl.so.2
 * (--no-as-needed: it calls NCCL only through dlsym, yet must depend on it).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int ncclResult_t;
typedef void *ncclComm_t, *cudaStream_t;
typedef int CUresult;
typedef unsigned long long CUdeviceptr;

typedef ncclResult_t (*reducing)(const void *, void *, size_t, int, int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*gathering)(const void *, void *, size_t, int, ncclComm_t, cudaStream_t);

/* Element sizes by ncclDataType_t: int8, uint8, int32, uint32, int64,
 * uint64, float16, float32, float64, bfloat16, float8 e4m3, float8 e5m2. */
static const size_t type_size[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};

static void *real(const char *name) {
	static void *lib;
	if (!lib) {
		const char *path = getenv("NCCL_FAULT_REAL");
		lib = dlopen(path ? path : "libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
	}
	void *f = lib ? dlsym(lib, name) : NULL;
	if (!f) {
		fprintf(stderr, "ncclfault: no real %s: %s\n", name, dlerror());
		abort();
	}
	return f;
}

static int env_int(const char *name, int def) {
	const char *s = getenv(name);
	return s && *s ? atoi(s) : def;
}

/* job_rank is this process's rank in the job, or comm's rank where no
 * launcher says. */
static int job_rank(ncclComm_t comm) {
	static const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"};
	for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
		const char *v = getenv(vars[i]);
		if (v && *v) return atoi(v);
	}
	int rank = -1;
	((ncclResult_t (*)(ncclComm_t, int *))real("ncclCommUserRank"))(comm, &rank);
	return rank;
}

/* strikes counts this thread's calls of coll and says whether this one is
 * the one NCCL_FAULT names for this rank (or, for slow, one from it on). */
static int strikes(const char *coll, ncclComm_t comm, int *calls) {
	const char *fault = getenv("NCCL_FAULT"), *want = getenv("NCCL_FAULT_COLL");
	if (!fault) return 0;
	int slow = strcmp(fault, "slow") == 0, from = slow || strcmp(fault, "corrupt") == 0;
	if (want && strcmp(want, coll) != 0) return 0;
	if (!want && !slow) return 0;
	if (job_rank(comm) != env_int("NCCL_FAULT_RANK", -2)) return 0;
	int at = env_int("NCCL_FAULT_AT", 1);
	++*calls;
	return from ? *calls >= at : *calls == at;
}

static void say(const char *what, const char *coll, int n) {
	static __thread int said;
	if (said++) return;
	fprintf(stderr, "ncclfault: pid %d: %s at %s call %d\n", (int)getpid(), what, coll, n);
}

static void corrupt(const char *coll, int n, void *out, int t, cudaStream_t st) {
	static CUresult (*memset8)(CUdeviceptr, unsigned char, size_t, cudaStream_t);
	if (!memset8) {
		const char *path = getenv("NCCL_FAULT_CUDA");
		void *cu = dlopen(path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
		memset8 = cu ? dlsym(cu, "cuMemsetD8Async") : NULL;
		if (!memset8) {
			fprintf(stderr, "ncclfault: no cuMemsetD8Async: %s\n", dlerror());
			abort();
		}
	}
	size_t size = t >= 0 && t < (int)(sizeof type_size / sizeof *type_size) ? type_size[t] : 1;
	size_t elem = (size_t)env_int("NCCL_FAULT_ELEMENT", 0);
	if (memset8((CUdeviceptr)(uintptr_t)out + elem * size, 0xA5, size, st) != 0) {
		fprintf(stderr, "ncclfault: cuMemsetD8Async failed\n");
		abort();
	}
	char what[64];
	snprintf(what, sizeof what, "corrupted output element %zu", elem);
	say(what, coll, n);
}

/* before and after wrap one collective: the slow fault before it, the
 * corrupt and stop faults after it is enqueued, when this call is struck. */
static int before(const char *coll, ncclComm_t comm, int *calls) {
	int hit = strikes(coll, comm, calls);
	if (hit && strcmp(getenv("NCCL_FAULT"), "slow") == 0) {
		say("slowed every collective from", coll, *calls);
		usleep((useconds_t)env_int("NCCL_FAULT_SLOW_US", 1000));
	}
	return hit;
}

static ncclResult_t after(ncclResult_t res, int hit, const char *coll, int calls, void *out, size_t outn, int t,
		cudaStream_t st) {
	static __thread int corrupted;
	if (res != 0 || !hit) return res;
	const char *fault = getenv("NCCL_FAULT");
	if (strcmp(fault, "corrupt") == 0 && !corrupted && (size_t)env_int("NCCL_FAULT_ELEMENT", 0) < outn) {
		corrupted = 1;
		corrupt(coll, calls, out, t, st);
	}
	if (strcmp(fault, "stop") == 0) {
		say("stopping (SIGSTOP) inside", coll, calls);
		kill(getpid(), SIGSTOP);
	}
	return res;
}

ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, int t, int op, ncclComm_t c, cudaStream_t st) {
	static __thread int calls;
	int hit = before("ncclAllReduce", c, &calls);
	return after(((reducing)real("ncclAllReduce"))(s, r, n, t, op, c, st), hit, "ncclAllReduce", calls, r, n, t, st);
}

ncclResult_t ncclReduceScatter(const void *s, void *r, size_t n, int t, int op, ncclComm_t c, cudaStream_t st) {
	static __thread int calls;
	int hit = before("ncclReduceScatter", c, &calls);
	return after(((reducing)real("ncclReduceScatter"))(s, r, n, t, op, c, st), hit, "ncclReduceScatter", calls, r, n, t, st);
}

ncclResult_t ncclAllGather(const void *s, void *r, size_t n, int t, ncclComm_t c, cudaStream_t st) {
	static __thread int calls;
	int hit = before("ncclAllGather", c, &calls), ranks = 0;
	if (hit) ((ncclResult_t (*)(ncclComm_t, int *))real("ncclCommCount"))(c, &ranks);
	return after(((gathering)real("ncclAllGather"))(s, r, n, t, c, st), hit, "ncclAllGather", calls, r, n * (size_t)ranks, t, st);
}
