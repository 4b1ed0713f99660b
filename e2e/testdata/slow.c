// slow.c is a PMPI interposer that makes one rank's collectives of given
// sizes take at least a given time, from outside rsag (STYLE.md: faults
// come from outside), so that a test can plant a known slowdown in a real
// run and a floor that keeps every timed case well above a loaded
// machine's noise. The e2e tests build it with mpicc -shared -fPIC and load
// it with mpirun -x LD_PRELOAD=libslow.so. Every call is passed on to its
// PMPI_ twin; a matching one sleeps first:
//
//   SLOW_RANK  the MPI_COMM_WORLD rank that sleeps; unset: none does
//   SLOW_SPEC  a comma-separated list of CALL:BYTES:MICROSECONDS, e.g.
//              "Allreduce:215040:20000,Allgather:107520:20000": a call of
//              that name (Allreduce, Reduce_scatter_block or Allgather)
//              moving that many bytes (the count argument times its type's
//              size) sleeps that long before it is passed on
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int rank(void) {
	int r = -1;
	PMPI_Comm_rank(MPI_COMM_WORLD, &r);
	return r;
}

static long bytes_of(int count, MPI_Datatype type) {
	int size = 0;
	PMPI_Type_size(type, &size);
	return (long)count * size;
}

// delay_of is the sleep SLOW_SPEC gives call moving bytes, in µs; 0: none.
static long delay_of(const char *call, long bytes) {
	const char *spec = getenv("SLOW_SPEC"), *want = getenv("SLOW_RANK");
	if (!spec || !want || !*want || rank() != atoi(want)) return 0;
	char buf[1024];
	snprintf(buf, sizeof buf, "%s", spec);
	char *save = NULL;
	for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char name[64];
		long b = -1, us = 0;
		if (sscanf(item, "%63[^:]:%ld:%ld", name, &b, &us) == 3 && strcmp(name, call) == 0 && b == bytes) return us;
	}
	return 0;
}

static void maybe_sleep(const char *call, long bytes) {
	long us = delay_of(call, bytes);
	if (us <= 0) return;
	struct timespec left = {us / 1000000, (us % 1000000) * 1000};
	while (nanosleep(&left, &left) != 0 && errno == EINTR) {
	}
}

int MPI_Allgather(const void *send, int scount, MPI_Datatype stype, void *recv, int rcount, MPI_Datatype rtype, MPI_Comm comm) {
	maybe_sleep("Allgather", bytes_of(rcount, rtype));
	return PMPI_Allgather(send, scount, stype, recv, rcount, rtype, comm);
}

int MPI_Allreduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
	maybe_sleep("Allreduce", bytes_of(count, type));
	return PMPI_Allreduce(send, recv, count, type, op, comm);
}

int MPI_Reduce_scatter_block(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
	maybe_sleep("Reduce_scatter_block", bytes_of(count, type));
	return PMPI_Reduce_scatter_block(send, recv, count, type, op, comm);
}
