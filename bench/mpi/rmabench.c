/* C twin of apps/rmabench: OSU one-sided method (osu_put_latency, osu_get_latency,
 * osu_put_bw, osu_get_bw, osu_acc_latency, osu_fop_latency, osu_cas_latency) plus the
 * synchronization and window costs of gorma's targets, with the same cases, flags,
 * iteration counts, timing method, output format and JSON rows, so one script runs both
 * side by side.
 *   rmabench_mpi [--test LIST] [--min-size N] [--max-size N] [--iters N] [--bw-iters N]
 *                [--alloc-iters N] [--busy DUR] [--busy-reps N] [--window-size N]
 *                [--json[=FILE]]
 * Sizes take the suffixes K, M, G; --busy takes ms or s (200ms). Needs an even number of
 * ranks, at least 2: rank r pairs with rank r^1, the even rank the origin, the odd one
 * the target. Every origin measures against its target at once; rank 0 prints its own
 * figures. The Fences and alloc_free span every rank. See apps/rmabench/doc.go for the
 * cases and the method: latency in batches (a sample is the mean of a batch of up to 256
 * operations lasting at least 2 us, calibrated on the second half of the warmup); median,
 * mean and 99th percentile of the samples, in microseconds (and the slowest sample in the
 * fence case). --json prints one JSON document instead of the text, --json=FILE writes it
 * to FILE beside the text. Its rows hold vcsw_per_call and ivcsw_per_call: the process's
 * voluntary and involuntary context switches (getrusage, every thread's) per timed
 * iteration, averaged over the ranks that run the timed loop (every rank in the fence,
 * pscw and alloc_free cases, the origins in the others), as apps/rmabench's. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define MAX_BATCH 256
#define BATCH_TARGET_NS 2000.0
#define BW_WINDOW 64
#define BUSY_OPS 100

enum kind { LAT, BW, MAXK, TAIL }; /* TAIL: LAT with the slowest sample */
enum op {
	LOCK, LOCK_ALL, FENCE, PSCW, BWOP, ACC_F64, ACC_I64, FOP, CAS, BUSY, EMPTY_FENCE, LOCK_PUT, ALLOC, CREATE
};
struct bcase {
	const char *name, *title;
	enum kind kind;
	int sized, get;
	enum op op;
};
static const struct bcase cases[] = {
	{"put_lat.lock", "Lock(exclusive) + Put + Unlock per operation", LAT, 1, 0, LOCK},
	{"put_lat.lock_all", "LockAll once, Put + Flush per operation", LAT, 1, 0, LOCK_ALL},
	{"put_lat.fence", "Fence + Put + Fence, ranks taking turns; per epoch", LAT, 1, 0, FENCE},
	{"put_lat.pscw", "Post/Start + Put + Complete/Wait, ranks taking turns; per epoch", LAT, 1, 0, PSCW},
	{"get_lat.lock", "Lock(exclusive) + Get + Unlock per operation", LAT, 1, 1, LOCK},
	{"get_lat.lock_all", "LockAll once, Get + Flush per operation", LAT, 1, 1, LOCK_ALL},
	{"get_lat.fence", "Fence + Get + Fence, ranks taking turns; per epoch", LAT, 1, 1, FENCE},
	{"get_lat.pscw", "Post/Start + Get + Complete/Wait, ranks taking turns; per epoch", LAT, 1, 1, PSCW},
	{"put_bw", "LockAll once, 64 Puts + Flush per round", BW, 1, 0, BWOP},
	{"get_bw", "LockAll once, 64 Gets + Flush per round", BW, 1, 1, BWOP},
	{"acc_lat.float64", "LockAll once, Accumulate(sum, float64) + Flush per operation", LAT, 1, 0, ACC_F64},
	{"acc_lat.int64", "LockAll once, Accumulate(sum, int64) + Flush per operation", LAT, 1, 0, ACC_I64},
	{"fop_lat", "LockAll once, FetchAndOp(sum, int64) + Flush per operation", LAT, 0, 0, FOP},
	{"cas_lat", "LockAll once, CompareAndSwap(int64) + Flush per operation", LAT, 0, 0, CAS},
	{"fence", "empty Fence, every rank", TAIL, 0, 0, EMPTY_FENCE},
	{"busy_get", "Lock(shared) + Get + Unlock while the target computes", MAXK, 0, 1, BUSY},
	{"lock_put", "Lock(exclusive) + Put + Unlock", LAT, 0, 0, LOCK_PUT},
	{"alloc_free.allocate", "Allocate + Free of a window, per pair", LAT, 0, 0, ALLOC},
	{"alloc_free.create", "Create + Free of a window over the caller's memory, per pair", LAT, 0, 0, CREATE},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))
#define MAX_ROWS 64

/* one line of a case's table: latency figures (microseconds) or a bandwidth */
struct row {
	long bytes;
	int iters, batch;
	double median, avg, p99, max, mbps;
	double vcsw, ivcsw; /* context switches per timed iteration, averaged over the ranks that ran it */
};
struct table {
	const struct bcase *c;
	struct row rows[MAX_ROWS];
	int n;
};

/* Flags and shared state. */
static long min_size = 8, max_size = 1 << 20, win_size = 1 << 20;
static int iters = 10000, bw_iters = 100, alloc_iters = 100, busy_reps = 3;
static double busy_s = 0.2;
static int rank, peer, origin; /* peer: rank^1; origin: rank is even */
static MPI_Win wb, wf, wi;
static char *src, *dst, *wbase, *create_buf;
static double *fsrc;
static int64_t *isrc, cas_cur, cas_res;
static int cas_fails;
static MPI_Group peer_group;
static volatile uint64_t sink;
static FILE *text; /* rank 0's text output; NULL elsewhere and for --json */

static double now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}
static int imax(int a, int b) { return a > b ? a : b; }
static int scaled(int base, long size) {
	if (size <= 16 << 10) return base;
	return imax((int)((long)base * (16 << 10) / size), 20);
}
static int warmup_of(int n) { return imax(n / 10, 3); }
static int cmpd(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}
static double pct(const double *s, int n, double p) { /* s sorted; nearest rank, median as Go's */
	if (n == 0) return 0;
	if (p == 50) return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	int r = (int)((p / 100) * n + 0.999999999);
	if (r < 1) r = 1;
	if (r > n) r = n;
	return s[r - 1];
}

/* csw reads the process's context switches so far (every thread's): voluntary in v[0],
 * involuntary in v[1] */
static void csw(double v[2]) {
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	v[0] = (double)ru.ru_nvcsw;
	v[1] = (double)ru.ru_nivcsw;
}

/* csw_add adds the context switches since before (csw) to sw */
static void csw_add(double sw[2], const double before[2]) {
	double after[2];
	csw(after);
	sw[0] += after[0] - before[0];
	sw[1] += after[1] - before[1];
}

/* reduce_cs sets r's context switches to the mean per iteration over the ranks that ran
 * the timed loop: this rank's sw over it iterations, it 0 where it ran none. Both ranks
 * call it. */
static void reduce_cs(struct row *r, const double sw[2], int it) {
	double per[3] = {0, 0, it > 0};
	if (it > 0) per[0] = sw[0] / it, per[1] = sw[1] / it;
	MPI_Allreduce(MPI_IN_PLACE, per, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	r->vcsw = per[2] > 0 ? per[0] / per[2] : 0;
	r->ivcsw = per[2] > 0 ? per[1] / per[2] : 0;
}

static void rma(int get, long size) {
	if (get) MPI_Get(dst, (int)size, MPI_BYTE, peer, 0, (int)size, MPI_BYTE, wb);
	else MPI_Put(src, (int)size, MPI_BYTE, peer, 0, (int)size, MPI_BYTE, wb);
}

/* one iteration of case c at size (every rank calls it when the case is collective, the
 * origins otherwise) */
static void op_once(const struct bcase *c, long size) {
	int n = size / 8 > 0 ? (int)(size / 8) : 1;
	int64_t one = 1, orig;
	switch (c->op) {
	case LOCK:
	case LOCK_PUT:
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, wb);
		rma(c->get, size);
		MPI_Win_unlock(peer, wb);
		break;
	case LOCK_ALL:
		rma(c->get, size);
		MPI_Win_flush(peer, wb);
		break;
	case FENCE:
		for (int e = 0; e < 3; e++) {
			MPI_Win_fence(0, wb);
			if (e == rank % 2) rma(c->get, size);
		}
		break;
	case PSCW:
		for (int half = 0; half < 2; half++) {
			if (half == rank % 2) {
				MPI_Win_start(peer_group, 0, wb);
				rma(c->get, size);
				MPI_Win_complete(wb);
			} else {
				MPI_Win_post(peer_group, 0, wb);
				MPI_Win_wait(wb);
			}
		}
		break;
	case ACC_F64:
		MPI_Accumulate(fsrc, n, MPI_DOUBLE, peer, 0, n, MPI_DOUBLE, MPI_SUM, wf);
		MPI_Win_flush(peer, wf);
		break;
	case ACC_I64:
		MPI_Accumulate(isrc, n, MPI_INT64_T, peer, 0, n, MPI_INT64_T, MPI_SUM, wi);
		MPI_Win_flush(peer, wi);
		break;
	case FOP:
		MPI_Fetch_and_op(&one, &cas_res, MPI_INT64_T, peer, 0, MPI_SUM, wi);
		MPI_Win_flush(peer, wi);
		break;
	case CAS:
		orig = cas_cur + 1;
		MPI_Compare_and_swap(&orig, &cas_cur, &cas_res, MPI_INT64_T, peer, 1, wi);
		MPI_Win_flush(peer, wi);
		if (cas_res == cas_cur) cas_cur++;
		else {
			cas_cur = cas_res;
			cas_fails++;
		}
		break;
	case EMPTY_FENCE:
		MPI_Win_fence(0, wb);
		break;
	case ALLOC: {
		MPI_Win w;
		void *base;
		MPI_Win_allocate(size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w);
		MPI_Win_free(&w);
		break;
	}
	case CREATE: {
		MPI_Win w;
		MPI_Win_create(create_buf, size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
		MPI_Win_free(&w);
		break;
	}
	default:
		break;
	}
}

#define SETTLE_S 0.02 /* seconds of computation before each timed loop (apps/rmabench's settleFor) */
static uint64_t spin(double secs);

/* measure: a settling spin, warmup untimed (batch calibrated on its second half), then n timed in batches;
 * out: median, mean, p99 and slowest sample in us, then the batch size; the context
 * switches of the timed batches go to sw */
static void measure(const struct bcase *c, long size, int warm, int n, double scale, double out[5], double sw[2]) {
	double t0 = 0;
	sink = spin(SETTLE_S); /* as apps/rmabench's settle: the same method on both sides */
	for (int i = 0; i < warm; i++) {
		if (i == warm / 2) t0 = now_ns();
		op_once(c, size);
	}
	int batch = 1, calib = warm - warm / 2;
	if (calib > 0) {
		double per = (now_ns() - t0) / calib;
		if (per < BATCH_TARGET_NS) {
			batch = (int)(BATCH_TARGET_NS / (per > 1 ? per : 1));
			if (batch > MAX_BATCH) batch = MAX_BATCH;
			if (batch < 1) batch = 1;
		}
	}
	double *s = malloc(sizeof(double) * (n / batch + 1)), total = 0, cs[2];
	int ns = 0;
	csw(cs);
	for (int done = 0; done < n;) {
		int b = n - done < batch ? n - done : batch;
		double t = now_ns();
		for (int j = 0; j < b; j++) op_once(c, size);
		double d = now_ns() - t;
		total += d;
		s[ns++] = d / b;
		done += b;
	}
	csw_add(sw, cs);
	qsort(s, ns, sizeof(double), cmpd);
	out[0] = pct(s, ns, 50) * scale / 1e3;
	out[1] = total / n * scale / 1e3;
	out[2] = pct(s, ns, 99) * scale / 1e3;
	out[3] = s[ns - 1] * scale / 1e3;
	out[4] = batch;
	free(s);
}

static uint64_t spin(double secs) {
	double end = now_ns() + secs * 1e9;
	uint64_t x = 1;
	while (now_ns() < end)
		for (int i = 0; i < 1000; i++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

/* busy_get: see apps/rmabench (busyGet); the context switches of an origin's loops of
 * operations go to sw */
static int busy_get(double *med, double *mx, double sw[2]) {
	char want[8];
	for (int i = 0; i < 8; i++) want[i] = (char)(i * 11 + 5);
	if (!origin) {
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, wb);
		memcpy(wbase, want, 8);
		MPI_Win_unlock(rank, wb);
	}
	double *s = malloc(sizeof(double) * BUSY_OPS * busy_reps);
	int n = 0;
	for (int r = 0; r < busy_reps; r++) {
		MPI_Barrier(MPI_COMM_WORLD);
		if (!origin) sink = spin(busy_s);
		else {
			double t0 = now_ns(), cs[2];
			struct timespec ms = {0, 1000000};
			nanosleep(&ms, NULL);
			csw(cs);
			for (int k = 0; k < BUSY_OPS && now_ns() - t0 < busy_s / 2 * 1e9; k++) {
				memset(dst, 0, 8);
				double t = now_ns();
				MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, wb);
				MPI_Get(dst, 8, MPI_BYTE, peer, 0, 8, MPI_BYTE, wb);
				MPI_Win_unlock(peer, wb);
				s[n++] = (now_ns() - t) / 1e3;
				if (memcmp(dst, want, 8) != 0) {
					fprintf(stderr, "rmabench_mpi: busy_get: wrong bytes\n");
					return -1;
				}
			}
			csw_add(sw, cs);
		}
		MPI_Barrier(MPI_COMM_WORLD);
	}
	if (origin && n > 0) {
		qsort(s, n, sizeof(double), cmpd);
		*med = pct(s, n, 50);
		*mx = s[n - 1];
	}
	free(s);
	return n;
}

/* bandwidth: an origin's MB/s; the context switches of the timed rounds go to sw */
static double bandwidth(const struct bcase *c, long size, int *it, double sw[2]) {
	int n = bw_iters, warm = imax(bw_iters / 10, 2);
	if (size > 16 << 10) {
		n = imax(n / 5, 2);
		warm = imax(warm / 5, 1);
	}
	*it = n;
	double t0 = 0, cs[2] = {0};
	MPI_Win_lock_all(0, wb);
	for (int i = 0; i < warm + n; i++) {
		if (i == warm) {
			csw(cs); /* before the clock starts: the system call is not timed */
			t0 = now_ns();
		}
		for (int k = 0; k < BW_WINDOW; k++) rma(c->get, size);
		MPI_Win_flush(peer, wb);
	}
	double secs = (now_ns() - t0) / 1e9;
	csw_add(sw, cs);
	MPI_Win_unlock_all(wb);
	return (double)size * BW_WINDOW * n / secs / 1e6;
}

static int selected(const char *list, const char *name) {
	size_t gl = strcspn(name, ".");
	char buf[256];
	snprintf(buf, sizeof buf, "%s", list);
	for (char *t = strtok(buf, ","); t; t = strtok(NULL, ","))
		if (!strcmp(t, "all") || !strcmp(t, name) || (strlen(t) == gl && !strncmp(t, name, gl))) return 1;
	return 0;
}

static long parse_size(const char *s) {
	char *end;
	long v = strtol(s, &end, 10);
	if (*end == 'K' || *end == 'k') v <<= 10;
	else if (*end == 'M' || *end == 'm') v <<= 20;
	else if (*end == 'G' || *end == 'g') v <<= 30;
	return v;
}

static double parse_dur(const char *s) {
	char *end;
	double v = strtod(s, &end);
	if (!strcmp(end, "ms")) return v / 1e3;
	if (!strcmp(end, "us")) return v / 1e6;
	return v; /* s or bare seconds */
}

static void print_row(const struct bcase *c, const struct row *r) {
	if (c->kind == BW) fprintf(text, "%-12ld %12d %12.2f\n", r->bytes, r->iters, r->mbps);
	else if (c->kind == MAXK && r->iters == 0) fprintf(text, "%-12ld %12d %12s %12s\n", r->bytes, r->iters, "-", "-");
	else if (c->kind == MAXK) fprintf(text, "%-12ld %12d %12.3f %12.3f\n", r->bytes, r->iters, r->median, r->max);
	else if (c->kind == TAIL)
		fprintf(text, "%-12ld %12d %12.3f %12.3f %12.3f %12.3f\n", r->bytes, r->iters, r->median, r->avg, r->p99, r->max);
	else fprintf(text, "%-12ld %12d %12.3f %12.3f %12.3f\n", r->bytes, r->iters, r->median, r->avg, r->p99);
}

/* run_case runs every size of case c into t */
static void run_case(const struct bcase *c, struct table *t) {
	t->c = c;
	t->n = 0;
	if (text) {
		fprintf(text, "\n# %s: %s\n", c->name, c->title);
		if (c->kind == BW) fprintf(text, "%-12s %12s %12s\n", "#bytes", "iterations", "MB/s");
		else if (c->kind == MAXK) fprintf(text, "%-12s %12s %12s %12s\n", "#bytes", "iterations", "median_us", "max_us");
		else if (c->kind == TAIL)
			fprintf(text, "%-12s %12s %12s %12s %12s %12s\n", "#bytes", "iterations", "median_us", "avg_us", "p99_us", "max_us");
		else fprintf(text, "%-12s %12s %12s %12s %12s\n", "#bytes", "iterations", "median_us", "avg_us", "p99_us");
	}
	long lo = 8, hi = 8;
	if (c->sized) lo = min_size, hi = max_size;
	if (c->op == EMPTY_FENCE) lo = hi = 0;
	if (c->op == ALLOC || c->op == CREATE) lo = hi = win_size;
	for (long size = lo; size <= hi && t->n < MAX_ROWS; size = size ? size * 2 : 1) {
		double r[5] = {0}, sw[2] = {0};
		int n = c->sized ? scaled(iters, size) : iters, ran = 0; /* ran: timed iterations at this rank */
		MPI_Barrier(MPI_COMM_WORLD);
		if (c->kind == BW) {
			if (origin) r[0] = bandwidth(c, size, &n, sw), ran = n;
		} else if (c->kind == MAXK) {
			n = busy_get(&r[0], &r[1], sw);
			if (n < 0) MPI_Abort(MPI_COMM_WORLD, 1);
			if (origin) ran = n;
		} else {
			int collective = c->op == FENCE || c->op == PSCW || c->op == EMPTY_FENCE || c->op == ALLOC || c->op == CREATE;
			if (c->op == ALLOC || c->op == CREATE) n = alloc_iters;
			if (collective || origin) {
				MPI_Win w = c->op == ACC_F64 ? wf : (c->op == ACC_I64 || c->op == FOP || c->op == CAS) ? wi : wb;
				int lockall = !collective && c->op != LOCK && c->op != LOCK_PUT;
				if (lockall) MPI_Win_lock_all(0, w);
				cas_fails = 0;
				measure(c, size, warmup_of(n), n, (c->op == FENCE || c->op == PSCW) ? 0.5 : 1, r, sw);
				ran = n;
				if (lockall) MPI_Win_unlock_all(w);
				if (c->op == FENCE || c->op == EMPTY_FENCE) MPI_Win_fence(MPI_MODE_NOSUCCEED, wb);
				if (c->op == CAS && cas_fails > 1) {
					fprintf(stderr, "rmabench_mpi: compare-and-swap: %d swaps failed with no other rank writing\n", cas_fails);
					MPI_Abort(MPI_COMM_WORLD, 1);
				}
			}
		}
		struct row *row = &t->rows[t->n++];
		*row = (struct row){.bytes = size, .iters = n};
		if (c->kind == BW) row->mbps = r[0];
		else if (c->kind == MAXK) row->median = r[0], row->max = r[1];
		else row->median = r[0], row->avg = r[1], row->p99 = r[2], row->max = r[3], row->batch = (int)r[4];
		reduce_cs(row, sw, ran);
		if (text) print_row(c, row);
		if (size == 0 && hi == 0) break;
	}
	if (text) fflush(text);
}

static void json_row(FILE *f, const struct bcase *c, const struct row *r) {
	fprintf(f, "\n        {\n          \"bytes\": %ld,\n          \"iterations\": %d", r->bytes, r->iters);
	if (c->kind == BW) fprintf(f, ",\n          \"MB_per_s\": %.6g", r->mbps);
	else if (c->kind == MAXK && r->iters > 0) fprintf(f, ",\n          \"median_us\": %.6g,\n          \"max_us\": %.6g", r->median, r->max);
	else if (c->kind == LAT || c->kind == TAIL)
		fprintf(f, ",\n          \"batch\": %d,\n          \"median_us\": %.6g,\n          \"avg_us\": %.6g,\n          \"p99_us\": %.6g",
			r->batch, r->median, r->avg, r->p99);
	if (c->kind == TAIL) fprintf(f, ",\n          \"max_us\": %.6g", r->max);
	fprintf(f, ",\n          \"vcsw_per_call\": %.6g,\n          \"ivcsw_per_call\": %.6g\n        }", r->vcsw, r->ivcsw);
}

/* write_json writes the JSON document of the tables to json ("-": standard output) */
static void write_json(const char *json, const char *system, int nranks, char (*hosts)[MPI_MAX_PROCESSOR_NAME], const struct table *tabs, int ntabs) {
	FILE *f = strcmp(json, "-") ? fopen(json, "w") : stdout;
	if (!f) {
		perror(json);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	fprintf(f, "{\n  \"benchmark\": \"rmabench\",\n  \"system\": \"%s\",\n  \"transport\": \"mpi\",\n  \"progress\": \"mpi\",\n"
		"  \"ranks\": %d,\n  \"hosts\": [\"%s\", \"%s\"],\n  \"tables\": [", system, nranks, hosts[0], hosts[1]);
	for (int i = 0; i < ntabs; i++) {
		const struct table *t = &tabs[i];
		fprintf(f, "%s\n    {\n      \"name\": \"%s\",\n      \"title\": \"%s\",\n      \"rows\": [", i ? "," : "", t->c->name, t->c->title);
		for (int k = 0; k < t->n; k++) {
			if (k) fputc(',', f);
			json_row(f, t->c, &t->rows[k]);
		}
		fprintf(f, "\n      ]\n    }");
	}
	fprintf(f, "\n  ]\n}\n");
	if (f != stdout) fclose(f);
}

int main(int argc, char **argv) {
	int nranks;
	const char *tests = "all", *json = NULL;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	peer = rank ^ 1;
	origin = rank % 2 == 0;
	for (int i = 1; i < argc; i++) {
		const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(f, "--json")) {
			json = "-";
			continue;
		}
		if (!strncmp(f, "--json=", 7)) {
			json = f + 7;
			continue;
		}
		if (!v) {
			if (rank == 0) fprintf(stderr, "rmabench_mpi: missing value for %s\n", f);
			MPI_Finalize();
			return 2;
		}
		i++;
		if (!strcmp(f, "--test")) tests = v;
		else if (!strcmp(f, "--min-size")) min_size = parse_size(v);
		else if (!strcmp(f, "--max-size")) max_size = parse_size(v);
		else if (!strcmp(f, "--iters")) iters = atoi(v);
		else if (!strcmp(f, "--bw-iters")) bw_iters = atoi(v);
		else if (!strcmp(f, "--alloc-iters")) alloc_iters = atoi(v);
		else if (!strcmp(f, "--busy")) busy_s = parse_dur(v);
		else if (!strcmp(f, "--busy-reps")) busy_reps = atoi(v);
		else if (!strcmp(f, "--window-size")) win_size = parse_size(v);
		else {
			if (rank == 0) fprintf(stderr, "rmabench_mpi: unknown flag %s\n", f);
			MPI_Finalize();
			return 2;
		}
	}
	if (nranks < 2 || nranks % 2) {
		if (rank == 0 && nranks > 1)
			fprintf(stderr, "rmabench_mpi: the job has %d ranks: want an even count of at least 2, as rank r pairs with rank r^1 (run it with -n %d or -n %d)\n",
				nranks, nranks - 1, nranks + 1);
		else if (rank == 0)
			fprintf(stderr, "rmabench_mpi: the job has %d ranks: want an even count of at least 2, as rank r pairs with rank r^1 (run it with -n 2)\n", nranks);
		MPI_Finalize();
		return 2;
	}
	if (min_size < 1 || max_size < min_size || iters < 1 || bw_iters < 1 || alloc_iters < 1 || busy_reps < 1 || busy_s <= 0 ||
	    win_size < 8) {
		if (rank == 0) fprintf(stderr, "rmabench_mpi: invalid flags\n");
		MPI_Finalize();
		return 2;
	}
	long n = max_size < 16 ? 16 : max_size; /* two int64s at least: cas_lat works on the second */
	void *fb, *ib;
	MPI_Win_allocate(n, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &wbase, &wb);
	MPI_Win_allocate(n, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &fb, &wf);
	MPI_Win_allocate(n, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &ib, &wi);
	src = malloc(n);
	dst = malloc(n);
	fsrc = malloc(n);
	isrc = malloc(n);
	for (long i = 0; i < n; i++) {
		src[i] = (char)(i * 7 + 1);
		dst[i] = (char)(i * 3 + 2);
		wbase[i] = (char)(i * 5 + 3);
	}
	for (long i = 0; i < n / 8; i++) fsrc[i] = ((double *)fb)[i] = 1, isrc[i] = ((int64_t *)ib)[i] = 1;
	create_buf = malloc(win_size);
	for (long i = 0; i < win_size; i++) create_buf[i] = (char)(i + 1);
	MPI_Group world_group;
	MPI_Comm_group(MPI_COMM_WORLD, &world_group);
	MPI_Group_incl(world_group, 1, &peer, &peer_group);
	MPI_Barrier(MPI_COMM_WORLD);

	char lib[MPI_MAX_LIBRARY_VERSION_STRING];
	int len;
	MPI_Get_library_version(lib, &len);
	const char *name = strstr(lib, "Open MPI") ? "Open MPI" : strstr(lib, "MPICH") ? "MPICH" : "MPI";
	char (*hosts)[MPI_MAX_PROCESSOR_NAME] = calloc(nranks, MPI_MAX_PROCESSOR_NAME);
	MPI_Get_processor_name(hosts[rank], &len);
	MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
	text = rank == 0 && !(json && !strcmp(json, "-")) ? stdout : NULL;
	if (text) {
		fprintf(text, "# %s rmabench (OSU one-sided method): C twin of apps/rmabench\n", name);
		if (nranks > 2)
			fprintf(text, "# %d ranks in pairs (0 with 1, 2 with 3, ...): every even rank measures against its partner at once, "
				"the figures are rank 0's; the Fences and alloc_free span all %d ranks\n", nranks, nranks);
		fprintf(text, "# latency: median/avg/p99 in microseconds; a sample is the mean of a batch of up to %d operations\n", MAX_BATCH);
	}
	static struct table tabs[NCASES];
	int ntabs = 0;
	for (int i = 0; i < NCASES; i++) {
		if (!selected(tests, cases[i].name)) continue;
		run_case(&cases[i], &tabs[ntabs++]);
	}
	if (rank == 0 && json) write_json(json, name, nranks, hosts, tabs, ntabs);
	free(hosts);
	MPI_Group_free(&peer_group);
	MPI_Group_free(&world_group);
	MPI_Win_free(&wb);
	MPI_Win_free(&wf);
	MPI_Win_free(&wi);
	free(src);
	free(dst);
	free(fsrc);
	free(isrc);
	free(create_buf);
	MPI_Finalize();
	return 0;
}
