// bench-launch.c: how an operation's time moves over the first seconds of
// a launch, to tell a machine's slow start from a tool's. Rank 0 prints,
// per bin of BIN_OPS operations from the first after MPI_Init: when the
// bin began (s), its time per operation (ms), the machine's steal time
// (ms per s, all processors), the processors' idle time (% of one) and
// rank 0's minor faults and involuntary switches. docs/PERFORMANCE.md
// ("What the slow start is") has what it showed on the 16-core machine.
//
//   mpicc -O2 -o bench-launch scripts/bench-launch.c
//   mpirun -np N ./bench-launch MODE BYTES BINS BIN_OPS
//
// MODE allreduce: MPI_Allreduce of BYTES of float32, sum, out of place,
// back to back. MODE memory: each rank sums two buffers of its own into a
// third (the same bytes, no traffic between ranks), with a barrier after
// each operation, so that the memory's own speed shows apart from MPI's.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

// cpustat reads the steal and idle ticks of all processors (USER_HZ).
static void cpustat(long long *steal, long long *idle) {
	long long user, nice, sys, idl, iowait, irq, softirq, st;
	FILE *f = fopen("/proc/stat", "r");
	*steal = *idle = 0;
	if (!f) return;
	if (fscanf(f, "cpu %lld %lld %lld %lld %lld %lld %lld %lld", &user, &nice, &sys, &idl, &iowait, &irq, &softirq, &st) == 8) {
		*steal = st;
		*idle = idl;
	}
	fclose(f);
}

typedef struct {
	double start, op_ms, steal_ms_per_s, idle_pct;
	long minflt, nivcsw;
} bin;

int main(int argc, char **argv) {
	int provided, rank;
	if (argc != 5 || (strcmp(argv[1], "allreduce") && strcmp(argv[1], "memory"))) {
		fprintf(stderr, "usage: bench-launch allreduce|memory BYTES BINS BIN_OPS\n");
		return 2;
	}
	int memory = strcmp(argv[1], "memory") == 0;
	long bytes = atol(argv[2]);
	int nbins = atoi(argv[3]), binops = atoi(argv[4]);
	if (bytes < 4 || nbins < 1 || binops < 1) {
		fprintf(stderr, "bench-launch: BYTES >= 4, BINS >= 1 and BIN_OPS >= 1\n");
		return 2;
	}
	MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	int count = (int)(bytes / 4);
	float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
	bin *bins = calloc(nbins, sizeof(bin));
	if (!a || !b || !c || !bins) {
		fprintf(stderr, "bench-launch: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	for (int i = 0; i < count; i++) {
		a[i] = (float)(rank + i % 7);
		b[i] = 1;
		c[i] = 0;
	}
	MPI_Barrier(MPI_COMM_WORLD);
	long long steal0, idle0, steal1, idle1;
	struct rusage r0, r1;
	cpustat(&steal0, &idle0);
	getrusage(RUSAGE_SELF, &r0);
	double t0 = now(), tb = t0;
	for (int k = 0; k < nbins; k++) {
		for (int op = 0; op < binops; op++) {
			if (memory) {
				for (int i = 0; i < count; i++) c[i] = a[i] + b[i];
				MPI_Barrier(MPI_COMM_WORLD);
			} else {
				MPI_Allreduce(a, c, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
			}
		}
		double t = now();
		if (rank == 0) {
			cpustat(&steal1, &idle1);
			getrusage(RUSAGE_SELF, &r1);
			// Ticks are 10 ms: steal in ms per s of the bin, idle in % of
			// one processor.
			bins[k] = (bin){tb - t0, (t - tb) * 1e3 / binops, (steal1 - steal0) * 10.0 / (t - tb), (idle1 - idle0) / (t - tb),
				r1.ru_minflt - r0.ru_minflt, r1.ru_nivcsw - r0.ru_nivcsw};
			steal0 = steal1;
			idle0 = idle1;
			r0 = r1;
		}
		tb = now();
	}
	if (rank == 0) {
		printf("# %s %ld bytes, bins of %d operations: start s, ms per operation, steal ms/s, idle %% of a processor, "
		       "minor faults, involuntary switches (rank 0)\n", argv[1], bytes, binops);
		for (int k = 0; k < nbins; k++)
			printf("%6.2f %8.3f %7.1f %6.0f %6ld %5ld\n", bins[k].start, bins[k].op_ms, bins[k].steal_ms_per_s, bins[k].idle_pct,
			       bins[k].minflt, bins[k].nivcsw);
	}
	MPI_Finalize();
	return 0;
}
