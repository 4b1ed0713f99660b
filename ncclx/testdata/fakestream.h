/*
 * The fake stream that fakecuda.c and fakenccl.c share (a CUstream is a
 * pointer to one). Work queued on a stream runs at once, unless the stream
 * is being captured: then it is recorded, and cuGraphLaunch replays the
 * records. Both fakes queue every copy, memset and collective through
 * fake_enqueue, so a captured graph holds exactly what was queued.
 */
#ifndef RSAG_FAKESTREAM_H
#define RSAG_FAKESTREAM_H

#include <stdlib.h>
#include <string.h>

struct fake_op {
	void (*run)(const struct fake_op *);
	void *dst;
	const void *src;
	size_t n;                /* bytes to copy, or elements to set */
	unsigned size;           /* element size of a memset */
	unsigned long long v;    /* memset value */
	/* A collective of the fake NCCL, which runs it across the ranks of
	 * comm when the op runs (at once, or when its graph is launched). */
	void *comm;
	int coll, type, redop;
	size_t count;
};

struct fake_stream {
	int capturing;   /* between cuStreamBeginCapture_v2 and cuStreamEndCapture */
	int invalidated; /* a call CUDA refuses during capture was made: EndCapture fails */
	size_t nops, cap;
	struct fake_op *ops;
};

/* fake_enqueue runs op now, or records it when s is being captured. It
 * returns 0, or 2 (out of memory) when a record cannot be kept. */
static inline int fake_enqueue(void *stream, const struct fake_op *op) {
	struct fake_stream *s = stream;
	if (s == NULL || !s->capturing) {
		op->run(op);
		return 0;
	}
	if (s->nops == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		struct fake_op *ops = realloc(s->ops, cap * sizeof *ops);
		if (ops == NULL) return 2;
		s->ops = ops;
		s->cap = cap;
	}
	s->ops[s->nops++] = *op;
	return 0;
}

static inline void fake_run_copy(const struct fake_op *op) { memmove(op->dst, op->src, op->n); }

#endif
