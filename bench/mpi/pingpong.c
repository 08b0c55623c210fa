/* C twin of apps/pingpong: OSU osu_latency and osu_bw method, same sizes and output.
 * latency: half round trip of blocking send/recv, warmup then iterations scaled by size.
 * bandwidth: window of 64 non-blocking sends, then a 4-byte ack. Needs exactly 2 ranks. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZE (4 << 20)
#define WINDOW 64

static int iters_for(long size, int small) {
	int it = size <= 8192 ? small : (int)(small * 8192 / size);
	return it < 20 ? 20 : it;
}

int main(int argc, char **argv) {
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2) {
		if (rank == 0) fprintf(stderr, "pingpong needs exactly 2 ranks, got %d\n", size);
		MPI_Finalize();
		return 2;
	}
	int small = argc > 1 ? atoi(argv[1]) : 10000;
	char *buf = malloc(MAX_SIZE), *rbuf = malloc(MAX_SIZE);
	memset(buf, 'a', MAX_SIZE);
	memset(rbuf, 'b', MAX_SIZE);
	int peer = 1 - rank;
	if (rank == 0) printf("# latency\n#bytes  latency_us\n");
	for (long n = 8; n <= MAX_SIZE; n *= 2) {
		int it = iters_for(n, small), warm = it / 10 + 3;
		double t0 = 0;
		for (int i = 0; i < it + warm; i++) {
			if (i == warm) { MPI_Barrier(MPI_COMM_WORLD); t0 = MPI_Wtime(); }
			if (rank == 0) {
				MPI_Send(buf, n, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
				MPI_Recv(rbuf, n, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			} else {
				MPI_Recv(rbuf, n, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				MPI_Send(buf, n, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
			}
		}
		double us = (MPI_Wtime() - t0) * 1e6 / (2.0 * it);
		if (rank == 0) printf("%-8ld %.3f\n", n, us);
	}
	if (rank == 0) printf("# bandwidth\n#bytes  MB/s\n");
	MPI_Request req[WINDOW];
	for (long n = 8; n <= MAX_SIZE; n *= 2) {
		int it = iters_for(n, small / 10 > 20 ? small / 10 : 20), warm = it / 10 + 2;
		double t0 = 0;
		for (int i = 0; i < it + warm; i++) {
			if (i == warm) { MPI_Barrier(MPI_COMM_WORLD); t0 = MPI_Wtime(); }
			if (rank == 0) {
				for (int w = 0; w < WINDOW; w++) MPI_Isend(buf, n, MPI_CHAR, peer, 2, MPI_COMM_WORLD, &req[w]);
				MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
				MPI_Recv(rbuf, 4, MPI_CHAR, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			} else {
				for (int w = 0; w < WINDOW; w++) MPI_Irecv(rbuf, n, MPI_CHAR, peer, 2, MPI_COMM_WORLD, &req[w]);
				MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
				MPI_Send(buf, 4, MPI_CHAR, peer, 3, MPI_COMM_WORLD);
			}
		}
		double secs = MPI_Wtime() - t0;
		if (rank == 0) printf("%-8ld %.2f\n", n, (double)n * WINDOW * it / secs / 1e6);
	}
	free(buf);
	free(rbuf);
	MPI_Finalize();
	return 0;
}
