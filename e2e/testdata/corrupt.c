// corrupt.c is a PMPI interposer that corrupts the result of one MPI
// collective on one rank, from outside rsag, so that a test can prove that
// rsag catches a wrong result and names the rank, host, step and element
// where it arose (STYLE.md: faults come from outside). The e2e tests build
// it with mpicc -shared -fPIC and load it into the ranks alone with
// mpirun -x LD_PRELOAD=libcorrupt.so. Every call is passed on to its PMPI_
// twin; at the matching calls of the named rank, one bit flips:
//
//   CORRUPT_RANK       the MPI_COMM_WORLD rank whose calls are corrupted;
//                      unset: none is
//   CORRUPT_CALL       Allreduce: an element of its output;
//                      Reduce_scatter_block: an element of the rank's shard;
//                      Allgather: an element of what the rank sends, so
//                      that every rank receives that chunk wrong (with
//                      CORRUPT_CHUNK, of what it receives in that chunk,
//                      so that it alone has it wrong)
//   CORRUPT_BYTES      only calls that move this many bytes (the count
//                      argument times its type's size: the shard of
//                      Reduce_scatter_block and Allgather); unset: any
//   CORRUPT_MIN_BYTES  only calls that move at least this many (default
//                      64: rsag's own agreements between ranks move fewer)
//   CORRUPT_EVERY      every Nth matching call (default 1: each one)
//   CORRUPT_AT         only the Nth matching call, counted from 1
//   CORRUPT_ELEMENT    the element whose lowest bit flips (default 0)
//
// It says on stderr each time it corrupts a call, so a test can tell the
// fault was there.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long env_long(const char *name, long unset) {
	const char *v = getenv(name);
	return v && *v ? strtol(v, NULL, 10) : unset;
}

static int world_rank(void) {
	int r = -1;
	PMPI_Comm_rank(MPI_COMM_WORLD, &r);
	return r;
}

static long matched; // matching calls seen

// strikes says whether this call, moving bytes, is one to corrupt, and
// counts it when it matches.
static int strikes(const char *call, long bytes) {
	const char *want = getenv("CORRUPT_CALL");
	long want_rank = env_long("CORRUPT_RANK", -1), want_bytes = env_long("CORRUPT_BYTES", -1);
	if (!want || strcmp(want, call) != 0 || want_rank < 0 || world_rank() != want_rank) return 0;
	if ((want_bytes >= 0 && bytes != want_bytes) || bytes < env_long("CORRUPT_MIN_BYTES", 64)) return 0;
	long n = ++matched, at = env_long("CORRUPT_AT", -1), every = env_long("CORRUPT_EVERY", 1);
	return at > 0 ? n == at : every > 0 && n % every == 0;
}

// flip flips the lowest bit of element e of buf (elements of size bytes,
// count of them), and says so.
static void flip(const char *call, const char *what, void *buf, long e, int size, long count) {
	if (e < 0 || e >= count) return;
	((unsigned char *)buf)[e * size] ^= 1;
	fprintf(stderr, "corrupt.c: rank %d flips a bit of element %ld of %s in MPI_%s call %ld (%ld bytes)\n",
	        world_rank(), e, what, call, matched, count * size);
	fflush(stderr);
}

static int type_size(MPI_Datatype type) {
	int size = 0;
	PMPI_Type_size(type, &size);
	return size;
}

int MPI_Allreduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
	int size = type_size(type);
	int hit = strikes("Allreduce", (long)count * size);
	int rc = PMPI_Allreduce(send, recv, count, type, op, comm);
	if (hit && rc == MPI_SUCCESS) flip("Allreduce", "its output", recv, env_long("CORRUPT_ELEMENT", 0), size, count);
	return rc;
}

int MPI_Reduce_scatter_block(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
	int size = type_size(type);
	int hit = strikes("Reduce_scatter_block", (long)count * size);
	int rc = PMPI_Reduce_scatter_block(send, recv, count, type, op, comm);
	// In place too the shard is at the start of recv.
	if (hit && rc == MPI_SUCCESS) flip("Reduce_scatter_block", "its shard", recv, env_long("CORRUPT_ELEMENT", 0), size, count);
	return rc;
}

int MPI_Allgather(const void *send, int scount, MPI_Datatype stype, void *recv, int rcount, MPI_Datatype rtype, MPI_Comm comm) {
	int size = type_size(rtype);
	long chunk = env_long("CORRUPT_CHUNK", -1), e = env_long("CORRUPT_ELEMENT", 0);
	if (!strikes("Allgather", (long)rcount * size)) return PMPI_Allgather(send, scount, stype, recv, rcount, rtype, comm);
	if (chunk >= 0) { // what this rank receives in one chunk
		int rc = PMPI_Allgather(send, scount, stype, recv, rcount, rtype, comm);
		if (rc == MPI_SUCCESS) flip("Allgather", "the chunk it received", (char *)recv + chunk * rcount * size, e, size, rcount);
		return rc;
	}
	if (send == MPI_IN_PLACE) { // what it sends is its own chunk of recv, at its rank in comm
		int r = 0;
		PMPI_Comm_rank(comm, &r);
		flip("Allgather", "what it sends", (char *)recv + (long)r * rcount * size, e, size, rcount);
		return PMPI_Allgather(send, scount, stype, recv, rcount, rtype, comm);
	}
	long bytes = (long)scount * type_size(stype);
	void *copy = malloc(bytes > 0 ? bytes : 1);
	if (!copy) return PMPI_Allgather(send, scount, stype, recv, rcount, rtype, comm);
	memcpy(copy, send, bytes);
	flip("Allgather", "what it sends", copy, e, size, rcount);
	int rc = PMPI_Allgather(copy, scount, stype, recv, rcount, rtype, comm);
	free(copy);
	return rc;
}
