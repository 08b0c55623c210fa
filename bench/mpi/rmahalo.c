/* C twin of apps/rmahalo: a 1-D halo exchange through an RMA window, with the same
 * modes, method, options and output format, so one script can run both side by side.
 *   rmahalo_mpi [--sync LIST] [--min-size N] [--max-size N] [--sizes N,N,...]
 *               [--iters N] [--warmup N] [--size-time DUR] [--json[=FILE]]
 * Sizes take the suffixes K and M, --size-time the suffixes ms and s (200ms). Every rank owns an array of doubles in one window
 * (MPI_Win_allocate): the left ghost, the left boundary, the right boundary and the right
 * ghost, H bytes each. The ranks form a ring. An iteration Puts the left boundary into
 * the left neighbour's right ghost and the right boundary into the right neighbour's left
 * ghost, closes the epoch, and adds 1 to the boundary cells. Modes (--sync, default all):
 *   fence     MPI_Win_fence; MPI_Put x2; MPI_Win_fence
 *   pscw      MPI_Win_post(neighbours); MPI_Win_start(neighbours); MPI_Put x2;
 *             MPI_Win_complete; MPI_Win_wait
 *   lock      per neighbour MPI_Win_lock(exclusive) + MPI_Put + MPI_Win_unlock; MPI_Barrier
 *   lock_all  MPI_Win_lock_all once per size; MPI_Put x2 + MPI_Win_flush_all; MPI_Barrier
 * Per size (--min-size 8 to --max-size 64K, powers of two, or --sizes), a new window;
 * --warmup (100) iterations untimed, then a Barrier and --iters (1000) timed; both scale
 * down in proportion above 16 KiB (at least 1 and 20). --size-time caps the timed ones at
 * about that long (at least 3), from the slowest rank's mean warmup iteration after the
 * first (the first's, with one). The figure is rank 0's time of the
 * timed iterations over their number, in microseconds. The ghosts are checked after the
 * first iteration (then a Barrier) and after the last; a wrong value aborts the job,
 * naming the rank, the size and the mode. Needs 2 to 2048 ranks. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZES 64
#define MAX_RANKS (1 << 11)
#define MAX_ELEMS (1 << 21)
#define MAX_ITERS (1 << 20)
#define FULL_COUNT (16 << 10)

enum { LEFT_GHOST, LEFT_BOUNDARY, RIGHT_BOUNDARY, RIGHT_GHOST };
enum { FENCE, PSCW, LOCK, LOCK_ALL, NMODES };
static const char *mode_names[NMODES] = {"fence", "pscw", "lock", "lock_all"};
static const char *mode_titles[NMODES] = {
	"Fence; Put left and right; Fence",
	"Post(neighbours); Start(neighbours); Put x2; Complete; Wait",
	"per neighbour Lock(Exclusive) + Put + Unlock; Barrier",
	"LockAll once; Put x2 + FlushAll; Barrier",
};

static int rank, nranks, left, right, nbrs[2], nnbrs;
static double size_time; /* --size-time, seconds; 0: no cap */
static MPI_Group nbr_group;

/* value_of is apps/rmahalo's valueOf: distinct for every argument, exact in a double
 * after up to MAX_ITERS increments */
static double value_of(int r, int side, int i) {
	return (double)(((int64_t)r << 1 | side) << 41 | (int64_t)i << 20);
}

struct halo {
	int mode, n, iter;
	double *a;
	MPI_Win win;
};

static double *region(struct halo *h, int k) { return h->a + (size_t)k * h->n; }

/* put_to puts the boundaries that go to r */
static void put_to(struct halo *h, int r) {
	if (r == left) MPI_Put(region(h, LEFT_BOUNDARY), h->n, MPI_DOUBLE, r, (MPI_Aint)RIGHT_GHOST * h->n, h->n, MPI_DOUBLE, h->win);
	if (r == right) MPI_Put(region(h, RIGHT_BOUNDARY), h->n, MPI_DOUBLE, r, (MPI_Aint)LEFT_GHOST * h->n, h->n, MPI_DOUBLE, h->win);
}

static void puts_all(struct halo *h) {
	for (int k = 0; k < nnbrs; k++) put_to(h, nbrs[k]);
}

static void iterate(struct halo *h) {
	switch (h->mode) {
	case FENCE:
		MPI_Win_fence(0, h->win);
		puts_all(h);
		MPI_Win_fence(0, h->win);
		break;
	case PSCW:
		MPI_Win_post(nbr_group, 0, h->win);
		MPI_Win_start(nbr_group, 0, h->win);
		puts_all(h);
		MPI_Win_complete(h->win);
		MPI_Win_wait(h->win);
		break;
	case LOCK:
		for (int k = 0; k < nnbrs; k++) {
			MPI_Win_lock(MPI_LOCK_EXCLUSIVE, nbrs[k], 0, h->win);
			put_to(h, nbrs[k]);
			MPI_Win_unlock(nbrs[k], h->win);
		}
		MPI_Barrier(MPI_COMM_WORLD);
		break;
	case LOCK_ALL:
		puts_all(h);
		MPI_Win_flush_all(h->win);
		MPI_Barrier(MPI_COMM_WORLD);
		break;
	}
	double *b = region(h, LEFT_BOUNDARY);
	for (int i = 0; i < 2 * h->n; i++) b[i]++;
	h->iter++;
}

static void stamp(struct halo *h) {
	double *lg = region(h, LEFT_GHOST), *lb = region(h, LEFT_BOUNDARY), *rb = region(h, RIGHT_BOUNDARY), *rg = region(h, RIGHT_GHOST);
	for (int i = 0; i < h->n; i++) {
		lg[i] = rg[i] = -1;
		lb[i] = value_of(rank, 0, i);
		rb[i] = value_of(rank, 1, i);
	}
	h->iter = 0;
}

/* check aborts the job unless the ghosts hold the neighbours' boundaries of the last
 * iteration */
static void check(struct halo *h, const char *when) {
	double k = h->iter - 1, *lg = region(h, LEFT_GHOST), *rg = region(h, RIGHT_GHOST);
	if (h->mode == LOCK_ALL) MPI_Win_sync(h->win); /* inside the lock_all epoch */
	for (int i = 0; i < h->n; i++) {
		double wl = value_of(left, 1, i) + k, wr = value_of(right, 0, i) + k;
		if (lg[i] != wl || rg[i] != wr) {
			int bad_left = lg[i] != wl;
			fprintf(stderr, "rmahalo_mpi: rank %d, %d bytes, sync %s: after the %s iteration: %s ghost element %d holds %.17g, want %.17g (rank %d's %s boundary)\n",
				rank, 8 * h->n, mode_names[h->mode], when, bad_left ? "left" : "right", i, bad_left ? lg[i] : rg[i],
				bad_left ? wl : wr, bad_left ? left : right, bad_left ? "right" : "left");
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
}

static int scaled(int count, int floor, int size) {
	if (size <= FULL_COUNT) return count;
	int n = (int)((long)count * FULL_COUNT / size);
	return n > floor ? n : floor;
}

/* warm runs n untimed iterations and checks the ghosts after the first; it returns the
 * mean seconds of the iterations after the first, or the first's when n is 1 */
static double warm(struct halo *h, int n) {
	double t0 = MPI_Wtime();
	iterate(h);
	double per = MPI_Wtime() - t0;
	check(h, "first");
	MPI_Barrier(MPI_COMM_WORLD); /* the neighbours' next Puts wait for the check */
	t0 = MPI_Wtime();
	for (int i = 1; i < n; i++) iterate(h);
	if (n > 1) per = (MPI_Wtime() - t0) / (n - 1);
	return per;
}

/* cap_iters applies --size-time: the slowest rank's mean untimed iteration decides, so
 * every rank runs the same number */
static int cap_iters(int iters, double per) {
	if (size_time <= 0) return iters;
	MPI_Allreduce(MPI_IN_PLACE, &per, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	if (per > 0 && size_time / per < iters) iters = size_time / per > 3 ? (int)(size_time / per) : 3;
	return iters;
}

/* measure_size returns the mean microseconds of one iteration of mode with halos of size
 * bytes, and sets *iters_out to the number of timed iterations */
static double measure_size(int mode, int size, int iters, int warmup, int *iters_out) {
	struct halo h = {mode, size / 8, 0, NULL, MPI_WIN_NULL};
	MPI_Win_allocate((MPI_Aint)4 * h.n * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &h.a, &h.win);
	stamp(&h);
	MPI_Barrier(MPI_COMM_WORLD); /* every rank stamped before a Put */
	if (mode == LOCK_ALL) MPI_Win_lock_all(0, h.win);
	iters = cap_iters(scaled(iters, 20, size), warm(&h, scaled(warmup, 1, size)));
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	for (int i = 0; i < iters; i++) iterate(&h);
	double us = (MPI_Wtime() - t0) * 1e6 / iters;
	check(&h, "last");
	if (mode == LOCK_ALL) MPI_Win_unlock_all(h.win);
	MPI_Win_free(&h.win);
	*iters_out = iters;
	return us;
}

static double parse_secs(const char *s) { /* 200ms, 1.5s, 0 */
	char *end;
	double v = strtod(s, &end);
	if (end == s) return -1;
	if (!strcmp(end, "ms")) return v / 1e3;
	if (!strcmp(end, "s") || !*end) return v;
	return -1;
}

static long parse_size(const char *s) {
	char *end;
	long v = strtol(s, &end, 10);
	if (*end == 'K' || *end == 'k') v <<= 10, end++;
	else if (*end == 'M' || *end == 'm') v <<= 20, end++;
	if (end == s || *end) return -1;
	return v;
}

static int valid_size(long n) { return n >= 8 && n % 8 == 0 && n <= 8L * MAX_ELEMS; }

static int usage(const char *what, const char *arg) {
	if (rank == 0) fprintf(stderr, "rmahalo_mpi: %s%s\n", what, arg ? arg : "");
	MPI_Finalize();
	return 2;
}

static void print_hosts(FILE *f, const char *hosts, const char *sep, const char *quote) {
	for (int r = 0, first = 1; r < nranks; r++) {
		const char *h = hosts + (size_t)r * MPI_MAX_PROCESSOR_NAME;
		if (r == 0 || strcmp(h, h - MPI_MAX_PROCESSOR_NAME)) {
			fprintf(f, "%s%s%s%s", first ? "" : sep, quote, h, quote);
			first = 0;
		}
	}
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	int syncs[NMODES] = {FENCE, PSCW, LOCK, LOCK_ALL}, nsyncs = NMODES, sizes[MAX_SIZES], nsizes = 0;
	int iters = 1000, warmup = 100;
	long min_size = 8, max_size = 64 << 10;
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
			else if (!strcmp(a, "--size-time")) size_time = parse_secs(v);
			else if (!strcmp(a, "--min-size")) min_size = parse_size(v);
			else if (!strcmp(a, "--max-size")) max_size = parse_size(v);
			else if (!strcmp(a, "--sizes")) {
				char *list = strdup(v);
				nsizes = 0;
				for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
					long n = parse_size(t);
					if (!valid_size(n) || nsizes == MAX_SIZES) return usage("--sizes: want multiples of 8 bytes up to 16M, such as 8,4K,64K, not ", v);
					sizes[nsizes++] = (int)n;
				}
				free(list);
				if (!nsizes) return usage("--sizes: empty list", NULL);
			} else if (!strcmp(a, "--sync")) {
				char *list = strdup(v);
				nsyncs = 0;
				for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
					int m = 0;
					while (m < NMODES && strcmp(t, mode_names[m])) m++;
					if (m == NMODES || nsyncs == NMODES) return usage("--sync: want fence, pscw, lock or lock_all, not ", v);
					syncs[nsyncs++] = m;
				}
				free(list);
				if (!nsyncs) return usage("--sync: empty list", NULL);
			} else return usage("unknown flag ", a);
		}
	}
	if (iters < 1 || warmup < 1) return usage("--iters and --warmup must be at least 1", NULL);
	if (size_time < 0) return usage("--size-time: want a duration such as 200ms", NULL);
	if ((long)iters + warmup >= MAX_ITERS) return usage("--iters plus --warmup must be under 1048576", NULL);
	if (!nsizes) {
		if (!valid_size(min_size) || max_size < min_size || max_size > 8L * MAX_ELEMS)
			return usage("--min-size and --max-size: want 8 <= min <= max <= 16M, min a multiple of 8 bytes", NULL);
		for (long n = min_size; n <= max_size && nsizes < MAX_SIZES; n *= 2) sizes[nsizes++] = (int)n;
	}
	if (nranks < 2 || nranks > MAX_RANKS) return usage("needs 2 to 2048 ranks", NULL);

	left = (rank + nranks - 1) % nranks;
	right = (rank + 1) % nranks;
	nbrs[0] = left;
	nnbrs = 1;
	if (right != left) nbrs[nnbrs++] = right;
	MPI_Group world_group;
	MPI_Comm_group(MPI_COMM_WORLD, &world_group);
	MPI_Group_incl(world_group, nnbrs, nbrs, &nbr_group);

	char lib[MPI_MAX_LIBRARY_VERSION_STRING], host[MPI_MAX_PROCESSOR_NAME] = {0};
	int len;
	MPI_Get_library_version(lib, &len);
	const char *system = strstr(lib, "Open MPI") ? "Open MPI" : strstr(lib, "MPICH") ? "MPICH" : "MPI";
	MPI_Get_processor_name(host, &len);
	char *hosts = calloc((size_t)nranks, MPI_MAX_PROCESSOR_NAME);
	MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);

	FILE *text = rank == 0 && !(json && !strcmp(json, "-")) ? stdout : NULL;
	if (text) {
		fprintf(text, "# %s rmahalo: %d ranks in a ring, transport mpi, progress mpi, hosts ", system, nranks);
		print_hosts(text, hosts, ",", "");
		fprintf(text, "\n# one iteration: both boundaries Put into the neighbours' ghosts, the epoch closed, the boundaries changed\n");
	}
	static double us[NMODES][MAX_SIZES];
	static int its[NMODES][MAX_SIZES];
	for (int m = 0; m < nsyncs; m++) {
		if (text) fprintf(text, "\n# rmahalo %s: %s\n%-10s %18s\n", mode_names[syncs[m]], mode_titles[syncs[m]], "#bytes", "us_per_iteration");
		for (int s = 0; s < nsizes; s++) {
			us[m][s] = measure_size(syncs[m], sizes[s], iters, warmup, &its[m][s]);
			if (text) {
				fprintf(text, "%-10d %18.3f\n", sizes[s], us[m][s]);
				fflush(text);
			}
		}
	}
	if (rank == 0 && json) {
		FILE *f = strcmp(json, "-") ? fopen(json, "w") : stdout;
		if (!f) {
			perror(json);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		fprintf(f, "{\n  \"benchmark\": \"rmahalo\",\n  \"system\": \"%s\",\n  \"ranks\": %d,\n  \"hosts\": [", system, nranks);
		print_hosts(f, hosts, ", ", "\"");
		fprintf(f, "],\n  \"transport\": \"mpi\",\n  \"progress\": \"mpi\",\n  \"tables\": [");
		for (int m = 0; m < nsyncs; m++) {
			fprintf(f, "%s\n    {\n      \"sync\": \"%s\",\n      \"title\": \"%s\",\n      \"rows\": [", m ? "," : "",
				mode_names[syncs[m]], mode_titles[syncs[m]]);
			for (int s = 0; s < nsizes; s++)
				fprintf(f, "%s\n        {\"bytes\": %d, \"iterations\": %d, \"us_per_iteration\": %.3f}", s ? "," : "", sizes[s], its[m][s], us[m][s]);
			fprintf(f, "\n      ]\n    }");
		}
		fprintf(f, "\n  ]\n}\n");
		if (f != stdout) fclose(f);
	}
	free(hosts);
	MPI_Group_free(&nbr_group);
	MPI_Group_free(&world_group);
	MPI_Finalize();
	return 0;
}
