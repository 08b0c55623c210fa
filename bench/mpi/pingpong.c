/* C twin of apps/pingpong: OSU osu_latency and osu_bw method, with the same sizes,
 * iteration counts, output format and JSON rows, so one script can run both side by side.
 *   pingpong_mpi [--min-size N] [--max-size N] [--iters N] [--bw-iters N] [--test latency|bw|all]
 *                [--json[=FILE]]
 * Sizes are plain byte counts (powers of two from min to max; default 8 to 4194304).
 * latency: half round trip of blocking Send/Recv; --iters (10000) round trips up to 16 KiB,
 *   scaled down in proportion above (at least 20), a tenth of that (at least 3) for warmup.
 * bandwidth: a window of 64 Isends (Irecvs at rank 1), Waitall, then a 4-byte ack;
 *   --bw-iters (100) windows up to 16 KiB, a fifth above (at least 2), after warmup.
 * Before the first size the two ranks ping-pong 8 bytes, untimed, until rank 0 has spent
 * 50 ms (the job's warm-up, as apps/pingpong's warmJob).
 * Needs exactly 2 ranks. Buffers hold non-zero bytes before anything is measured.
 * --json prints one JSON document instead of the text, --json=FILE writes it to FILE
 * beside the text. Its rows hold vcsw_per_call and ivcsw_per_call: the process's
 * voluntary and involuntary context switches (getrusage, every thread's) per timed
 * iteration (a round trip, or a window and its acknowledgement), averaged over the ranks. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define WINDOW 64
#define MAX_ROWS 64

/* one size of a test: latency_us or MB_per_s in fig */
struct row {
	long bytes;
	int iters;
	double fig;
	double vcsw, ivcsw; /* context switches per timed iteration, averaged over the ranks */
};

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

/* csw reads the process's context switches so far (every thread's): voluntary in v[0],
 * involuntary in v[1] */
static void csw(double v[2]) {
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	v[0] = (double)ru.ru_nvcsw;
	v[1] = (double)ru.ru_nivcsw;
}

/* reduce_cs turns this rank's context switches over it iterations (since before, csw)
 * into the mean per iteration over the ranks */
static void reduce_cs(struct row *r, const double before[2], int it, int nranks) {
	double after[2], per[2];
	csw(after);
	per[0] = (after[0] - before[0]) / it;
	per[1] = (after[1] - before[1]) / it;
	MPI_Allreduce(MPI_IN_PLACE, per, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	r->vcsw = per[0] / nranks;
	r->ivcsw = per[1] / nranks;
}

static void json_rows(FILE *f, const char *name, const char *field, const struct row *rows, int n) {
	fprintf(f, ",\n  \"%s\": [", name);
	for (int i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		fprintf(f, "%s\n    {\n      \"bytes\": %ld,\n      \"iterations\": %d,\n      \"%s\": %.6g,\n      \"vcsw_per_call\": %.6g,\n      \"ivcsw_per_call\": %.6g\n    }",
			i ? "," : "", r->bytes, r->iters, field, r->fig, r->vcsw, r->ivcsw);
	}
	fprintf(f, "\n  ]");
}

static int usage(int rank, const char *msg, const char *arg) {
	if (rank == 0) fprintf(stderr, "pingpong_mpi: %s%s\n", msg, arg);
	MPI_Finalize();
	return 2;
}

int main(int argc, char **argv) {
	int rank, nranks;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	long min_size = 8, max_size = 4 << 20;
	int iters = 10000, bw_iters = 100, lat = 1, bw = 1;
	const char *json = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--json")) json = "-";
		else if (!strncmp(a, "--json=", 7)) json = a + 7;
		else if (!v) return usage(rank, "missing value for ", a);
		else {
			i++;
			if (!strcmp(a, "--min-size")) min_size = atol(v);
			else if (!strcmp(a, "--max-size")) max_size = atol(v);
			else if (!strcmp(a, "--iters")) iters = atoi(v);
			else if (!strcmp(a, "--bw-iters")) bw_iters = atoi(v);
			else if (!strcmp(a, "--test")) {
				lat = strcmp(v, "bw") != 0;
				bw = strcmp(v, "latency") != 0;
			} else return usage(rank, "unknown flag ", a);
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
	char hosts[2][MPI_MAX_PROCESSOR_NAME] = {{0}};
	MPI_Get_processor_name(hosts[rank], &len);
	MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
	FILE *text = rank == 0 && !(json && !strcmp(json, "-")) ? stdout : NULL;
	struct row lrows[MAX_ROWS], brows[MAX_ROWS];
	int nl = 0, nb = 0;
	if (text) fprintf(text, "# %s pingpong (OSU method): C twin of apps/pingpong\n", name);
	if (lat) {
		if (text) fprintf(text, "# latency: half round trip\n%-12s %12s\n", "#bytes", "latency_us");
		for (long n = min_size; n <= max_size && nl < MAX_ROWS; n *= 2) {
			int it = scaled(iters, n), warm = max(it / 10, 3);
			double t0 = 0, cs[2] = {0};
			MPI_Barrier(MPI_COMM_WORLD);
			for (int i = 0; i < warm + it; i++) {
				if (i == warm) {
					csw(cs); /* before the clock starts: the system call is not timed */
					t0 = MPI_Wtime();
				}
				if (rank == 0) {
					MPI_Send(sbuf, n, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
					MPI_Recv(rbuf, n, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				} else {
					MPI_Recv(rbuf, n, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
					MPI_Send(sbuf, n, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
				}
			}
			double us = (MPI_Wtime() - t0) * 1e6 / (2.0 * it);
			struct row *r = &lrows[nl++];
			*r = (struct row){.bytes = n, .iters = it, .fig = us};
			reduce_cs(r, cs, it, nranks);
			if (text) fprintf(text, "%-12ld %12.2f\n", n, us);
		}
	}
	if (bw) {
		if (text) fprintf(text, "# bandwidth: window of %d messages, then an acknowledgement\n%-12s %12s\n", WINDOW, "#bytes", "MB/s");
		MPI_Request req[WINDOW];
		for (long n = min_size; n <= max_size && nb < MAX_ROWS; n *= 2) {
			int it = bw_iters, warm = max(bw_iters / 10, 2);
			if (n > 16 << 10) {
				it = max(it / 5, 2);
				warm = max(warm / 5, 1);
			}
			double t0 = 0, cs[2] = {0};
			MPI_Barrier(MPI_COMM_WORLD);
			for (int i = 0; i < warm + it; i++) {
				if (i == warm) {
					csw(cs);
					t0 = MPI_Wtime();
				}
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
			struct row *r = &brows[nb++];
			*r = (struct row){.bytes = n, .iters = it, .fig = (double)n * WINDOW * it / secs / 1e6};
			reduce_cs(r, cs, it, nranks);
			if (text) fprintf(text, "%-12ld %12.2f\n", n, r->fig);
		}
	}
	if (rank == 0 && json) {
		FILE *f = strcmp(json, "-") ? fopen(json, "w") : stdout;
		if (!f) {
			perror(json);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		fprintf(f, "{\n  \"benchmark\": \"pingpong\",\n  \"system\": \"%s\",\n  \"transport\": \"mpi\",\n  \"progress\": \"mpi\",\n"
			"  \"hosts\": [\"%s\", \"%s\"],\n  \"pairs\": 1", name, hosts[0], hosts[1]);
		if (nl) json_rows(f, "latency", "latency_us", lrows, nl);
		if (nb) json_rows(f, "bandwidth", "MB_per_s", brows, nb);
		fprintf(f, "\n}\n");
		if (f != stdout) fclose(f);
	}
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
	return 0;
}
