/* C twin of apps/pingpong: OSU osu_latency and osu_bw method, with the same sizes,
 * iteration counts and output format, so one script can run both side by side.
 *   pingpong_mpi [--min-size N] [--max-size N] [--iters N] [--bw-iters N] [--test latency|bw|all]
 * Sizes are plain byte counts (powers of two from min to max; default 8 to 4194304).
 * latency: half round trip of blocking Send/Recv; --iters (10000) round trips up to 16 KiB,
 *   scaled down in proportion above (at least 20), a tenth of that (at least 3) for warmup.
 * bandwidth: a window of 64 Isends (Irecvs at rank 1), Waitall, then a 4-byte ack;
 *   --bw-iters (100) windows up to 16 KiB, a fifth above (at least 2), after warmup.
 * Before the first size the two ranks ping-pong 8 bytes, untimed, until rank 0 has spent
 * 50 ms (the job's warm-up, as apps/pingpong's warmJob).
 * Needs exactly 2 ranks. Buffers hold non-zero bytes before anything is measured. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 64

/* the job's warm-up (apps/pingpong's warmJob): 8-byte round trips, untimed, until rank 0
 * has spent 50 ms; rank 0's decision travels in the message's first byte */
static void warm_job(int rank, int peer) {
	char buf[8] = {0};
	double t0 = MPI_Wtime();
	for (;;) {
		if (rank == 0) {
			buf[0] = MPI_Wtime() - t0 < 0.050;
			MPI_Send(buf, 8, MPI_CHAR, peer, 2, MPI_COMM_WORLD);
			MPI_Recv(buf, 8, MPI_CHAR, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(buf, 8, MPI_CHAR, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(buf, 8, MPI_CHAR, peer, 2, MPI_COMM_WORLD);
		}
		if (buf[0] == 0) return;
	}
}

static int scaled(int base, long size) {
	if (size <= 16 << 10) return base;
	int it = (int)((long)base * (16 << 10) / size);
	return it < 20 ? 20 : it;
}

static int max(int a, int b) { return a > b ? a : b; }

int main(int argc, char **argv) {
	int rank, nranks;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	long min_size = 8, max_size = 4 << 20;
	int iters = 10000, bw_iters = 100, lat = 1, bw = 1;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--min-size")) min_size = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--max-size")) max_size = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--bw-iters")) bw_iters = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--test")) {
			lat = strcmp(argv[i + 1], "bw") != 0;
			bw = strcmp(argv[i + 1], "latency") != 0;
		} else {
			if (rank == 0) fprintf(stderr, "pingpong_mpi: unknown flag %s\n", argv[i]);
			MPI_Finalize();
			return 2;
		}
	}
	if (nranks != 2 || min_size < 1 || max_size < min_size || iters < 1 || bw_iters < 1) {
		if (rank == 0) fprintf(stderr, "pingpong_mpi: needs exactly 2 ranks (got %d) and 1 <= min-size <= max-size\n", nranks);
		MPI_Finalize();
		return 2;
	}
	char *sbuf = malloc(max_size), *rbuf = malloc(max_size);
	for (long i = 0; i < max_size; i++) {
		sbuf[i] = (char)(i * 7 + 1);
		rbuf[i] = (char)(i * 3 + 2);
	}
	int peer = 1 - rank;
	warm_job(rank, peer);
	char lib[MPI_MAX_LIBRARY_VERSION_STRING];
	int len;
	MPI_Get_library_version(lib, &len);
	const char *name = strstr(lib, "Open MPI") ? "Open MPI" : strstr(lib, "MPICH") ? "MPICH" : "MPI";
	if (rank == 0) printf("# %s pingpong (OSU method): C twin of apps/pingpong\n", name);
	if (lat) {
		if (rank == 0) printf("# latency: half round trip\n%-12s %12s\n", "#bytes", "latency_us");
		for (long n = min_size; n <= max_size; n *= 2) {
			int it = scaled(iters, n), warm = max(it / 10, 3);
			double t0 = 0;
			MPI_Barrier(MPI_COMM_WORLD);
			for (int i = 0; i < warm + it; i++) {
				if (i == warm) t0 = MPI_Wtime();
				if (rank == 0) {
					MPI_Send(sbuf, n, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
					MPI_Recv(rbuf, n, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				} else {
					MPI_Recv(rbuf, n, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
					MPI_Send(sbuf, n, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
				}
			}
			double us = (MPI_Wtime() - t0) * 1e6 / (2.0 * it);
			if (rank == 0) printf("%-12ld %12.2f\n", n, us);
		}
	}
	if (bw) {
		if (rank == 0) printf("# bandwidth: window of %d messages, then an acknowledgement\n%-12s %12s\n", WINDOW, "#bytes", "MB/s");
		MPI_Request req[WINDOW];
		for (long n = min_size; n <= max_size; n *= 2) {
			int it = bw_iters, warm = max(bw_iters / 10, 2);
			if (n > 16 << 10) {
				it = max(it / 5, 2);
				warm = max(warm / 5, 1);
			}
			double t0 = 0;
			MPI_Barrier(MPI_COMM_WORLD);
			for (int i = 0; i < warm + it; i++) {
				if (i == warm) t0 = MPI_Wtime();
				if (rank == 0) {
					for (int w = 0; w < WINDOW; w++) MPI_Isend(sbuf, n, MPI_CHAR, peer, 2, MPI_COMM_WORLD, &req[w]);
					MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
					MPI_Recv(rbuf, 4, MPI_CHAR, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				} else {
					for (int w = 0; w < WINDOW; w++) MPI_Irecv(rbuf, n, MPI_CHAR, peer, 2, MPI_COMM_WORLD, &req[w]);
					MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
					MPI_Send(sbuf, 4, MPI_CHAR, peer, 3, MPI_COMM_WORLD);
				}
			}
			double secs = MPI_Wtime() - t0;
			if (rank == 0) printf("%-12ld %12.2f\n", n, (double)n * WINDOW * it / secs / 1e6);
		}
	}
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
	return 0;
}
