/*
 * A fake NCCL for ncclx's tests. The ranks of a communicator are threads of
 * one process (the Go tests run one Backend per goroutine, each locked to
 * its thread): they meet in a clique, found by the unique id or made by a
 * split, and a collective runs when every rank has queued it, computing the
 * real result from every rank's input. A communicator of one rank copies
 * the input into the output. Collectives are queued on the fake stream
 * (fakestream.h), so a captured graph replays them.
 *
 * It checks what a real NCCL would refuse or silently get wrong: configs
 * (size, magic, version, CTAPolicy, every other field undefined), windows
 * (memory from ncclMemAlloc, 4096-aligned, collective, the same flags on
 * every rank), ncclMemFree of memory still in a window, a communicator
 * destroyed with buffers still registered, a unique id used twice. Every
 * such call is written to the call log (fakelog.h), with the registration
 * each collective's buffers are in at the time and their offsets into it.
 *
 * Built with -DFAKE_ABI=<version code> it has only the symbols that NCCL
 * version has (default 22809: all), to test an older NCCL; with
 * -DOMIT_ALLGATHER it lacks ncclAllGather, to test that loading names a
 * missing required symbol. A collective of exactly 12345 elements fails
 * with ncclInvalidUsage, to test error reporting. Environment knobs:
 *   RSAG_FAKE_NCCL_VERSION      ncclGetVersion's code (default 22809, 2.28.9)
 *   RSAG_FAKE_NCCL_ASYNC_ERROR  the ncclResult_t every communicator reports
 *   RSAG_FAKE_NCCL_NO_WINDOW    1: ncclCommWindowRegister succeeds and makes
 *                               no window, as NCCL 2.28 does without
 *                               symmetric memory support
 *   RSAG_FAKE_CUDA_GRANULARITY  what ncclMemAlloc rounds up to (2 MiB)
 *   RSAG_FAKE_NCCL_TIMEOUT      seconds a rank waits for the others (10)
 * and, to prove from outside rsag that a wrong result is caught and
 * localized, the faults e2e/testdata/corrupt.c makes in MPI: the lowest bit
 * of one element flips in one collective's result on one rank,
 *   RSAG_FAKE_NCCL_CORRUPT_COLL     ncclAllReduce (its output), ncclReduceScatter
 *                                   (the rank's shard) or ncclAllGather (what
 *                                   the rank sends: every rank receives that
 *                                   chunk wrong); unset: none
 *   RSAG_FAKE_NCCL_CORRUPT_RANK     the communicator rank it strikes (default 0)
 *   RSAG_FAKE_NCCL_CORRUPT_AT       only that rank's Nth call of it, counted
 *                                   from 1; or
 *   RSAG_FAKE_NCCL_CORRUPT_EVERY    its every Nth call (default 1)
 *   RSAG_FAKE_NCCL_CORRUPT_ELEMENT  the element (default 0)
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fakelog.h"
#include "fakestream.h"

#ifndef FAKE_ABI
#define FAKE_ABI 22809
#endif

typedef int ncclResult_t;
typedef void *cudaStream_t;
typedef struct { char internal[128]; } ncclUniqueId;

/* NCCL 2.28's ncclConfig_t (struct ncclConfig_v22800), declared here apart
 * from abi.h so that the tests compare two declarations of it. */
struct config {
	size_t size;
	unsigned int magic, version;
	int blocking, cgaClusterSize, minCTAs, maxCTAs;
	const char *netName;
	int splitShare, trafficClass;
	const char *commName;
	int collnetEnable, CTAPolicy, shrinkShare, nvlsCTAs, nChannelsPerNetPeer, nvlinkCentricSched;
};

enum { ok = 0, systemError = 2, internalError = 3, invalidArgument = 4, invalidUsage = 5, timeout = 8 };
enum { allReduce, reduceScatter, allGather };
static const char *coll_names[] = {"ncclAllReduce", "ncclReduceScatter", "ncclAllGather"};

#define MAXR 64

/* What each rank brings to a rendezvous. */
struct slot {
	const void *send;
	size_t count;
	int coll, type, redop;
	long a, b;
	int corrupt; /* an AllGather whose sent chunk arrives corrupted */
};

struct clique {
	int id, nranks, joined;
	int has_uid;
	char uid[128];
	struct clique *parent; /* a split's: which split of which clique, which color */
	int split, color;
	pthread_cond_t cv;
	unsigned gen;
	int arrived;
	struct slot slots[MAXR];
	struct clique *next;
};

struct comm;

/* A registration: ncclCommRegister's (kind 1) or a window (kind 2). */
struct reg {
	int id, kind, live, flags;
	char *base;
	size_t size;
	struct reg *next;
};

struct comm {
	int id, rank, nranks, policy, dead, async, splits, seq;
	struct clique *q;
	struct reg *regs;
	const char *last_error;
	struct comm *next; /* every communicator made */
};

/* An ncclMemAlloc allocation. */
struct alloc {
	char *base;
	size_t size, rounded;
	int live;
	struct alloc *next;
};

/* One lock for everything; a rendezvous waits on its clique's cv. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct clique *cliques;
static struct comm *comms;
static __attribute__((unused)) struct alloc *allocs;
static int next_id = 1;
static unsigned long long uids;
static const char *last_error = "";
static int last_type = -1, last_op = -1;

static int env_int(const char *name, int def) {
	const char *s = getenv(name);
	return s ? atoi(s) : def;
}

static int version(void) { return env_int("RSAG_FAKE_NCCL_VERSION", 22809); }

static ncclResult_t fail(struct comm *c, ncclResult_t r, const char *msg) {
	last_error = msg;
	if (c) c->last_error = msg;
	return r;
}

static int alive(const struct comm *c) { return c != NULL && !c->dead; }

/* barrier, with mu held, waits until every rank of q has come; -1 when
 * they do not within the timeout. */
static int barrier(struct clique *q) {
	unsigned gen = q->gen;
	if (++q->arrived == q->nranks) {
		q->arrived = 0;
		q->gen++;
		pthread_cond_broadcast(&q->cv);
		return 0;
	}
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += env_int("RSAG_FAKE_NCCL_TIMEOUT", 10);
	while (gen == q->gen)
		if (pthread_cond_timedwait(&q->cv, &mu, &dl) == ETIMEDOUT && gen == q->gen) {
			q->arrived--;
			return -1;
		}
	return 0;
}

static struct clique *new_clique(int nranks) {
	struct clique *q = calloc(1, sizeof *q);
	q->id = next_id++;
	q->nranks = nranks;
	pthread_cond_init(&q->cv, NULL);
	q->next = cliques;
	cliques = q;
	return q;
}

static struct comm *new_comm(struct clique *q, int rank, int policy) {
	struct comm *c = calloc(1, sizeof *c);
	c->id = next_id++;
	c->q = q;
	c->rank = rank;
	c->nranks = q->nranks;
	c->policy = policy;
	c->next = comms;
	comms = c;
	q->joined++;
	return c;
}

ncclResult_t ncclGetVersion(int *v) {
	*v = version();
	return ok;
}

/* A unique id is "RSAGFAKE", a counter, and 0x5a bytes. */
ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
	memset(id->internal, 0x5a, sizeof id->internal);
	memcpy(id->internal, "RSAGFAKE", 8);
	pthread_mutex_lock(&mu);
	unsigned long long n = ++uids;
	pthread_mutex_unlock(&mu);
	memcpy(id->internal + 8, &n, sizeof n);
	return ok;
}

static int valid_uid(const char *u) {
	if (memcmp(u, "RSAGFAKE", 8) != 0) return 0;
	for (int i = 16; i < 128; i++)
		if (u[i] != 0x5a) return 0;
	return 1;
}

/* init joins the clique of the unique id and waits for every rank. */
static ncclResult_t init(struct comm **out, int nranks, const ncclUniqueId *id, int rank, int policy, const char *call) {
	if (!valid_uid(id->internal)) return fail(NULL, invalidArgument, "fake: bad unique id");
	if (nranks < 1 || nranks > MAXR || rank < 0 || rank >= nranks) return fail(NULL, invalidArgument, "fake: bad rank or size");
	pthread_mutex_lock(&mu);
	struct clique *q = cliques;
	while (q && !(q->has_uid && memcmp(q->uid, id->internal, 128) == 0)) q = q->next;
	if (q && (q->nranks != nranks || q->joined == q->nranks)) {
		pthread_mutex_unlock(&mu);
		return fail(NULL, invalidUsage, "fake: a unique id was used for a second communicator");
	}
	if (!q) {
		q = new_clique(nranks);
		q->has_uid = 1;
		memcpy(q->uid, id->internal, 128);
	}
	struct comm *c = new_comm(q, rank, policy);
	int late = barrier(q);
	pthread_mutex_unlock(&mu);
	if (late) return fail(NULL, internalError, "fake: timed out waiting for the other ranks");
	fake_log("%s comm=%d clique=%d rank=%d nranks=%d policy=%d", call, c->id, q->id, rank, nranks, policy);
	*out = c;
	return ok;
}

ncclResult_t ncclCommInitRank(struct comm **out, int nranks, ncclUniqueId id, int rank) {
	return init(out, nranks, &id, rank, 0, "ncclCommInitRank");
}

/* check_config refuses a config ncclx must never pass, and sets *policy. */
static __attribute__((unused)) ncclResult_t check_config(const struct config *c, int *policy, struct comm *parent) {
	fake_log("config size=%zu magic=%#x version=%u blocking=%d cgaClusterSize=%d minCTAs=%d maxCTAs=%d netName=%p "
	         "splitShare=%d trafficClass=%d commName=%p collnetEnable=%d CTAPolicy=%d shrinkShare=%d nvlsCTAs=%d "
	         "nChannelsPerNetPeer=%d nvlinkCentricSched=%d",
	         c->size, c->magic, c->version, c->blocking, c->cgaClusterSize, c->minCTAs, c->maxCTAs, (void *)c->netName,
	         c->splitShare, c->trafficClass, (void *)c->commName, c->collnetEnable, c->CTAPolicy, c->shrinkShare,
	         c->nvlsCTAs, c->nChannelsPerNetPeer, c->nvlinkCentricSched);
	if (c->size != sizeof *c) return fail(parent, invalidArgument, "fake: the config's size is not NCCL 2.28's 80 bytes");
	if (c->magic != 0xcafebeef) return fail(parent, invalidArgument, "fake: the config's magic is not NCCL_CONFIG_INITIALIZER's");
	/* NCCL resets CTAPolicy to its default in a config older than 2.27. */
	if (c->version < 22700) return fail(parent, invalidArgument, "fake: the config's version is before NCCL 2.27, so NCCL would ignore CTAPolicy");
	if (c->blocking != INT_MIN || c->cgaClusterSize != INT_MIN || c->minCTAs != INT_MIN || c->maxCTAs != INT_MIN ||
	    c->netName || c->splitShare != INT_MIN || c->trafficClass != INT_MIN || c->commName ||
	    c->collnetEnable != INT_MIN || c->shrinkShare != INT_MIN || c->nvlsCTAs != INT_MIN ||
	    c->nChannelsPerNetPeer != INT_MIN || c->nvlinkCentricSched != INT_MIN)
		return fail(parent, invalidArgument, "fake: a config field other than CTAPolicy is not NCCL_CONFIG_UNDEF_INT/PTR");
	int top = version() >= 22800 ? 2 : 1; /* NCCL_CTA_POLICY_ZERO came with 2.28 */
	if (c->CTAPolicy == INT_MIN)
		*policy = 0;
	else if (c->CTAPolicy < 0 || c->CTAPolicy > top)
		return fail(parent, invalidArgument, "fake: the config's CTAPolicy is not a policy this NCCL has");
	else
		*policy = c->CTAPolicy;
	return ok;
}

#if FAKE_ABI >= 21400
ncclResult_t ncclCommInitRankConfig(struct comm **out, int nranks, ncclUniqueId id, int rank, struct config *cfg) {
	int policy = 0;
	if (!cfg) return fail(NULL, invalidArgument, "fake: no config");
	ncclResult_t r = check_config(cfg, &policy, NULL);
	return r ? r : init(out, nranks, &id, rank, policy, "ncclCommInitRankConfig");
}
#endif

/* rsagFakeConfigLayout has ncclCommInitRankConfig's signature and fills
 * the config with each field's place in the struct, counting from 1 after
 * version (ints 1000+i, pointers i*0x100), for the tests to read back. */
ncclResult_t rsagFakeConfigLayout(struct comm **out, int nranks, ncclUniqueId id, int rank, struct config *c) {
	(void)out, (void)nranks, (void)id, (void)rank;
	c->size = sizeof *c;
	c->magic = 0xcafebeef;
	c->version = 22800;
	c->blocking = 1001, c->cgaClusterSize = 1002, c->minCTAs = 1003, c->maxCTAs = 1004;
	c->netName = (const char *)(uintptr_t)0x500;
	c->splitShare = 1006, c->trafficClass = 1007;
	c->commName = (const char *)(uintptr_t)0x800;
	c->collnetEnable = 1009, c->CTAPolicy = 1010, c->shrinkShare = 1011, c->nvlsCTAs = 1012;
	c->nChannelsPerNetPeer = 1013, c->nvlinkCentricSched = 1014;
	return ok;
}

static int live_regs(const struct comm *c) {
	int n = 0;
	for (const struct reg *r = c->regs; r; r = r->next) n += r->live;
	return n;
}

ncclResult_t ncclCommDestroy(struct comm *c) {
	if (!alive(c)) return fail(NULL, invalidUsage, "fake: destroying a communicator twice");
	pthread_mutex_lock(&mu);
	int n = live_regs(c);
	if (n == 0) c->dead = 1;
	pthread_mutex_unlock(&mu);
	if (n) return fail(c, invalidUsage, "fake: destroying a communicator with buffers still registered");
	fake_log("ncclCommDestroy comm=%d rank=%d", c->id, c->rank);
	return ok;
}

/* An abort releases the registrations too, as NCCL's does. */
ncclResult_t ncclCommAbort(struct comm *c) {
	if (!alive(c)) return fail(NULL, invalidUsage, "fake: aborting a communicator twice");
	pthread_mutex_lock(&mu);
	c->dead = 1;
	for (struct reg *r = c->regs; r; r = r->next) r->live = 0;
	pthread_mutex_unlock(&mu);
	fake_log("ncclCommAbort comm=%d rank=%d", c->id, c->rank);
	return ok;
}

ncclResult_t ncclCommGetAsyncError(struct comm *c, ncclResult_t *r) {
	*r = env_int("RSAG_FAKE_NCCL_ASYNC_ERROR", c ? c->async : 0);
	return ok;
}

ncclResult_t ncclCommCount(const struct comm *c, int *n) {
	if (!alive(c)) return fail(NULL, invalidArgument, "fake: no communicator");
	*n = c->nranks;
	return ok;
}

ncclResult_t ncclCommUserRank(const struct comm *c, int *r) {
	if (!alive(c)) return fail(NULL, invalidArgument, "fake: no communicator");
	*r = c->rank;
	return ok;
}

#if FAKE_ABI >= 21800
/* ncclCommSplit: the ranks of c with the same color form a clique, ordered
 * by key and then by rank in c; NCCL_SPLIT_NOCOLOR (-1) takes part and gets
 * none (*out NULL), as NCCL's commGetSplitInfo does. NCCL tests for that
 * value alone, so another negative color is a color like any other. */
ncclResult_t ncclCommSplit(struct comm *c, int color, int key, struct comm **out, struct config *cfg) {
	if (!alive(c)) return fail(NULL, invalidArgument, "fake: no communicator");
	int policy = c->policy;
	if (cfg) {
		ncclResult_t r = check_config(cfg, &policy, c);
		if (r) return r;
	}
	struct comm *nc = NULL;
	pthread_mutex_lock(&mu);
	struct clique *q = c->q;
	q->slots[c->rank] = (struct slot){.a = color, .b = key};
	int late = barrier(q);
	if (!late && color != -1) {
		int n = 0, me = 0;
		for (int r = 0; r < q->nranks; r++) {
			if (q->slots[r].a != color) continue;
			n++;
			if (q->slots[r].b < key || (q->slots[r].b == key && r < c->rank)) me++;
		}
		struct clique *child = cliques;
		while (child && !(child->parent == q && child->split == c->splits && child->color == color)) child = child->next;
		if (!child) {
			child = new_clique(n);
			child->parent = q;
			child->split = c->splits;
			child->color = color;
		}
		nc = new_comm(child, me, policy);
	}
	c->splits++;
	late |= barrier(q);
	pthread_mutex_unlock(&mu);
	if (late) return fail(c, internalError, "fake: timed out waiting for the other ranks");
	fake_log("ncclCommSplit comm=%d rank=%d color=%d key=%d newcomm=%d newrank=%d newsize=%d policy=%d config=%d",
	         c->id, c->rank, color, key, nc ? nc->id : 0, nc ? nc->rank : -1, nc ? nc->nranks : 0, policy, cfg != NULL);
	*out = nc;
	return ok;
}
#endif

/* describe writes which registration of c holds p, and where: "win:<id>:<offset>",
 * "reg:<id>:<offset>" or "none". With mu held. */
static void describe(const struct comm *c, const void *p, char *out, size_t n) {
	for (const struct reg *r = c->regs; r; r = r->next)
		if (r->live && (const char *)p >= r->base && (const char *)p < r->base + r->size) {
			snprintf(out, n, "%s:%d:%zu", r->kind == 2 ? "win" : "reg", r->id, (size_t)((const char *)p - r->base));
			return;
		}
	snprintf(out, n, "none");
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
ncclResult_t rsagFakeLastCall(int *v) {
	pthread_mutex_lock(&mu);
	*v = (last_type + 1) * 16 + last_op + 1;
	pthread_mutex_unlock(&mu);
	return ok;
}

#define REDUCE(T)                                                                   \
	do {                                                                        \
		T acc = ((const T *)q->slots[0].send)[k];                           \
		for (int r = 1; r < nr; r++) {                                      \
			T v = ((const T *)q->slots[r].send)[k];                     \
			switch (op) {                                               \
			case 0: case 4: acc = (T)(acc + v); break;                  \
			case 1: acc = (T)(acc * v); break;                          \
			case 2: acc = v > acc ? v : acc; break;                     \
			case 3: acc = v < acc ? v : acc; break;                     \
			}                                                           \
		}                                                                   \
		if (op == 4) acc = (T)(acc / nr);                                   \
		*(T *)out = acc;                                                    \
	} while (0)

/* The 16-bit floats are reduced as NCCL does, in float and rounded back to
 * nearest even after every step. */
static float half_to_float(uint16_t h) {
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, u;
	if (exp == 0x1f)
		u = sign | 0x7f800000 | mant << 13;
	else if (exp != 0)
		u = sign | (exp + 112) << 23 | mant << 13;
	else if (mant == 0)
		u = sign;
	else { /* subnormal: normalise */
		exp = 113;
		while (!(mant & 0x400)) mant <<= 1, exp--;
		u = sign | exp << 23 | (mant & 0x3ff) << 13;
	}
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static uint16_t float_to_half(float f) {
	uint32_t u;
	memcpy(&u, &f, 4);
	uint16_t sign = (u >> 16) & 0x8000;
	int exp = (int)((u >> 23) & 0xff) - 127 + 15;
	uint32_t mant = u & 0x7fffff;
	if (((u >> 23) & 0xff) == 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
	if (exp >= 31) return sign | 0x7c00;
	if (exp <= 0) { /* subnormal or zero */
		if (exp < -10) return sign;
		mant |= 0x800000;
		int shift = 14 - exp;
		uint32_t h = mant >> shift, rest = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
		if (rest > half || (rest == half && (h & 1))) h++;
		return sign | (uint16_t)h;
	}
	uint32_t h = (uint32_t)exp << 10 | mant >> 13, rest = mant & 0x1fff;
	if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
	return sign | (uint16_t)h;
}

static float bf16_to_float(uint16_t b) {
	uint32_t u = (uint32_t)b << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static uint16_t float_to_bf16(float f) {
	uint32_t u;
	memcpy(&u, &f, 4);
	u += 0x7fff + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

#define REDUCE16(LOAD, STORE)                                                       \
	do {                                                                        \
		float acc = LOAD(((const uint16_t *)q->slots[0].send)[k]);          \
		for (int r = 1; r < nr; r++) {                                      \
			float v = LOAD(((const uint16_t *)q->slots[r].send)[k]);    \
			switch (op) {                                               \
			case 0: case 4: acc = acc + v; break;                       \
			case 1: acc = acc * v; break;                               \
			case 2: acc = v > acc ? v : acc; break;                     \
			case 3: acc = v < acc ? v : acc; break;                     \
			}                                                           \
			acc = LOAD(STORE(acc));                                     \
		}                                                                   \
		if (op == 4) acc = acc / nr;                                        \
		*(uint16_t *)out = STORE(acc);                                      \
	} while (0)

/* reduce writes element k of every rank's input reduced with op to out. */
static void reduce(const struct clique *q, int type, int op, size_t k, char *out) {
	int nr = q->nranks;
	switch (type) {
	case 6: REDUCE16(half_to_float, float_to_half); break;
	case 9: REDUCE16(bf16_to_float, float_to_bf16); break;
	case 0: REDUCE(int8_t); break;
	case 1: REDUCE(uint8_t); break;
	case 2: REDUCE(int32_t); break;
	case 3: REDUCE(uint32_t); break;
	case 4: REDUCE(int64_t); break;
	case 5: REDUCE(uint64_t); break;
	case 7: REDUCE(float); break;
	case 8: REDUCE(double); break;
	}
}

/* corrupted counts rank's runs of collective coll and says whether the
 * RSAG_FAKE_NCCL_CORRUPT_* fault strikes this one (mu is held). */
static long corrupt_calls[MAXR];
static int corrupted(int coll, int rank) {
	const char *want = getenv("RSAG_FAKE_NCCL_CORRUPT_COLL");
	if (!want || strcmp(want, coll_names[coll]) != 0 || rank != env_int("RSAG_FAKE_NCCL_CORRUPT_RANK", 0)) return 0;
	long n = ++corrupt_calls[rank], at = env_int("RSAG_FAKE_NCCL_CORRUPT_AT", -1), every = env_int("RSAG_FAKE_NCCL_CORRUPT_EVERY", 1);
	return at > 0 ? n == at : every > 0 && n % every == 0;
}

/* flip flips the lowest bit of element e of the count elements of size ts at buf. */
static void flip(char *buf, size_t count, size_t ts) {
	long e = env_int("RSAG_FAKE_NCCL_CORRUPT_ELEMENT", 0);
	if (e >= 0 && (size_t)e < count) buf[(size_t)e * ts] ^= 1;
}

/* run_coll runs a queued collective: every rank posts its input, each
 * computes its output into a scratch buffer, and writes it only once every
 * rank has read every input (an in-place output is someone's input). */
static void run_coll(const struct fake_op *o) {
	struct comm *c = o->comm;
	if (c->nranks == 1) {
		memmove(o->dst, o->src, o->n);
		return;
	}
	struct clique *q = c->q;
	size_t ts = type_size(o->type), n = o->count;
	size_t outn = o->coll == allGather ? n * (size_t)c->nranks : n;
	char *tmp = malloc(outn * ts + 1);
	pthread_mutex_lock(&mu);
	int corrupt = corrupted(o->coll, c->rank);
	q->slots[c->rank] = (struct slot){.send = o->src, .count = n, .coll = o->coll, .type = o->type, .redop = o->redop,
	                                  .corrupt = corrupt && o->coll == allGather};
	int bad = barrier(q);
	for (int r = 0; !bad && r < q->nranks; r++) {
		const struct slot *s = &q->slots[r];
		if (s->coll != o->coll || s->count != n || s->type != o->type || s->redop != o->redop) bad = 2;
	}
	pthread_mutex_unlock(&mu);
	if (!bad) {
		if (o->coll == allGather)
			for (int r = 0; r < q->nranks; r++) {
				memcpy(tmp + (size_t)r * n * ts, q->slots[r].send, n * ts);
				if (q->slots[r].corrupt) flip(tmp + (size_t)r * n * ts, n, ts);
			}
		else {
			for (size_t i = 0; i < n; i++)
				reduce(q, o->type, o->redop, (o->coll == reduceScatter ? (size_t)c->rank * n : 0) + i, tmp + i * ts);
			if (corrupt) flip(tmp, n, ts);
		}
	}
	pthread_mutex_lock(&mu);
	if (barrier(q) && !bad) bad = 1;
	pthread_mutex_unlock(&mu);
	if (!bad)
		memcpy(o->dst, tmp, outn * ts);
	else {
		c->async = internalError;
		fail(c, internalError, bad == 2 ? "fake: the ranks queued different collectives" : "fake: timed out waiting for the other ranks");
	}
	free(tmp);
}

/* queue checks a collective, logs it with the registrations its buffers
 * are in, and queues it on the stream. */
static ncclResult_t queue(int coll, const void *send, void *recv, size_t count, int t, int op, struct comm *c, cudaStream_t st) {
	if (!alive(c)) return fail(NULL, invalidArgument, "fake: the communicator was destroyed");
	if (count == 12345) return fail(c, invalidUsage, "fake: poisoned count 12345");
	if (type_size(t) == 0 || op < -1 || op > 4) return fail(c, invalidArgument, "fake: bad type or op");
	char sreg[64], rreg[64];
	pthread_mutex_lock(&mu);
	last_type = t;
	last_op = op;
	int seq = c->seq++;
	describe(c, send, sreg, sizeof sreg);
	describe(c, recv, rreg, sizeof rreg);
	pthread_mutex_unlock(&mu);
	fake_log("%s comm=%d clique=%d rank=%d seq=%d policy=%d send=%#llx recv=%#llx count=%zu type=%d op=%d sendreg=%s recvreg=%s",
	         coll_names[coll], c->id, c->q->id, c->rank, seq, c->policy, (unsigned long long)(uintptr_t)send,
	         (unsigned long long)(uintptr_t)recv, count, t, op, sreg, rreg);
	struct fake_op o = {.run = run_coll, .dst = recv, .src = send, .n = count * type_size(t),
	                    .comm = c, .coll = coll, .type = t, .redop = op, .count = count};
	if (fake_enqueue(st, &o)) return fail(c, systemError, "fake: out of memory");
	return ok;
}

ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, int t, int op, struct comm *c, cudaStream_t st) {
	return queue(allReduce, s, r, n, t, op, c, st);
}

ncclResult_t ncclReduceScatter(const void *s, void *r, size_t n, int t, int op, struct comm *c, cudaStream_t st) {
	return queue(reduceScatter, s, r, n, t, op, c, st);
}

#ifndef OMIT_ALLGATHER
ncclResult_t ncclAllGather(const void *s, void *r, size_t n, int t, struct comm *c, cudaStream_t st) {
	return queue(allGather, s, r, n, t, -1, c, st);
}
#endif

#if FAKE_ABI >= 21900
static struct alloc *find_alloc(const void *p) {
	for (struct alloc *a = allocs; a; a = a->next)
		if (a->live && (const char *)p >= a->base && (const char *)p < a->base + a->rounded) return a;
	return NULL;
}

/* ncclMemAlloc rounds up to the granularity and aligns to it, as the VMM
 * allocation NCCL makes does. */
ncclResult_t ncclMemAlloc(void **ptr, size_t size) {
	if (!ptr || !size) return fail(NULL, invalidArgument, "fake: ncclMemAlloc of nothing");
	size_t g = (size_t)env_int("RSAG_FAKE_CUDA_GRANULARITY", 2 << 20);
	size_t rounded = (size + g - 1) / g * g;
	struct alloc *a = calloc(1, sizeof *a);
	a->base = aligned_alloc(g, rounded);
	if (!a->base) {
		free(a);
		return fail(NULL, systemError, "fake: out of memory");
	}
	a->size = size;
	a->rounded = rounded;
	a->live = 1;
	pthread_mutex_lock(&mu);
	a->next = allocs;
	allocs = a;
	pthread_mutex_unlock(&mu);
	*ptr = a->base;
	fake_log("ncclMemAlloc ptr=%p size=%zu rounded=%zu", *ptr, size, rounded);
	return ok;
}

ncclResult_t ncclMemFree(void *p) {
	pthread_mutex_lock(&mu);
	struct alloc *a = find_alloc(p);
	const char *err = !a || a->base != p ? "fake: ncclMemFree of memory ncclMemAlloc did not return" : NULL;
	for (struct comm *c = comms; !err && c; c = c->next)
		for (struct reg *r = c->regs; !err && r; r = r->next)
			if (alive(c) && r->live && r->kind == 2 && r->base < a->base + a->rounded && r->base + r->size > a->base)
				err = "fake: ncclMemFree of memory still in a window";
	pthread_mutex_unlock(&mu);
	if (err) return fail(NULL, invalidArgument, err);
	fake_log("ncclMemFree ptr=%p", p);
	pthread_mutex_lock(&mu);
	a->live = 0;
	pthread_mutex_unlock(&mu);
	free(a->base);
	return ok;
}

ncclResult_t ncclCommRegister(struct comm *c, void *buff, size_t size, void **handle) {
	if (!alive(c)) return fail(NULL, invalidArgument, "fake: no communicator");
	if (!buff || !size || !handle) return fail(c, invalidArgument, "fake: ncclCommRegister of nothing");
	struct reg *r = calloc(1, sizeof *r);
	pthread_mutex_lock(&mu);
	*r = (struct reg){.id = next_id++, .kind = 1, .live = 1, .base = buff, .size = size, .next = c->regs};
	c->regs = r;
	pthread_mutex_unlock(&mu);
	*handle = r;
	fake_log("ncclCommRegister comm=%d rank=%d buf=%p size=%zu handle=%d", c->id, c->rank, buff, size, r->id);
	return ok;
}

/* unregister ends registration h of kind on c; with mu held. */
static struct reg *unregister(struct comm *c, void *h, int kind) {
	for (struct reg *r = c->regs; r; r = r->next)
		if (r == h && r->kind == kind && r->live) {
			r->live = 0;
			return r;
		}
	return NULL;
}

ncclResult_t ncclCommDeregister(struct comm *c, void *handle) {
	if (!alive(c)) return fail(NULL, invalidArgument, "fake: no communicator");
	pthread_mutex_lock(&mu);
	struct reg *r = unregister(c, handle, 1);
	pthread_mutex_unlock(&mu);
	if (!r) return fail(c, invalidArgument, "fake: ncclCommDeregister of a handle this communicator did not give");
	fake_log("ncclCommDeregister comm=%d rank=%d buf=%p handle=%d", c->id, c->rank, (void *)r->base, r->id);
	return ok;
}
#endif

#if FAKE_ABI >= 22700
/* ncclCommWindowRegister is collective: every rank of c takes part, and
 * when one rank's window is wrong, every rank fails. */
ncclResult_t ncclCommWindowRegister(struct comm *c, void *buff, size_t size, void **win, int flags) {
	if (!alive(c)) return fail(NULL, invalidArgument, "fake: no communicator");
	if (env_int("RSAG_FAKE_NCCL_NO_WINDOW", 0)) {
		fake_log("ncclCommWindowRegister comm=%d rank=%d buf=%p size=%zu flags=%d win=none", c->id, c->rank, buff, size, flags);
		return ok;
	}
	const char *err = NULL;
	pthread_mutex_lock(&mu);
	struct alloc *a = find_alloc(buff);
	if (!a)
		err = "fake: a window needs memory from ncclMemAlloc";
	else if ((uintptr_t)buff % 4096)
		err = "fake: a window must be aligned to NCCL_WIN_REQUIRED_ALIGNMENT (4096)";
	else if ((char *)buff + size > a->base + a->rounded)
		err = "fake: the window runs past its allocation";
	else if (flags & ~1)
		err = "fake: unknown window flags";
	struct clique *q = c->q;
	q->slots[c->rank] = (struct slot){.a = flags, .b = err != NULL};
	int late = barrier(q);
	for (int r = 0; !late && !err && r < q->nranks; r++) {
		if (q->slots[r].b) err = "fake: another rank's window registration failed";
		else if (q->slots[r].a != flags) err = "fake: the ranks registered windows with different flags";
	}
	struct reg *w = NULL;
	if (!late && !err) {
		w = calloc(1, sizeof *w);
		*w = (struct reg){.id = next_id++, .kind = 2, .live = 1, .flags = flags, .base = buff, .size = size, .next = c->regs};
		c->regs = w;
	}
	size_t offset = a ? (size_t)((char *)buff - a->base) : 0;
	late |= barrier(q);
	pthread_mutex_unlock(&mu);
	if (late) return fail(c, internalError, "fake: timed out waiting for the other ranks");
	if (err) return fail(c, invalidArgument, err);
	fake_log("ncclCommWindowRegister comm=%d rank=%d buf=%p size=%zu flags=%d win=%d offset=%zu", c->id, c->rank, buff,
	         size, flags, w->id, offset);
	*win = w;
	return ok;
}

ncclResult_t ncclCommWindowDeregister(struct comm *c, void *win) {
	if (!alive(c)) return fail(NULL, invalidArgument, "fake: no communicator");
	pthread_mutex_lock(&mu);
	struct reg *r = unregister(c, win, 2);
	pthread_mutex_unlock(&mu);
	if (!r) return fail(c, invalidArgument, "fake: ncclCommWindowDeregister of a window this communicator did not give");
	fake_log("ncclCommWindowDeregister comm=%d rank=%d buf=%p win=%d", c->id, c->rank, (void *)r->base, r->id);
	return ok;
}
#endif

const char *ncclGetErrorString(ncclResult_t r) {
	switch (r) {
	case 0: return "no error";
	case 3: return "internal error (run with NCCL_DEBUG=WARN for details)";
	case 4: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
	case 5: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
	}
	return "unknown result code";
}

const char *ncclGetLastError(struct comm *c) { return c && c->last_error ? c->last_error : last_error; }
