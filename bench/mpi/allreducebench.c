/* C twin of apps/allreducebench: the OSU method of osu_allreduce, osu_bcast, osu_reduce,
 * osu_allgather, osu_alltoall, osu_gather, osu_scatter and osu_barrier, with the same
 * flags, sizes, iteration counts, output format and JSON document, so one script runs
 * both side by side (scripts/compare-allreduce.sh, scripts/device16-job.sh).
 *   allreducebench_mpi [--test LIST|all|colls|overlap] [--min-size N] [--max-size N]
 *       [--sizes LIST] [--iters N] [--min-iters N] [--size-time DUR] [--fresh] [--polls N]
 *       [--json[=FILE]]
 * Sizes take the suffixes K, M, G (8 B to 64 MiB by default, powers of two; --sizes
 * 8,1M,24M lists them instead); --size-time
 * takes ms or s (0: no cap). MPI_Allreduce of MPI_DOUBLE with MPI_SUM; each call timed
 * with MPI_Wtime on every rank, an MPI_Barrier after each call outside the timed region;
 * warmup a tenth of the calls (at least 3), and before the first size 50 ms of untimed
 * calls of the first size (the job's warm-up; with --test barrier, 50 ms of untimed
 * Barriers instead); --iters calls up to 16 KiB, scaled down in
 * proportion above (at least --min-iters), capped by --size-time from the slowest rank's
 * warmup mean (never below 3). Each rank's mean per call is reduced over the ranks:
 * average, minimum and maximum in microseconds; algbw = bytes / avg (GB/s), busbw =
 * algbw * 2(p-1)/p. --fresh mallocs new send and receive buffers for every call (send
 * filled before the timed region, receive left as allocated) and frees them after.
 * --algo is accepted for symmetry with the Go program, "auto" only: the MPIs' own knobs
 * (OMPI_MCA_coll_tuned_allreduce_algorithm, MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM) force
 * theirs. --test takes a comma-separated list of allreduce, bcast, reduce, allgather,
 * alltoall, gather, scatter and barrier (run in that order); all is allreduce and barrier,
 * colls all eight. MPI_Bcast, MPI_Reduce (MPI_SUM), MPI_Gather and MPI_Scatter of
 * MPI_DOUBLE use root 0, never in place; the size is the vector for MPI_Bcast and
 * MPI_Reduce, one rank's block for the others (OSU's count); each of these tests
 * first runs its own 50 ms warm-up (a Barrier after each call), and after a size's timed calls one more call into a
 * result overwritten with a wrong pattern is checked (a wrong element aborts the run).
 * --test overlap (16 MiB unless a size flag says otherwise) times, per size,
 * MPI_Allreduce alone, a compute kernel calibrated to take as long alone, and
 * MPI_Iallreduce + the kernel + MPI_Wait; the kernel makes no MPI call unless --polls N
 * spreads N MPI_Test calls through it. See apps/allreducebench/design.md for the method. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

struct row {
	long bytes;
	int iters;
	double avg, min, max, algbw, busbw;
	double vcsw, ivcsw; /* context switches per timed call, averaged over the ranks */
};

static int rank, nranks, fresh, polls;
static long min_size = 8, max_size = 64L << 20;
static int iters = 1000, min_iters = 20;
static double size_time;
static long sizes[64];
static int nsizes;

/* the tests of a --test list, in the order they run (testOrder in apps/allreducebench) */
enum { T_ALLREDUCE, T_BCAST, T_REDUCE, T_ALLGATHER, T_ALLTOALL, T_GATHER, T_SCATTER, T_BARRIER, NTESTS };
static const char *test_names[NTESTS] = {"allreduce", "bcast", "reduce", "allgather", "alltoall", "gather", "scatter", "barrier"};
static const char *test_titles[NTESTS] = {
	"allreduce: float64 sum",
	"bcast: float64 from root 0; bytes: the vector",
	"reduce: float64 sum to root 0; bytes: the vector",
	"allgather: float64; bytes: each rank's block (the result holds p blocks)",
	"alltoall: float64; bytes: each block (p blocks sent and p received per rank)",
	"gather: float64 to root 0; bytes: each rank's block (root receives p blocks, the bandwidths count them)",
	"scatter: float64 from root 0; bytes: each rank's block (root sends p blocks, the bandwidths count them)",
	"barrier",
};

static int imax(int a, int b) { return a > b ? a : b; }
static int imin(int a, int b) { return a < b ? a : b; }

static int scaled(int base, long size) {
	if (size <= 16 << 10) return base;
	return imax((int)((long)base * (16 << 10) / size), imin(min_iters, base));
}

static long parse_size(const char *s) {
	char *end;
	long n = strtol(s, &end, 10), mult = 1;
	if (*end == 'K' || *end == 'k') mult = 1L << 10;
	else if (*end == 'M' || *end == 'm') mult = 1L << 20;
	else if (*end == 'G' || *end == 'g') mult = 1L << 30;
	else if (*end) return -1;
	if (mult > 1 && end[1]) return -1;
	return end == s ? -1 : n * mult;
}

static double parse_secs(const char *s) { /* 200ms, 1.5s, 0 */
	char *end;
	double v = strtod(s, &end);
	if (end == s) return -1;
	if (!strcmp(end, "ms")) return v / 1e3;
	if (!strcmp(end, "s") || !*end) return v;
	return -1;
}

static void fill(double *v, long n, int r) {
	for (long i = 0; i < n; i++) v[i] = (double)(i % 251 + r + 1);
}

static int check(const double *v, long n) {
	for (long i = 0; i < n; i++)
		if (v[i] != (double)(nranks * (i % 251 + 1) + nranks * (nranks - 1) / 2)) return 0;
	return 1;
}

/* the slowest rank's warmup mean decides, so every rank runs the same number of calls */
static int cap_iters(int it, double warm, int warmup) {
	if (size_time <= 0) return it;
	double per = warm / warmup;
	MPI_Allreduce(MPI_IN_PLACE, &per, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	if (per > 0 && size_time / per < it) it = imax((int)(size_time / per), 3);
	return it;
}

/* csw reads the process's context switches so far (every thread's): voluntary in v[0],
 * involuntary in v[1] */
static void csw(double v[2]) {
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	v[0] = (double)ru.ru_nvcsw;
	v[1] = (double)ru.ru_nivcsw;
}

/* reduce_cs turns this rank's context switches over it calls (after minus before) into
 * the mean per call over the ranks */
static void reduce_cs(struct row *r, const double before[2], int it) {
	double after[2], per[2];
	csw(after);
	per[0] = (after[0] - before[0]) / it;
	per[1] = (after[1] - before[1]) / it;
	MPI_Allreduce(MPI_IN_PLACE, per, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	r->vcsw = per[0] / nranks;
	r->ivcsw = per[1] / nranks;
}

static struct row reduce_row(double total, int it) {
	struct row r = {0};
	double us = total * 1e6 / it, sum;
	MPI_Allreduce(&us, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	MPI_Allreduce(&us, &r.min, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
	MPI_Allreduce(&us, &r.max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	r.avg = sum / nranks;
	r.iters = it;
	return r;
}

/* one call: returns its time; *sp and *rp are the buffers (replaced when fresh) */
static double one_call(double **sp, double **rp, long n) {
	if (fresh) {
		free(*sp);
		free(*rp);
		*sp = malloc(n * sizeof(double));
		*rp = malloc(n * sizeof(double));
		if (!*sp || !*rp) MPI_Abort(MPI_COMM_WORLD, 1);
		fill(*sp, n, rank);
	}
	double t0 = MPI_Wtime();
	MPI_Allreduce(*sp, *rp, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	double d = MPI_Wtime() - t0;
	MPI_Barrier(MPI_COMM_WORLD);
	return d;
}

/* the job's warm-up, as in apps/allreducebench (jobWarmup): Allreduce of the first size,
 * untimed, in batches of 64 until rank 0 has spent 50 ms; rank 0's decision is broadcast
 * with each batch, so every rank makes the same calls */
static void warm_job(double **sp, double **rp, long size) {
	long n = size / 8;
	double *s = *sp, *r = *rp;
	if (fresh) {
		s = malloc(n * sizeof(double));
		r = malloc(n * sizeof(double));
		if (!s || !r) MPI_Abort(MPI_COMM_WORLD, 1);
		fill(s, n, rank);
	}
	double start = MPI_Wtime();
	for (int more = 1; more;) {
		for (int i = 0; i < 64; i++) MPI_Allreduce(s, r, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		if (rank == 0 && MPI_Wtime() - start >= 0.05) more = 0;
		MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
	}
	if (fresh) free(s), free(r);
	MPI_Barrier(MPI_COMM_WORLD);
}

static struct row allreduce_size(double **sp, double **rp, long size) {
	long n = size / 8;
	int it = scaled(iters, size), warmup = imax(it / 10, 3);
	double warm = 0, total = 0;
	for (int i = 0; i < warmup; i++) warm += one_call(sp, rp, n);
	it = cap_iters(it, warm, warmup);
	double cs[2];
	csw(cs);
	for (int i = 0; i < it; i++) total += one_call(sp, rp, n);
	if (!check(*rp, n)) {
		fprintf(stderr, "allreducebench_mpi: rank %d: wrong result at %ld bytes\n", rank, size);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	struct row r = reduce_row(total, it);
	reduce_cs(&r, cs, it);
	r.bytes = size;
	if (r.avg > 0) {
		r.algbw = size / r.avg / 1e3;
		r.busbw = r.algbw * 2 * (nranks - 1) / nranks;
	}
	return r;
}

/* the Barrier test's job warm-up when no Allreduce ran before it (--test barrier), as
 * warmBarrier in apps/allreducebench: Barriers in batches of 256 until rank 0 has spent
 * 50 ms */
static void warm_barrier(void) {
	double start = MPI_Wtime();
	for (int more = 1; more;) {
		for (int i = 0; i < 256; i++) MPI_Barrier(MPI_COMM_WORLD);
		if (rank == 0 && MPI_Wtime() - start >= 0.05) more = 0;
		MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
	}
}

static double barriers(int n) {
	double total = 0;
	for (int i = 0; i < n; i++) {
		double t0 = MPI_Wtime();
		MPI_Barrier(MPI_COMM_WORLD);
		total += MPI_Wtime() - t0;
	}
	return total;
}

/* one size's overlap figures (--test overlap), as overlapRow in apps/allreducebench */
struct ovl_row {
	long bytes;
	int iters, passes, polls;
	double coll, comp, ovl, sum, pct;
};

/* the compute kernel: sweeps of float64 arithmetic over a private, cache-resident array
 * (32 KiB, as kernelLen in apps/allreducebench); it makes no MPI call */
#define KERNEL_LEN 4096
static double kern[KERNEL_LEN];

static void sweep(long n) {
	for (long p = 0; p < n; p++)
		for (int i = 0; i < KERNEL_LEN; i++) kern[i] = kern[i] * 0.999999 + 1e-6;
}

/* passes sweeps in npolls+1 chunks, MPI_Test on req between them */
static void kernel_run(long passes, int npolls, MPI_Request *req) {
	long done = 0;
	for (int c = 0; c <= npolls; c++) {
		long n = passes * (c + 1) / (npolls + 1) - done;
		sweep(n);
		done += n;
		if (c < npolls) {
			int flag;
			MPI_Test(req, &flag, MPI_STATUS_IGNORE);
		}
	}
}

/* the passes a trial of n scales to for target seconds, 0 when the trial is too short */
static long scale_passes(long n, double target) {
	double t0 = MPI_Wtime();
	sweep(n);
	double d = MPI_Wtime() - t0;
	if (d < target / 4 || d < 100e-6) return 0;
	long p = (long)(n * target / d);
	return p > 1 ? p : 1;
}

/* the passes that take about target seconds here, as kernel.calibrate */
static long calibrate(double target) {
	long n = 1, p;
	for (; n < 1L << 30; n *= 2)
		if ((p = scale_passes(n, target)) > 0) {
			n = p;
			break;
		}
	p = scale_passes(n, target);
	return p > 0 ? p : n;
}

static double overlap_pct(double coll, double comp, double ovl) {
	double m = coll < comp ? coll : comp;
	return m > 0 ? (coll + comp - ovl) / m * 100 : 0;
}

/* which: 0 Allreduce, 1 the kernel, 2 Iallreduce + kernel + Wait; each timed, an
 * MPI_Barrier after each outside the timed region */
static double ovl_timed(int count, int which, double *s, double *r, long n, long passes) {
	double total = 0;
	for (int i = 0; i < count; i++) {
		double t0 = MPI_Wtime();
		if (which == 0) MPI_Allreduce(s, r, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		else if (which == 1) kernel_run(passes, 0, NULL);
		else {
			MPI_Request req;
			MPI_Iallreduce(s, r, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
			kernel_run(passes, polls, &req);
			MPI_Wait(&req, MPI_STATUS_IGNORE);
		}
		total += MPI_Wtime() - t0;
		MPI_Barrier(MPI_COMM_WORLD);
	}
	return total;
}

/* the ranks' mean of t / count (complete at every rank) */
static double mean_over(double t, int count) {
	double m = t / count, sum;
	MPI_Allreduce(&m, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	return sum / nranks;
}

/* the kernel's count, the same at every rank, for about goal seconds, as calibrateJob in
 * apps/allreducebench: the largest of the ranks' calibrations, then corrected by the
 * ranks' mean over trial runs while it is off goal by more than a tenth, 3 rounds at most */
static long calibrate_job(double goal, int trials) {
	long mine = calibrate(goal), passes;
	MPI_Allreduce(&mine, &passes, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
	for (int round = 1; round <= 3; round++) {
		double ratio = mean_over(ovl_timed(trials, 1, NULL, NULL, 0, passes), trials) / goal;
		if (fabs(ratio - 1) <= 0.1 || !(ratio > 0)) break;
		passes = (long)(passes / ratio);
		if (passes < 1) passes = 1;
	}
	return passes;
}

/* one size of the overlap test, as overlapSize in apps/allreducebench: each measured
 * iteration runs the Allreduce, the kernel and the overlapped pair in turn, so that a
 * change of the machine's speed hits all three alike; r2 is the overlapped pair's result */
static struct ovl_row overlap_size(double *s, double *r, double *r2, long size) {
	long n = size / 8;
	int it = scaled(iters, size), warmup = imax(it / 10, 3);
	double warm = ovl_timed(warmup, 0, s, r, n, 0);
	it = cap_iters(it, warm, warmup);
	long passes = calibrate_job(mean_over(warm, warmup), warmup);
	ovl_timed(1, 2, s, r2, n, passes);
	memset(r2, 0, (size_t)n * sizeof(double));
	double t[3] = {0, 0, 0};
	for (int i = 0; i < it; i++)
		for (int which = 0; which < 3; which++) t[which] += ovl_timed(1, which, s, which == 2 ? r2 : r, n, passes);
	if (!check(r2, n)) {
		fprintf(stderr, "allreducebench_mpi: rank %d: wrong MPI_Iallreduce result at %ld bytes\n", rank, size);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	struct ovl_row o = {size, it, (int)passes, polls, 0, 0, 0, 0, 0};
	o.coll = mean_over(t[0], it) * 1e6;
	o.comp = mean_over(t[1], it) * 1e6;
	o.ovl = mean_over(t[2], it) * 1e6;
	o.sum = o.coll + o.comp;
	o.pct = overlap_pct(o.coll, o.comp, o.ovl);
	return o;
}

static void print_ovl(FILE *f, const struct ovl_row *o) {
	fprintf(f, "%-12ld %10d %12.3f %12.3f %12.3f %12.3f %10.1f %8d\n", o->bytes, o->iters, o->coll, o->comp, o->ovl, o->sum, o->pct, o->passes);
}

static void json_ovl(FILE *f, const struct ovl_row *rows, int n) {
	fprintf(f, ",\n  \"overlap\": [");
	for (int i = 0; i < n; i++) {
		const struct ovl_row *o = &rows[i];
		fprintf(f, "%s\n    {\n      \"bytes\": %ld,\n      \"iterations\": %d,\n      \"compute_passes\": %d,\n      \"polls\": %d,\n"
			   "      \"coll_us\": %.6g,\n      \"comp_us\": %.6g,\n      \"ovl_us\": %.6g,\n      \"blocking_sum_us\": %.6g,\n      \"overlap_pct\": %.6g\n    }",
			i ? "," : "", o->bytes, o->iters, o->passes, o->polls, o->coll, o->comp, o->ovl, o->sum, o->pct);
	}
	fprintf(f, "\n  ]");
}

static void print_row(FILE *f, const struct row *r) {
	fprintf(f, "%-12ld %10d %12.3f %12.3f %12.3f %12.3f %12.3f\n", r->bytes, r->iters, r->avg, r->min, r->max, r->algbw, r->busbw);
}

static void json_rows(FILE *f, const char *name, const struct row *rows, int n) {
	fprintf(f, ",\n  \"%s\": [", name);
	for (int i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		fprintf(f, "%s\n    {\n      \"bytes\": %ld,\n      \"iterations\": %d,\n      \"avg_us\": %.6g,\n      \"min_us\": %.6g,\n      \"max_us\": %.6g",
			i ? "," : "", r->bytes, r->iters, r->avg, r->min, r->max);
		if (r->algbw > 0) fprintf(f, ",\n      \"algbw_GBps\": %.6g,\n      \"busbw_GBps\": %.6g", r->algbw, r->busbw);
		fprintf(f, ",\n      \"vcsw_per_call\": %.6g,\n      \"ivcsw_per_call\": %.6g", r->vcsw, r->ivcsw);
		fprintf(f, "\n    }");
	}
	fprintf(f, "\n  ]");
}

/* the send and receive lengths of test t, in elements, for blocks of n */
static void coll_lens(int t, long n, long *sl, long *rl) {
	*sl = t == T_BCAST ? 0 : t == T_ALLTOALL || t == T_SCATTER ? nranks * n : n;
	*rl = t == T_ALLGATHER || t == T_ALLTOALL || t == T_GATHER ? nranks * n : n;
}

/* whether test t's bandwidths count p blocks (the receive buffer of allgather, alltoall
 * and gather, the send buffer of scatter), as nccl-tests does */
static int coll_per_rank(int t) { return t == T_ALLGATHER || t == T_ALLTOALL || t == T_GATHER || t == T_SCATTER; }

/* element i of the block rank s sends to rank d: distinct for every pair (scatter's root
 * sends the same values as an alltoall's rank 0) */
static double a2a_value(long i, int s, long d) { return (double)(i % 251 + 1 + 256 * ((long)s * nranks + d)); }

/* element i of block d of rank r's input (its send; bcast: the root's buffer) */
static double coll_input(int t, long i, int r, long d) {
	if (t == T_BCAST) return (double)(i % 251 + 1);
	if (t == T_ALLTOALL || t == T_SCATTER) return a2a_value(i, r, d);
	return (double)(i % 251 + r + 1);
}

/* element i of block b of rank r's result */
static double coll_want(int t, long i, long b, int r) {
	switch (t) {
	case T_BCAST: return (double)(i % 251 + 1);
	case T_REDUCE: return (double)(nranks * (i % 251 + 1) + nranks * (nranks - 1) / 2);
	case T_ALLGATHER:
	case T_GATHER: return (double)(i % 251 + b + 1);
	case T_SCATTER: return a2a_value(i, 0, r);
	default: return a2a_value(i, (int)b, r);
	}
}

/* whether rank r has a result to check */
static int coll_who(int t, int r) { return t == T_BCAST ? r != 0 : t == T_REDUCE || t == T_GATHER ? r == 0 : 1; }

static void coll_call(int t, double *s, double *r, long n) {
	switch (t) {
	case T_BCAST: MPI_Bcast(r, (int)n, MPI_DOUBLE, 0, MPI_COMM_WORLD); break;
	case T_REDUCE: MPI_Reduce(s, r, (int)n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD); break;
	case T_ALLGATHER: MPI_Allgather(s, (int)n, MPI_DOUBLE, r, (int)n, MPI_DOUBLE, MPI_COMM_WORLD); break;
	case T_GATHER: MPI_Gather(s, (int)n, MPI_DOUBLE, r, (int)n, MPI_DOUBLE, 0, MPI_COMM_WORLD); break;
	case T_SCATTER: MPI_Scatter(s, (int)n, MPI_DOUBLE, r, (int)n, MPI_DOUBLE, 0, MPI_COMM_WORLD); break;
	default: MPI_Alltoall(s, (int)n, MPI_DOUBLE, r, (int)n, MPI_DOUBLE, MPI_COMM_WORLD);
	}
}

/* a collective test's vectors at one size, as collBufs in apps/allreducebench: cut from
 * a pair allocated for the largest size, or new for every call with --fresh */
struct cbufs {
	int t;
	long n, sl, rl; /* elements per block; send and receive lengths */
	double *full[2], *s, *r;
};

static double *alloc_doubles(long n) {
	if (n == 0) return NULL;
	double *v = malloc((size_t)n * sizeof(double));
	if (!v) MPI_Abort(MPI_COMM_WORLD, 1);
	return v;
}

static void cbufs_init(struct cbufs *b, int t) {
	memset(b, 0, sizeof *b);
	b->t = t;
	if (fresh) return;
	long sl, rl;
	coll_lens(t, max_size / 8, &sl, &rl);
	b->full[0] = alloc_doubles(sl);
	b->full[1] = alloc_doubles(rl);
	fill(b->full[1], rl, rank + 100);
}

static void cbufs_free(struct cbufs *b) {
	if (fresh) free(b->s), free(b->r);
	free(b->full[0]);
	free(b->full[1]);
}

/* cuts (or allocates) the vectors for size bytes and writes the input */
static void set_size(struct cbufs *b, long size) {
	b->n = size / 8;
	coll_lens(b->t, b->n, &b->sl, &b->rl);
	if (fresh) {
		free(b->s);
		free(b->r);
		b->s = alloc_doubles(b->sl);
		b->r = alloc_doubles(b->rl);
	} else
		b->s = b->full[0], b->r = b->full[1];
	double *in = b->s;
	long len = b->sl;
	if (b->t == T_BCAST) {
		if (rank != 0) return;
		in = b->r, len = b->rl;
	}
	for (long k = 0; k < len; k++) in[k] = coll_input(b->t, k % b->n, rank, k / b->n);
}

/* one call, timed, and a Barrier after it */
static double coll_one(struct cbufs *b) {
	if (fresh) set_size(b, b->n * 8);
	double t0 = MPI_Wtime();
	coll_call(b->t, b->s, b->r, b->n);
	double d = MPI_Wtime() - t0;
	MPI_Barrier(MPI_COMM_WORLD);
	return d;
}

/* overwrites the result with a wrong pattern, makes one more call (untimed) and checks it */
static void coll_verify(struct cbufs *b) {
	int mine = coll_who(b->t, rank);
	if (mine) fill(b->r, b->rl, rank + 100);
	coll_call(b->t, b->s, b->r, b->n);
	if (!mine) return;
	for (long k = 0; k < b->rl; k++)
		if (b->r[k] != coll_want(b->t, k % b->n, k / b->n, rank)) {
			fprintf(stderr, "allreducebench_mpi: rank %d: wrong %s result at %ld bytes: element %ld of block %ld is %g, want %g\n",
				rank, test_names[b->t], b->n * 8, k % b->n, k / b->n, b->r[k], coll_want(b->t, k % b->n, k / b->n, rank));
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
}

/* the test's job warm-up, as collTest's: its calls of the first size in batches of 64,
 * each followed by an MPI_Barrier as in the timed loop (no rank runs ahead) */
static void warm_coll(struct cbufs *b, long size) {
	set_size(b, size);
	double start = MPI_Wtime();
	for (int more = 1; more;) {
		for (int i = 0; i < 64; i++) {
			coll_call(b->t, b->s, b->r, b->n);
			MPI_Barrier(MPI_COMM_WORLD);
		}
		if (rank == 0 && MPI_Wtime() - start >= 0.05) more = 0;
		MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
	}
	MPI_Barrier(MPI_COMM_WORLD);
}

/* one size of a collective test, as collSize in apps/allreducebench; the bandwidths
 * count as nccl-tests does: the vector for bcast and reduce (busbw = algbw), the p blocks
 * received for allgather, alltoall and gather, sent for scatter (busbw = algbw * (p-1)/p) */
static struct row coll_size(struct cbufs *b, long size) {
	set_size(b, size);
	int it = scaled(iters, size), warmup = imax(it / 10, 3);
	double warm = 0, total = 0;
	for (int i = 0; i < warmup; i++) warm += coll_one(b);
	it = cap_iters(it, warm, warmup);
	double cs[2];
	csw(cs);
	for (int i = 0; i < it; i++) total += coll_one(b);
	coll_verify(b);
	struct row r = reduce_row(total, it);
	reduce_cs(&r, cs, it);
	r.bytes = size;
	if (r.avg > 0) {
		int per_rank = coll_per_rank(b->t);
		r.algbw = (per_rank ? nranks : 1) * size / r.avg / 1e3;
		r.busbw = per_rank ? r.algbw * (nranks - 1) / nranks : r.algbw;
	}
	return r;
}

/* parse_tests reads --test into want (by test) or *ovl; 0 when s names no test */
static int parse_tests(const char *s, int want[NTESTS], int *ovl) {
	if (!strcmp(s, "overlap")) return *ovl = 1;
	char *list = strdup(s);
	int ok = 1;
	for (char *p = list, *f; ok && (f = strsep(&p, ","));) {
		while (*f == ' ') f++;
		if (!strcmp(f, "all")) want[T_ALLREDUCE] = want[T_BARRIER] = 1;
		else if (!strcmp(f, "colls"))
			for (int t = 0; t < NTESTS; t++) want[t] = 1;
		else {
			int t = 0;
			while (t < NTESTS && strcmp(f, test_names[t])) t++;
			if (t == NTESTS) ok = 0;
			else want[t] = 1;
		}
	}
	free(list);
	return ok;
}

static int usage(const char *msg, const char *arg) {
	if (rank == 0) fprintf(stderr, "allreducebench_mpi: %s%s\n", msg, arg ? arg : "");
	MPI_Finalize();
	return 2;
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	const char *test = "all", *json = NULL;
	int size_flags = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--fresh") || !strcmp(a, "--fresh=true")) fresh = 1;
		else if (!strcmp(a, "--fresh=false")) fresh = 0;
		else if (!strcmp(a, "--json")) json = "-";
		else if (!strncmp(a, "--json=", 7)) json = a + 7;
		else if (!v) return usage("missing value for ", a);
		else {
			i++;
			if (!strcmp(a, "--test")) test = v;
			else if (!strcmp(a, "--min-size")) min_size = parse_size(v), size_flags = 1;
			else if (!strcmp(a, "--max-size")) max_size = parse_size(v), size_flags = 1;
			else if (!strcmp(a, "--polls")) polls = atoi(v);
			else if (!strcmp(a, "--sizes")) {
				char *list = strdup(v);
				for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
					long n = parse_size(t);
					if (n < 8 || n % 8 || nsizes == 64) return usage("--sizes: want multiples of 8 bytes such as 8,1M,24M, not ", v);
					sizes[nsizes++] = n;
				}
				free(list);
				if (!nsizes) return usage("--sizes: empty list", NULL);
			} else if (!strcmp(a, "--iters")) iters = atoi(v);
			else if (!strcmp(a, "--min-iters")) min_iters = atoi(v);
			else if (!strcmp(a, "--size-time")) size_time = parse_secs(v);
			else if (!strcmp(a, "--algo")) {
				if (strcmp(v, "auto")) return usage("--algo: only auto here; force the MPI's algorithm with its own variables, not ", v);
			} else return usage("unknown flag ", a);
		}
	}
	int want[NTESTS] = {0}, do_ovl = 0;
	if (!parse_tests(test, want, &do_ovl))
		return usage("--test: want a comma-separated list of allreduce, bcast, reduce, allgather, alltoall, gather, scatter, barrier, all or colls; or overlap alone, not ", test);
	if (polls < 0) return usage("--polls must not be negative", NULL);
	if (do_ovl && !nsizes && !size_flags) sizes[nsizes++] = min_size = max_size = 16L << 20;
	if (min_size < 8 || min_size % 8 || max_size < min_size || max_size > (1L << 31)) return usage("want 8 <= min-size <= max-size, min-size a multiple of 8", NULL);
	if (nsizes) {
		max_size = 0;
		for (int i = 0; i < nsizes; i++) max_size = sizes[i] > max_size ? sizes[i] : max_size;
	} else
		for (long size = min_size; size <= max_size && nsizes < 64; size *= 2) sizes[nsizes++] = size;
	if (iters < 1 || min_iters < 1 || size_time < 0) return usage("--iters and --min-iters must be at least 1, --size-time a duration such as 200ms", NULL);

	char lib[MPI_MAX_LIBRARY_VERSION_STRING], host[MPI_MAX_PROCESSOR_NAME] = {0};
	int len;
	MPI_Get_library_version(lib, &len);
	const char *system = strstr(lib, "Open MPI") ? "Open MPI" : strstr(lib, "MPICH") ? "MPICH" : "MPI";
	MPI_Get_processor_name(host, &len);
	char *hosts = calloc((size_t)nranks, MPI_MAX_PROCESSOR_NAME);
	MPI_Allgather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
	int nhosts = 0;
	for (int r = 0; r < nranks; r++) {
		int seen = 0;
		for (int q = 0; q < r; q++) seen |= !strcmp(hosts + (size_t)q * MPI_MAX_PROCESSOR_NAME, hosts + (size_t)r * MPI_MAX_PROCESSOR_NAME);
		nhosts += !seen;
	}

	FILE *text = rank == 0 && !(json && !strcmp(json, "-")) ? stdout : NULL;
	if (text) {
		fprintf(text, "# %s allreducebench (OSU method): %d ranks on %d host(s), transport mpi, algorithm auto, progress mpi, fresh buffers %s\n",
			system, nranks, nhosts, fresh ? "true" : "false");
		fprintf(text, "# latency: each rank's mean per call in microseconds, averaged (min, max) over the ranks; GB/s = 10^9 bytes/s\n");
	}
	const char *hdr = "#bytes       iterations       avg_us       min_us       max_us   algbw_GB/s   busbw_GB/s";
	static struct row rows[NTESTS][64];
	struct ovl_row ovl[64];
	int nrows[NTESTS] = {0}, novl = 0;
	if (want[T_ALLREDUCE]) {
		struct row *ar = rows[T_ALLREDUCE];
		int nar = 0;
		if (text) fprintf(text, "\n# allreduce: float64 sum\n%s\n", hdr);
		double *s = NULL, *r = NULL;
		if (!fresh) {
			s = malloc(max_size);
			r = malloc(max_size);
			if (!s || !r) MPI_Abort(MPI_COMM_WORLD, 1);
			fill(s, max_size / 8, rank);
			fill(r, max_size / 8, rank + 100);
		}
		if (nsizes) warm_job(&s, &r, sizes[0]);
		for (int k = 0; k < nsizes; k++) {
			ar[nar] = allreduce_size(&s, &r, sizes[k]);
			if (text) print_row(text, &ar[nar]), fflush(text);
			nar++;
		}
		nrows[T_ALLREDUCE] = nar;
		free(s);
		free(r);
	}
	for (int t = T_BCAST; t <= T_SCATTER; t++) {
		if (!want[t]) continue;
		if (text) fprintf(text, "\n# %s\n%s\n", test_titles[t], hdr);
		struct cbufs b;
		cbufs_init(&b, t);
		if (nsizes) warm_coll(&b, sizes[0]);
		for (int k = 0; k < nsizes; k++) {
			rows[t][k] = coll_size(&b, sizes[k]);
			if (text) print_row(text, &rows[t][k]), fflush(text);
		}
		nrows[t] = nsizes;
		cbufs_free(&b);
	}
	if (do_ovl) {
		if (text) {
			fprintf(text, "\n# overlap: Iallreduce (float64 sum), a compute kernel calibrated to the Allreduce's time (%d Test calls in it), Wait\n", polls);
			fprintf(text, "# coll: Allreduce alone; comp: the kernel alone; ovl: overlapped; sum = coll + comp; overlap_%% = (sum - ovl) / min(coll, comp) * 100\n");
			fprintf(text, "#bytes       iterations      coll_us      comp_us       ovl_us       sum_us  overlap_%%   passes\n");
		}
		double *s = malloc(max_size), *r = malloc(max_size), *r2 = malloc(max_size);
		if (!s || !r || !r2) MPI_Abort(MPI_COMM_WORLD, 1);
		fill(s, max_size / 8, rank);
		fill(r, max_size / 8, rank + 100);
		for (int i = 0; i < KERNEL_LEN; i++) kern[i] = 1;
		warm_job(&s, &r, sizes[0]);
		for (int k = 0; k < nsizes; k++) {
			ovl[novl] = overlap_size(s, r, r2, sizes[k]);
			if (text) print_ovl(text, &ovl[novl]), fflush(text);
			novl++;
		}
		free(s);
		free(r);
		free(r2);
	}
	if (want[T_BARRIER]) {
		if (text) fprintf(text, "\n# barrier\n%s\n", hdr);
		int first = 1; /* no other test warmed the job up */
		for (int t = 0; t < T_BARRIER; t++) first &= !want[t];
		if (first) warm_barrier();
		int warmup = imax(iters / 10, 3);
		int it = cap_iters(iters, barriers(warmup), warmup);
		double cs[2];
		csw(cs);
		struct row *bar = &rows[T_BARRIER][0];
		*bar = reduce_row(barriers(it), it);
		reduce_cs(bar, cs, it);
		nrows[T_BARRIER] = 1;
		if (text) print_row(text, bar);
	}
	if (rank == 0 && json) {
		FILE *f = strcmp(json, "-") ? fopen(json, "w") : stdout;
		if (!f) {
			perror(json);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		fprintf(f, "{\n  \"benchmark\": \"allreducebench\",\n  \"system\": \"%s\",\n  \"ranks\": %d,\n  \"hosts\": [", system, nranks);
		for (int r = 0, first = 1; r < nranks; r++) {
			int seen = 0;
			for (int q = 0; q < r; q++) seen |= !strcmp(hosts + (size_t)q * MPI_MAX_PROCESSOR_NAME, hosts + (size_t)r * MPI_MAX_PROCESSOR_NAME);
			if (!seen) fprintf(f, "%s\"%s\"", first ? "" : ", ", hosts + (size_t)r * MPI_MAX_PROCESSOR_NAME), first = 0;
		}
		fprintf(f, "],\n  \"transport\": \"mpi\",\n  \"algorithm\": \"auto\",\n  \"progress\": \"mpi\",\n  \"fresh\": %s", fresh ? "true" : "false");
		for (int t = 0; t < NTESTS; t++)
			if (nrows[t]) json_rows(f, test_names[t], rows[t], nrows[t]);
		if (novl) json_ovl(f, ovl, novl);
		fprintf(f, "\n}\n");
		if (f != stdout) fclose(f);
	}
	free(hosts);
	MPI_Finalize();
	return 0;
}
