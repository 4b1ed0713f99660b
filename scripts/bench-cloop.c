// bench-cloop.c: rsag's timed loop (mpi/cgo.go's rsag_samples) written in
// plain C, for scripts/bench-imb.sh: MPI_Init_thread(FUNNELED), float32 sum
// AllReduce out of place, warm-up batches, then samples of `batch` calls
// back to back, each between two reads of the monotonic clock. It prints,
// per size, what bench-imb.sh reduces rsag's and IMB's figures to:
// "size t_avg t_max median" in microseconds per operation, where t_avg and
// t_max are the mean and the maximum over ranks of each rank's mean over
// the kept samples, and median is the median over samples of the slowest
// rank's sample (rsag's own figure). What the C loop shows is the machine's
// and MPI's: what rsag adds above it is rsag's.
//
//   mpicc -O2 -o bench-cloop scripts/bench-cloop.c
//   mpirun -np N ./bench-cloop BATCH WARMUPS CYCLES DISCARD SIZE...
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long long now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv) {
	int provided, rank, size;
	if (argc < 6) {
		fprintf(stderr, "usage: bench-cloop BATCH WARMUPS CYCLES DISCARD SIZE...\n");
		return 2;
	}
	int batch = atoi(argv[1]), warmups = atoi(argv[2]), cycles = atoi(argv[3]), discard = atoi(argv[4]);
	if (batch < 1 || warmups < 0 || cycles < 1 || discard < 0 || discard >= cycles) {
		fprintf(stderr, "bench-cloop: BATCH >= 1, WARMUPS >= 0, CYCLES >= 1 and 0 <= DISCARD < CYCLES\n");
		return 2;
	}
	MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	double *us = malloc(sizeof(double) * cycles), *all = malloc(sizeof(double) * cycles * size);
	for (int a = 5; a < argc; a++) {
		long bytes = atol(argv[a]);
		int count = (int)(bytes / 4);
		float *send = malloc(bytes), *recv = malloc(bytes);
		for (int i = 0; i < count; i++) send[i] = (float)(rank + i % 7);
		memset(recv, 0, bytes);
		for (int w = 0; w < warmups * batch; w++) MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		for (int s = 0; s < cycles; s++) {
			long long t0 = now();
			for (int i = 0; i < batch; i++) MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
			us[s] = (now() - t0) / 1e3 / batch;
		}
		MPI_Gather(us, cycles, MPI_DOUBLE, all, cycles, MPI_DOUBLE, 0, MPI_COMM_WORLD);
		if (rank == 0) {
			double tot = 0, mx = 0, *slowest = malloc(sizeof(double) * cycles);
			int kept = cycles - discard;
			for (int r = 0; r < size; r++) {
				double m = 0;
				for (int s = discard; s < cycles; s++) m += all[r * cycles + s];
				m /= kept;
				tot += m;
				if (m > mx) mx = m;
			}
			for (int s = discard; s < cycles; s++) {
				double w = 0;
				for (int r = 0; r < size; r++) if (all[r * cycles + s] > w) w = all[r * cycles + s];
				slowest[s - discard] = w;
			}
			qsort(slowest, kept, sizeof(double), cmp);
			double med = kept % 2 ? slowest[kept / 2] : (slowest[kept / 2 - 1] + slowest[kept / 2]) / 2;
			printf("%ld %.4f %.4f %.4f\n", bytes, tot / size, mx, med);
			free(slowest);
		}
		free(send);
		free(recv);
	}
	MPI_Finalize();
	return 0;
}
