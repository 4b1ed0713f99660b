// spin.c is a PMPI interposer that makes one rank spin on its processor
// right after one MPI call has returned, from outside rsag (STYLE.md:
// faults come from outside): the rank lives (state R), its heartbeat stays
// fresh, and it never reaches the next collective, which the other ranks
// wait in. It is what a rank stuck in its own code between two
// collectives looks like. The tests and scripts/stuck-proof.sh build it
// with mpicc -shared -fPIC and load it into the ranks alone with
// mpirun -x LD_PRELOAD=libspin.so. Every call is passed on to its PMPI_
// twin; after the matching one returns, the rank spins:
//
//   SPIN_RANK     the MPI_COMM_WORLD rank that spins; unset: none does
//   SPIN_CALL     the call it spins after: Barrier, Bcast, Allgather,
//                 Allreduce or Reduce_scatter_block
//   SPIN_BYTES    only calls that move this many bytes (the count argument
//                 times its type's size); unset: any
//   SPIN_AFTER_S  spin after the first matching call that returns this many
//                 seconds after the first matching call did (default 0)
//   SPIN_SECONDS  how long it spins, once (default 600)
//
// It says on stderr when it starts to spin, so a test can tell the fault
// was there and when.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long env_long(const char *name, long unset) {
	const char *v = getenv(name);
	return v && *v ? strtol(v, NULL, 10) : unset;
}

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static double first; // when the first matching call returned; 0: none yet
static int spun;

// maybe_spin spins when call, moving bytes, is the one to spin after.
static void maybe_spin(const char *call, long bytes) {
	const char *want = getenv("SPIN_CALL");
	long want_rank = env_long("SPIN_RANK", -1), want_bytes = env_long("SPIN_BYTES", -1);
	if (spun || !want || strcmp(want, call) != 0 || want_rank < 0) return;
	int rank = -1;
	PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (rank != want_rank || (want_bytes >= 0 && bytes != want_bytes)) return;
	double t = now();
	if (first == 0) first = t;
	if (t - first < env_long("SPIN_AFTER_S", 0)) return;
	spun = 1;
	long secs = env_long("SPIN_SECONDS", 600);
	fprintf(stderr, "spin.c: rank %d spins after MPI_%s (%ld bytes) for %ld s\n", rank, call, bytes, secs);
	fflush(stderr);
	volatile unsigned long n = 0;
	for (double end = now() + secs; now() < end;) {
		for (int i = 0; i < 1000000; i++) n++;
	}
}

static long bytes_of(int count, MPI_Datatype type) {
	int size = 0;
	PMPI_Type_size(type, &size);
	return (long)count * size;
}

int MPI_Barrier(MPI_Comm comm) {
	int rc = PMPI_Barrier(comm);
	maybe_spin("Barrier", 0);
	return rc;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
	int rc = PMPI_Bcast(buf, count, type, root, comm);
	maybe_spin("Bcast", bytes_of(count, type));
	return rc;
}

int MPI_Allgather(const void *send, int scount, MPI_Datatype stype, void *recv, int rcount, MPI_Datatype rtype, MPI_Comm comm) {
	int rc = PMPI_Allgather(send, scount, stype, recv, rcount, rtype, comm);
	maybe_spin("Allgather", bytes_of(rcount, rtype));
	return rc;
}

int MPI_Allreduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
	int rc = PMPI_Allreduce(send, recv, count, type, op, comm);
	maybe_spin("Allreduce", bytes_of(count, type));
	return rc;
}

int MPI_Reduce_scatter_block(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
	int rc = PMPI_Reduce_scatter_block(send, recv, count, type, op, comm);
	maybe_spin("Reduce_scatter_block", bytes_of(count, type));
	return rc;
}
