/* C twin of apps/halobench: a 2D halo column exchange with a vector datatype, with the
 * same method, options and output format, so one script can run both side by side.
 *   halobench_mpi [--sizes N,N,...] [--iters N] [--warmup N] [--json[=FILE]]
 * Every rank owns an N x N row-major double matrix with one ghost column on each side
 * (N rows of N+2); the ranks form a ring. A column is MPI_Type_vector(N, 1, N+2,
 * MPI_DOUBLE), committed once per size; an exchange is two MPI_Sendrecv calls: the last
 * owned column to the right neighbour while the left ghost comes from the left, then the
 * first owned column to the left while the right ghost comes from the right. After a
 * Barrier, --warmup (100) exchanges run untimed and --iters (1000) timed; the figure is
 * rank 0's time of the timed ones over their number, in microseconds. The boundary
 * columns hold values of value_of (apps/halobench's valueOf) and the ghosts are checked
 * after the first exchange and after the last: a wrong value aborts the job. Before the
 * first size the ranks exchange the columns of a 64 x 64 matrix, untimed, until rank 0
 * has spent 50 ms (the job's warm-up, as apps/halobench's warmJob); rank 0's decision
 * travels in an MPI_Bcast after each exchange.
 * Sizes default to 64,256,1024,4096 (2 to 65536). Needs at least 2 ranks. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_N (1 << 16)
#define MAX_SIZES 64
#define TAG_RIGHT 1
#define TAG_LEFT 2

static int rank, nranks;

/* value_of is apps/halobench's valueOf: distinct for every argument, exact in a double */
static double value_of(int phase, int r, int row, int side) {
	return (double)((((int64_t)phase << 20 | r) << 17 | row) << 1 | side);
}

struct halo {
	int n, ld, left, right;
	double *a;
	MPI_Datatype col;
};

static void stamp(struct halo *h, int phase) {
	for (int i = 0; i < h->n; i++) {
		double *row = h->a + (size_t)i * h->ld;
		row[0] = row[h->n + 1] = -1;
		row[1] = value_of(phase, rank, i, 0);
		row[h->n] = value_of(phase, rank, i, 1);
	}
}

static void check(struct halo *h, int phase, const char *when) {
	for (int i = 0; i < h->n; i++) {
		double *row = h->a + (size_t)i * h->ld;
		double wl = value_of(phase, h->left, i, 1), wr = value_of(phase, h->right, i, 0);
		if (row[0] != wl || row[h->n + 1] != wr) {
			fprintf(stderr, "halobench_mpi: rank %d, N=%d, after the %s exchange, row %d: ghosts hold %g and %g, want %g and %g\n",
				rank, h->n, when, i, row[0], row[h->n + 1], wl, wr);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
}

static void exchange(struct halo *h) {
	MPI_Sendrecv(h->a + h->n, 1, h->col, h->right, TAG_RIGHT, h->a, 1, h->col, h->left, TAG_RIGHT,
		MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Sendrecv(h->a + 1, 1, h->col, h->left, TAG_LEFT, h->a + h->n + 1, 1, h->col, h->right, TAG_LEFT,
		MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

static struct halo new_halo(int n) {
	struct halo h = {n, n + 2, (rank + nranks - 1) % nranks, (rank + 1) % nranks, NULL, MPI_DATATYPE_NULL};
	h.a = calloc((size_t)n * h.ld, sizeof(double));
	if (!h.a) {
		fprintf(stderr, "halobench_mpi: rank %d: no memory for N=%d\n", rank, n);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	MPI_Type_vector(n, 1, h.ld, MPI_DOUBLE, &h.col);
	MPI_Type_commit(&h.col);
	return h;
}

static void free_halo(struct halo *h) {
	MPI_Type_free(&h->col);
	free(h->a);
}

/* warm_job is apps/halobench's warmJob: exchanges of a 64 x 64 matrix until rank 0 has
 * spent 50 ms, its decision broadcast after each one */
static void warm_job(void) {
	struct halo h = new_halo(64);
	int more = 1;
	double t0 = MPI_Wtime();
	while (more) {
		exchange(&h);
		if (rank == 0) more = MPI_Wtime() - t0 < 0.050;
		MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
	}
	free_halo(&h);
}

/* measure_size returns the mean microseconds of one exchange of an N x N matrix */
static double measure_size(int n, int iters, int warmup) {
	struct halo h = new_halo(n);
	stamp(&h, 1);
	MPI_Barrier(MPI_COMM_WORLD);
	for (int i = 0; i < warmup; i++) {
		exchange(&h);
		if (i == 0) check(&h, 1, "first");
	}
	stamp(&h, 2);
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	for (int i = 0; i < iters; i++) exchange(&h);
	double us = (MPI_Wtime() - t0) * 1e6 / iters;
	check(&h, 2, "last");
	free_halo(&h);
	return us;
}

static int usage(const char *what, const char *arg) {
	if (rank == 0) fprintf(stderr, "halobench_mpi: %s%s\n", what, arg ? arg : "");
	MPI_Finalize();
	return 2;
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	int sizes[MAX_SIZES] = {64, 256, 1024, 4096}, nsizes = 4, iters = 1000, warmup = 100;
	const char *json = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--json")) json = "-";
		else if (!strncmp(a, "--json=", 7)) json = a + 7;
		else if (!v) return usage("missing value for ", a);
		else {
			i++;
			if (!strcmp(a, "--iters")) iters = atoi(v);
			else if (!strcmp(a, "--warmup")) warmup = atoi(v);
			else if (!strcmp(a, "--sizes")) {
				char *list = strdup(v);
				nsizes = 0;
				for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
					int n = atoi(t);
					if (n < 2 || n > MAX_N || nsizes == MAX_SIZES) return usage("--sizes: want matrix sizes N from 2 to 65536, such as 64,256,1024,4096, not ", v);
					sizes[nsizes++] = n;
				}
				free(list);
				if (!nsizes) return usage("--sizes: empty list", NULL);
			} else return usage("unknown flag ", a);
		}
	}
	if (iters < 1 || warmup < 1) return usage("--iters and --warmup must be at least 1", NULL);
	if (nranks < 2) return usage("needs at least 2 ranks", NULL);

	char lib[MPI_MAX_LIBRARY_VERSION_STRING], host[MPI_MAX_PROCESSOR_NAME] = {0};
	int len;
	MPI_Get_library_version(lib, &len);
	const char *system = strstr(lib, "Open MPI") ? "Open MPI" : strstr(lib, "MPICH") ? "MPICH" : "MPI";
	MPI_Get_processor_name(host, &len);
	char *hosts = calloc((size_t)nranks, MPI_MAX_PROCESSOR_NAME);
	MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);

	FILE *text = rank == 0 && !(json && !strcmp(json, "-")) ? stdout : NULL;
	if (text) {
		fprintf(text, "# %s halobench (MPI_Type_vector column, MPI_Sendrecv): %d ranks in a ring, transport mpi, progress mpi, hosts ", system, nranks);
		for (int r = 0; r < nranks; r++) {
			const char *h = hosts + (size_t)r * MPI_MAX_PROCESSOR_NAME;
			if (r == 0 || strcmp(h, h - MPI_MAX_PROCESSOR_NAME)) fprintf(text, "%s%s", r ? "," : "", h);
		}
		fprintf(text, "\n# one exchange: both boundary columns, to and from both neighbours\n%-8s %12s %12s %12s\n",
			"#N", "column_bytes", "iterations", "exchange_us");
	}
	warm_job();
	double us[MAX_SIZES];
	for (int s = 0; s < nsizes; s++) {
		us[s] = measure_size(sizes[s], iters, warmup);
		if (text) {
			fprintf(text, "%-8d %12d %12d %12.3f\n", sizes[s], 8 * sizes[s], iters, us[s]);
			fflush(text);
		}
	}
	if (rank == 0 && json) {
		FILE *f = strcmp(json, "-") ? fopen(json, "w") : stdout;
		if (!f) {
			perror(json);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		fprintf(f, "{\n  \"benchmark\": \"halobench\",\n  \"system\": \"%s\",\n  \"mode\": \"datatype\",\n  \"ranks\": %d,\n  \"hosts\": [", system, nranks);
		for (int r = 0, first = 1; r < nranks; r++) {
			const char *h = hosts + (size_t)r * MPI_MAX_PROCESSOR_NAME;
			if (r == 0 || strcmp(h, h - MPI_MAX_PROCESSOR_NAME)) {
				fprintf(f, "%s\"%s\"", first ? "" : ", ", h);
				first = 0;
			}
		}
		fprintf(f, "],\n  \"transport\": \"mpi\",\n  \"progress\": \"mpi\",\n  \"rows\": [");
		for (int s = 0; s < nsizes; s++)
			fprintf(f, "%s\n    {\"n\": %d, \"column_bytes\": %d, \"iterations\": %d, \"exchange_us\": %.3f}", s ? "," : "", sizes[s], 8 * sizes[s], iters, us[s]);
		fprintf(f, "\n  ]\n}\n");
		if (f != stdout) fclose(f);
	}
	free(hosts);
	MPI_Finalize();
	return 0;
}
