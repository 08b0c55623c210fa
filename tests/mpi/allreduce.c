/* MPI_Allreduce check for golaunch's PMI-1 service: every rank contributes rank+1 and
 * an array of 1000 doubles; each rank checks the sums and prints one line. */
#include <mpi.h>
#include <stdio.h>

#define N 1000

int main(int argc, char **argv) {
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	long mine = rank + 1, sum = 0;
	MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	static double in[N], out[N];
	for (int i = 0; i < N; i++)
		in[i] = rank * (double)N + i;
	MPI_Allreduce(in, out, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	int bad = sum != (long)size * (size + 1) / 2;
	for (int i = 0; i < N; i++) {
		double want = (double)N * size * (size - 1) / 2 + (double)i * size;
		if (out[i] != want)
			bad = 1;
	}
	if (bad) {
		fprintf(stderr, "rank %d: allreduce wrong (sum %ld)\n", rank, sum);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	printf("allreduce ok rank %d of %d sum %ld\n", rank, size, sum);
	MPI_Finalize();
	return 0;
}
