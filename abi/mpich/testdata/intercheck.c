/* intercheck: the collectives on an intercommunicator. The ranks split into a low group
 * (the first half) and a high group, joined by MPI_Intercomm_create. Each collective runs
 * in its blocking, nonblocking and persistent forms, and the rooted ones from two roots in
 * each group. Every rank checks its results and aborts with a message on a wrong value;
 * rank 0 prints one line per check, the same on any library. Run with 4, 6 or 8 ranks: the
 * reduce-scatters need groups of one size, whose counts add up alike. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXP 8
#define N 4 /* elements per block */

static int wrank, wsize, low, lrank, lsize, rsize;
static MPI_Comm inter;

static void fail(const char *what, long i, double got, double want)
{
	fprintf(stderr, "intercheck: rank %d: %s: element %ld is %g, want %g\n", wrank, what, i, got, want);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

#define EXPECT(what, i, got, want) \
	do { if ((double)(got) != (double)(want)) fail(what, (long)(i), (got), (want)); } while (0)

/* form is the form each collective runs in: 0 blocking, 1 nonblocking (waited for at
 * once), 2 persistent (started once, waited for and freed). */
static int form;

/* mpichBugs is set by the argument "mpich": Debian's MPICH 4.0.2 gives the other group
 * nothing from an MPI_Ibcast whose root is not rank 0 of its group, so the nonblocking
 * and persistent rooted calls run from rank 0 alone there. */
static int mpichBugs;
#define CALL(blocking, nonblocking, persistent) do { \
	MPI_Request q_; \
	switch (form) { \
	case 0: blocking; break; \
	case 1: nonblocking; MPI_Wait(&q_, MPI_STATUS_IGNORE); break; \
	default: persistent; MPI_Start(&q_); MPI_Wait(&q_, MPI_STATUS_IGNORE); MPI_Request_free(&q_); \
	} \
} while (0)

/* done prints what, with its form, once every rank has checked it. */
static void done(const char *what)
{
	MPI_Barrier(MPI_COMM_WORLD);
	if (wrank == 0)
		printf("%s%s: ok\n", form == 1 ? "nonblocking " : form == 2 ? "persistent " : "", what);
}

/* val is element i of the data that rank r of group g (1: low) contributes. */
static double val(int g, int r, int i) { return 1000 * g + 10 * r + i; }

/* rootArg is the root argument of a rooted call whose root is rank rr of group rg. */
static int rootArg(int rg, int rr) { return rg != low ? rr : lrank == rr ? MPI_ROOT : MPI_PROC_NULL; }

static void bcast(int rg, int rr)
{
	double b[N];
	for (int i = 0; i < N; i++)
		b[i] = rg == low && lrank == rr ? val(rg, rr, i) : -1;
	int root = rootArg(rg, rr);
	CALL(MPI_Bcast(b, N, MPI_DOUBLE, root, inter), MPI_Ibcast(b, N, MPI_DOUBLE, root, inter, &q_),
	     MPI_Bcast_init(b, N, MPI_DOUBLE, root, inter, MPI_INFO_NULL, &q_));
	for (int i = 0; i < N; i++)
		EXPECT("Bcast", i, b[i], rg == low && lrank != rr ? -1 : val(rg, rr, i));
}

static void reduce(int rg, int rr)
{
	double s[N], r[N];
	for (int i = 0; i < N; i++)
		s[i] = val(low, lrank, i), r[i] = -1;
	int root = rootArg(rg, rr);
	CALL(MPI_Reduce(s, r, N, MPI_DOUBLE, MPI_SUM, root, inter),
	     MPI_Ireduce(s, r, N, MPI_DOUBLE, MPI_SUM, root, inter, &q_),
	     MPI_Reduce_init(s, r, N, MPI_DOUBLE, MPI_SUM, root, inter, MPI_INFO_NULL, &q_));
	for (int i = 0; i < N; i++) {
		double want = -1;
		if (rg == low && lrank == rr) {
			want = 0;
			for (int k = 0; k < rsize; k++)
				want += val(!low, k, i);
		}
		EXPECT("Reduce", i, r[i], want);
	}
}

/* vblocks sets the blocks of the v-forms: rank k's holds 1 + k % N elements, at k * (N + 1). */
static void vblocks(int *counts, int *displs)
{
	for (int k = 0; k < MAXP; k++)
		counts[k] = 1 + k % N, displs[k] = k * (N + 1);
}

/* toOne sets the buffers of a call whose ranks each send one block: s this rank's block,
 * r cleared, and the v-forms' blocks. */
static void toOne(double *s, double *r, int *counts, int *displs)
{
	for (int i = 0; i < N; i++)
		s[i] = val(low, lrank, i);
	for (int i = 0; i < MAXP * (N + 1); i++)
		r[i] = -1;
	vblocks(counts, displs);
}

static void gather(int rg, int rr, int v)
{
	double s[N], r[MAXP * (N + 1)];
	int counts[MAXP], displs[MAXP];
	toOne(s, r, counts, displs);
	int root = rootArg(rg, rr);
	if (v)
		CALL(MPI_Gatherv(s, 1 + lrank % N, MPI_DOUBLE, r, counts, displs, MPI_DOUBLE, root, inter),
		     MPI_Igatherv(s, 1 + lrank % N, MPI_DOUBLE, r, counts, displs, MPI_DOUBLE, root, inter, &q_),
		     MPI_Gatherv_init(s, 1 + lrank % N, MPI_DOUBLE, r, counts, displs, MPI_DOUBLE, root, inter, MPI_INFO_NULL, &q_));
	else
		CALL(MPI_Gather(s, N, MPI_DOUBLE, r, N, MPI_DOUBLE, root, inter),
		     MPI_Igather(s, N, MPI_DOUBLE, r, N, MPI_DOUBLE, root, inter, &q_),
		     MPI_Gather_init(s, N, MPI_DOUBLE, r, N, MPI_DOUBLE, root, inter, MPI_INFO_NULL, &q_));
	if (rg != low || lrank != rr)
		return;
	for (int k = 0; k < rsize; k++)
		for (int i = 0; i < N; i++) {
			int at = v ? k * (N + 1) + i : k * N + i;
			double want = !v || i < counts[k] ? val(!low, k, i) : -1;
			EXPECT(v ? "Gatherv" : "Gather", at, r[at], want);
		}
}

static void scatter(int rg, int rr, int v)
{
	double s[MAXP * (N + 1)], r[N];
	int counts[MAXP], displs[MAXP];
	for (int i = 0; i < MAXP * (N + 1); i++)
		s[i] = val(low, lrank, i);
	for (int i = 0; i < N; i++)
		r[i] = -1;
	vblocks(counts, displs);
	int root = rootArg(rg, rr);
	if (v)
		CALL(MPI_Scatterv(s, counts, displs, MPI_DOUBLE, r, 1 + lrank % N, MPI_DOUBLE, root, inter),
		     MPI_Iscatterv(s, counts, displs, MPI_DOUBLE, r, 1 + lrank % N, MPI_DOUBLE, root, inter, &q_),
		     MPI_Scatterv_init(s, counts, displs, MPI_DOUBLE, r, 1 + lrank % N, MPI_DOUBLE, root, inter, MPI_INFO_NULL, &q_));
	else
		CALL(MPI_Scatter(s, N, MPI_DOUBLE, r, N, MPI_DOUBLE, root, inter),
		     MPI_Iscatter(s, N, MPI_DOUBLE, r, N, MPI_DOUBLE, root, inter, &q_),
		     MPI_Scatter_init(s, N, MPI_DOUBLE, r, N, MPI_DOUBLE, root, inter, MPI_INFO_NULL, &q_));
	for (int i = 0; i < N; i++) {
		double want = -1;
		if (rg != low && (!v || i < 1 + lrank % N))
			want = val(rg, rr, v ? lrank * (N + 1) + i : lrank * N + i);
		EXPECT(v ? "Scatterv" : "Scatter", i, r[i], want);
	}
}

static void allreduce(void)
{
	double s[N], r[N];
	for (int i = 0; i < N; i++)
		s[i] = val(low, lrank, i), r[i] = -1;
	CALL(MPI_Allreduce(s, r, N, MPI_DOUBLE, MPI_SUM, inter),
	     MPI_Iallreduce(s, r, N, MPI_DOUBLE, MPI_SUM, inter, &q_),
	     MPI_Allreduce_init(s, r, N, MPI_DOUBLE, MPI_SUM, inter, MPI_INFO_NULL, &q_));
	for (int i = 0; i < N; i++) {
		double want = 0;
		for (int k = 0; k < rsize; k++)
			want += val(!low, k, i);
		EXPECT("Allreduce", i, r[i], want);
	}
}

static void allgather(int v)
{
	double s[N], r[MAXP * (N + 1)];
	int counts[MAXP], displs[MAXP];
	toOne(s, r, counts, displs);
	if (v)
		CALL(MPI_Allgatherv(s, 1 + lrank % N, MPI_DOUBLE, r, counts, displs, MPI_DOUBLE, inter),
		     MPI_Iallgatherv(s, 1 + lrank % N, MPI_DOUBLE, r, counts, displs, MPI_DOUBLE, inter, &q_),
		     MPI_Allgatherv_init(s, 1 + lrank % N, MPI_DOUBLE, r, counts, displs, MPI_DOUBLE, inter, MPI_INFO_NULL, &q_));
	else
		CALL(MPI_Allgather(s, N, MPI_DOUBLE, r, N, MPI_DOUBLE, inter),
		     MPI_Iallgather(s, N, MPI_DOUBLE, r, N, MPI_DOUBLE, inter, &q_),
		     MPI_Allgather_init(s, N, MPI_DOUBLE, r, N, MPI_DOUBLE, inter, MPI_INFO_NULL, &q_));
	for (int k = 0; k < rsize; k++)
		for (int i = 0; i < N; i++) {
			int at = v ? k * (N + 1) + i : k * N + i;
			double want = !v || i < counts[k] ? val(!low, k, i) : -1;
			EXPECT(v ? "Allgatherv" : "Allgather", at, r[at], want);
		}
}

static void alltoall(int v)
{
	double s[MAXP * N], r[MAXP * N];
	int sc[MAXP], sd[MAXP], rc[MAXP], rd[MAXP];
	for (int k = 0; k < MAXP; k++)
		for (int i = 0; i < N; i++)
			s[k * N + i] = val(low, lrank, 100 * k + i), r[k * N + i] = -1;
	for (int k = 0; k < MAXP; k++) {
		sc[k] = 1 + (lrank + k) % N, sd[k] = k * N; /* to rank k of the other group */
		rc[k] = 1 + (k + lrank) % N, rd[k] = k * N; /* from rank k, which sends 1+(k+lrank)%N */
	}
	if (v)
		CALL(MPI_Alltoallv(s, sc, sd, MPI_DOUBLE, r, rc, rd, MPI_DOUBLE, inter),
		     MPI_Ialltoallv(s, sc, sd, MPI_DOUBLE, r, rc, rd, MPI_DOUBLE, inter, &q_),
		     MPI_Alltoallv_init(s, sc, sd, MPI_DOUBLE, r, rc, rd, MPI_DOUBLE, inter, MPI_INFO_NULL, &q_));
	else
		CALL(MPI_Alltoall(s, N, MPI_DOUBLE, r, N, MPI_DOUBLE, inter),
		     MPI_Ialltoall(s, N, MPI_DOUBLE, r, N, MPI_DOUBLE, inter, &q_),
		     MPI_Alltoall_init(s, N, MPI_DOUBLE, r, N, MPI_DOUBLE, inter, MPI_INFO_NULL, &q_));
	for (int k = 0; k < rsize; k++)
		for (int i = 0; i < N; i++) {
			double want = !v || i < rc[k] ? val(!low, k, 100 * lrank + i) : -1;
			EXPECT(v ? "Alltoallv" : "Alltoall", k * N + i, r[k * N + i], want);
		}
}

static void reduceScatter(int block)
{
	double s[MAXP * N], r[N];
	int counts[MAXP];
	for (int i = 0; i < MAXP * N; i++)
		s[i] = val(low, lrank, i);
	for (int i = 0; i < N; i++)
		r[i] = -1;
	for (int k = 0; k < MAXP; k++)
		counts[k] = block ? N : 1 + k % N;
	if (block)
		CALL(MPI_Reduce_scatter_block(s, r, N, MPI_DOUBLE, MPI_SUM, inter),
		     MPI_Ireduce_scatter_block(s, r, N, MPI_DOUBLE, MPI_SUM, inter, &q_),
		     MPI_Reduce_scatter_block_init(s, r, N, MPI_DOUBLE, MPI_SUM, inter, MPI_INFO_NULL, &q_));
	else
		CALL(MPI_Reduce_scatter(s, r, counts, MPI_DOUBLE, MPI_SUM, inter),
		     MPI_Ireduce_scatter(s, r, counts, MPI_DOUBLE, MPI_SUM, inter, &q_),
		     MPI_Reduce_scatter_init(s, r, counts, MPI_DOUBLE, MPI_SUM, inter, MPI_INFO_NULL, &q_));
	int off = 0;
	for (int k = 0; k < lrank; k++)
		off += counts[k];
	for (int i = 0; i < N; i++) {
		double want = -1;
		if (i < counts[lrank]) {
			want = 0;
			for (int k = 0; k < rsize; k++)
				want += val(!low, k, off + i);
		}
		EXPECT(block ? "Reduce_scatter_block" : "Reduce_scatter", i, r[i], want);
	}
}

/* vsum is a user operation on copies of vtype: it adds the 3 doubles each copy covers. */
static void vsum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	double *a = in, *b = inout;
	for (int c = 0; c < *len; c++)
		for (int j = 0; j < 3; j++)
			b[c * 5 + 2 * j] += a[c * 5 + 2 * j];
}

/* layouts runs the reductions whose datatype is not one kind's elements: MPI_MINLOC on
 * MPI_DOUBLE_INT in an Allreduce, and a user operation on a vector of 3 doubles with
 * stride 2 (extent 5) in a Reduce to rank 0 of the low group. */
static void layouts(void)
{
	struct { double v; int i; } s = {100 - wrank, wrank}, r = {-1, -1};
	CALL(MPI_Allreduce(&s, &r, 1, MPI_DOUBLE_INT, MPI_MINLOC, inter),
	     MPI_Iallreduce(&s, &r, 1, MPI_DOUBLE_INT, MPI_MINLOC, inter, &q_),
	     MPI_Allreduce_init(&s, &r, 1, MPI_DOUBLE_INT, MPI_MINLOC, inter, MPI_INFO_NULL, &q_));
	int top = low ? wsize - 1 : wsize / 2 - 1; /* the remote group's highest rank */
	EXPECT("MINLOC value", 0, r.v, 100 - top);
	EXPECT("MINLOC index", 0, r.i, top);
	done("Allreduce MINLOC");

	MPI_Datatype vtype;
	MPI_Op op;
	MPI_Type_vector(3, 1, 2, MPI_DOUBLE, &vtype);
	MPI_Type_commit(&vtype);
	MPI_Op_create(vsum, 1, &op);
	double in[10], out[10];
	for (int k = 0; k < 10; k++)
		in[k] = 100 * wrank + k, out[k] = -1;
	int root = rootArg(1, 0);
	CALL(MPI_Reduce(in, out, 2, vtype, op, root, inter),
	     MPI_Ireduce(in, out, 2, vtype, op, root, inter, &q_),
	     MPI_Reduce_init(in, out, 2, vtype, op, root, inter, MPI_INFO_NULL, &q_));
	for (int k = 0; k < 10; k++) {
		double want = -1;
		if (low && lrank == 0 && k % 5 != 1 && k % 5 != 3) {
			want = 0;
			for (int r = wsize / 2; r < wsize; r++)
				want += 100 * r + k;
		}
		EXPECT("Reduce with a user operation on a vector", k, out[k], want);
	}
	MPI_Op_free(&op);
	MPI_Type_free(&vtype);
	done("Reduce with a user operation on a vector");
}

/* doneRooted is done for call, from (dir "from") or to (dir "to") rank rr of group rg. */
static void doneRooted(const char *call, const char *dir, int rg, int rr)
{
	char what[64];
	snprintf(what, sizeof what, "%s %s rank %d of the %s group", call, dir, rr, rg ? "low" : "high");
	done(what);
}

/* suite runs every collective on inter, in the form form says. */
static void suite(void)
{
	CALL(MPI_Barrier(inter), MPI_Ibarrier(inter, &q_), MPI_Barrier_init(inter, MPI_INFO_NULL, &q_));
	done("Barrier");
	for (int rg = 1; rg >= 0; rg--) {
		for (int rr = 0; rr < (form && mpichBugs ? 1 : 2); rr++) {
			int gs = rg == low ? lsize : rsize; /* the root group's size */
			if (rr >= gs)
				continue;
			bcast(rg, rr);
			doneRooted("Bcast", "from", rg, rr);
			reduce(rg, rr);
			doneRooted("Reduce", "to", rg, rr);
			gather(rg, rr, 0);
			doneRooted("Gather", "to", rg, rr);
			gather(rg, rr, 1);
			doneRooted("Gatherv", "to", rg, rr);
			scatter(rg, rr, 0);
			doneRooted("Scatter", "from", rg, rr);
			scatter(rg, rr, 1);
			doneRooted("Scatterv", "from", rg, rr);
		}
	}
	allreduce();
	done("Allreduce");
	allgather(0);
	done("Allgather");
	allgather(1);
	done("Allgatherv");
	alltoall(0);
	done("Alltoall");
	alltoall(1);
	done("Alltoallv");
	reduceScatter(1);
	done("Reduce_scatter_block");
	reduceScatter(0);
	done("Reduce_scatter");
	layouts();
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	setvbuf(stdout, NULL, _IOLBF, 0);
	MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
	MPI_Comm_size(MPI_COMM_WORLD, &wsize);
	mpichBugs = argc > 1 && strcmp(argv[1], "mpich") == 0;
	if (wsize < 4 || wsize > MAXP || wsize % 2) {
		if (wrank == 0)
			fprintf(stderr, "intercheck: run with 4, 6 or 8 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	low = wrank < wsize / 2;
	MPI_Comm local;
	MPI_Comm_split(MPI_COMM_WORLD, low, wrank, &local);
	MPI_Comm_rank(local, &lrank);
	MPI_Comm_size(local, &lsize);
	MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, low ? wsize / 2 : 0, 7, &inter);
	MPI_Comm_remote_size(inter, &rsize);
	int flag;
	MPI_Comm_test_inter(inter, &flag);
	if (wrank == 0)
		printf("intercommunicator: test_inter %d, groups of %d and %d\n", flag, wsize / 2, wsize - wsize / 2);

	for (form = 0; form < 3; form++)
		suite();
	form = 0;

	MPI_Comm merged;
	MPI_Intercomm_merge(inter, !low, &merged);
	int mrank, sum, one = 1;
	MPI_Comm_rank(merged, &mrank);
	MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, merged);
	EXPECT("merged Allreduce", 0, sum, wsize);
	EXPECT("merged rank", 0, mrank, wrank);
	done("Intercomm_merge");
	MPI_Comm_free(&merged);
	MPI_Comm_free(&inter);
	MPI_Comm_free(&local);
	MPI_Finalize();
	return 0;
}
