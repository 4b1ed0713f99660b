// vanish.c is a PMPI interposer that makes one rank exit inside one MPI
// call, with status 0 and without a word from rsag (no message, no note,
// no final heartbeat), from outside rsag, so that a test can prove the
// rest of the job names the rank that vanished (STYLE.md: faults come from
// outside). The e2e tests build it with mpicc -shared -fPIC and load it
// into the ranks alone with mpirun -x LD_PRELOAD=libvanish.so. Every call
// is passed on to its PMPI_ twin but the one that ends the rank:
//
//   VANISH_RANK   the MPI_COMM_WORLD rank that exits; unset: none does
//   VANISH_CALL   the call it exits in: Allreduce, Reduce_scatter_block or
//                 Allgather
//   VANISH_BYTES  only calls that move this many bytes (the count argument
//                 times its type's size); unset: any
//   VANISH_AFTER  let this many matching calls through first (default 0)
//
// It says on stderr that it makes the rank exit, so a test can tell the
// fault was there.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long env_long(const char *name, long unset) {
	const char *v = getenv(name);
	return v && *v ? strtol(v, NULL, 10) : unset;
}

static long matched; // matching calls seen

// maybe_vanish ends the process when call, moving bytes, is the one.
static void maybe_vanish(const char *call, long bytes) {
	const char *want = getenv("VANISH_CALL");
	long want_rank = env_long("VANISH_RANK", -1), want_bytes = env_long("VANISH_BYTES", -1);
	int rank = -1;
	PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (!want || strcmp(want, call) != 0 || want_rank < 0 || rank != want_rank) return;
	if (want_bytes >= 0 && bytes != want_bytes) return;
	if (matched++ < env_long("VANISH_AFTER", 0)) return;
	fprintf(stderr, "vanish.c: rank %d exits in MPI_%s (%ld bytes), call %ld\n", rank, call, bytes, matched);
	fflush(stderr);
	_exit(0);
}

static long bytes_of(int count, MPI_Datatype type) {
	int size = 0;
	PMPI_Type_size(type, &size);
	return (long)count * size;
}

int MPI_Allreduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
	maybe_vanish("Allreduce", bytes_of(count, type));
	return PMPI_Allreduce(send, recv, count, type, op, comm);
}

int MPI_Reduce_scatter_block(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
	maybe_vanish("Reduce_scatter_block", bytes_of(count, type));
	return PMPI_Reduce_scatter_block(send, recv, count, type, op, comm);
}

int MPI_Allgather(const void *send, int scount, MPI_Datatype stype, void *recv, int rcount, MPI_Datatype rtype, MPI_Comm comm) {
	maybe_vanish("Allgather", bytes_of(rcount, rtype));
	return PMPI_Allgather(send, scount, stype, recv, rcount, rtype, comm);
}
