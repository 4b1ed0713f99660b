// stall.c is a PMPI interposer that stops one rank inside one MPI call, from
// outside rsag, so that a test can prove that the rest of the job notices a
// stuck rank (STYLE.md: faults come from outside). The e2e tests build it
// with mpicc -shared -fPIC and load it into the ranks alone with
// mpirun -x LD_PRELOAD=libstall.so (mpirun itself has no libmpi to bind it
// to). Every call is passed on to its PMPI_ twin; one is delayed first:
//
//   STALL_RANK     the MPI_COMM_WORLD rank that stalls; "all": every rank
//                  does (no rank is behind); unset: none does
//   STALL_CALL     the call it stalls in: Init_thread, Barrier, Bcast,
//                  Allgather, Allreduce or Reduce_scatter_block
//   STALL_BYTES    only calls that move this many bytes (the count argument
//                  times its type's size); unset: any
//   STALL_AFTER    let this many matching calls through first (default 0)
//   STALL_SECONDS  how long it sleeps, once (default 600)
//   STALL_EVERY    stall again at every STALL_EVERY-th matching call after
//                  the first, for STALL_MS milliseconds each: a planted
//                  tail rather than a stall (default 0: once)
//
// It says on stderr when it stalls, so a test can tell the fault was there.
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long env_long(const char *name, long unset) {
	const char *v = getenv(name);
	return v && *v ? strtol(v, NULL, 10) : unset;
}

// rank is this process's world rank: the launcher's before MPI_Init.
static int rank(void) {
	int initialized = 0, r = -1;
	PMPI_Initialized(&initialized);
	if (initialized) {
		PMPI_Comm_rank(MPI_COMM_WORLD, &r);
		return r;
	}
	const char *v = getenv("OMPI_COMM_WORLD_RANK");
	if (!v) v = getenv("PMIX_RANK");
	return v ? atoi(v) : -1;
}

static long matched; // matching calls seen
static int stalled;

// maybe_stall sleeps when call, moving bytes, is the one to stall in.
static void maybe_stall(const char *call, long bytes) {
	const char *want = getenv("STALL_CALL");
	const char *all = getenv("STALL_RANK");
	long want_rank = all && strcmp(all, "all") == 0 ? rank() : env_long("STALL_RANK", -1), want_bytes = env_long("STALL_BYTES", -1);
	if (stalled || !want || strcmp(want, call) != 0 || want_rank < 0 || rank() != want_rank) return;
	if (want_bytes >= 0 && bytes != want_bytes) return;
	long after = env_long("STALL_AFTER", 0), every = env_long("STALL_EVERY", 0), n = matched++;
	if (n < after) return;
	struct timespec left = {env_long("STALL_SECONDS", 600), 0};
	if (every > 0) {
		if ((n - after) % every != 0) return;
		long ms = env_long("STALL_MS", 10);
		left = (struct timespec){ms / 1000, (ms % 1000) * 1000000L};
		if (n == after) {
			fprintf(stderr, "stall.c: rank %ld sleeps %ld ms in every %ld-th MPI_%s (%ld bytes)\n", want_rank, ms, every, call, bytes);
			fflush(stderr);
		}
	} else {
		stalled = 1;
		fprintf(stderr, "stall.c: rank %ld stalls in MPI_%s (%ld bytes) for %ld s\n", want_rank, call, bytes, (long)left.tv_sec);
		fflush(stderr);
	}
	// nanosleep ends early when a signal's handler runs on this thread:
	// sleep again for what is left.
	while (nanosleep(&left, &left) != 0 && errno == EINTR) {
	}
}

static long bytes_of(int count, MPI_Datatype type) {
	int size = 0;
	PMPI_Type_size(type, &size);
	return (long)count * size;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
	maybe_stall("Init_thread", 0);
	return PMPI_Init_thread(argc, argv, required, provided);
}

int MPI_Barrier(MPI_Comm comm) {
	maybe_stall("Barrier", 0);
	return PMPI_Barrier(comm);
}

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
	maybe_stall("Bcast", bytes_of(count, type));
	return PMPI_Bcast(buf, count, type, root, comm);
}

int MPI_Allgather(const void *send, int scount, MPI_Datatype stype, void *recv, int rcount, MPI_Datatype rtype, MPI_Comm comm) {
	maybe_stall("Allgather", bytes_of(rcount, rtype));
	return PMPI_Allgather(send, scount, stype, recv, rcount, rtype, comm);
}

int MPI_Allreduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
	maybe_stall("Allreduce", bytes_of(count, type));
	return PMPI_Allreduce(send, recv, count, type, op, comm);
}

int MPI_Reduce_scatter_block(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
	maybe_stall("Reduce_scatter_block", bytes_of(count, type));
	return PMPI_Reduce_scatter_block(send, recv, count, type, op, comm);
}
