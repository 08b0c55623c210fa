/* collcheck: the vector, nonblocking, persistent and large-count collectives. Each
 * collective runs in each of its forms: blocking, nonblocking (I), persistent (_init,
 * started twice, with new data the second time) and their large-count (_c) twins; with
 * MPI_IN_PLACE and with blocks that leave gaps where MPI allows them. Every rank checks
 * its results and aborts with a message on a wrong value; rank 0 prints one line per
 * check, the same on any library. Run with 2 to 8 ranks. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXP 8
#define BUF 1024

static int rank, size;
static MPI_Comm comm;
static MPI_Request req;

/* mpichBugs is set by the argument "mpich": Debian's MPICH 4.0.2 starts a persistent
 * Gather, Scatter or Allgather a second time with the first start's data (its
 * schedules keep it), so those run once there. */
static int mpichBugs;

/* The forms of a collective. */
enum { B, I, P, BC, IC, PC, NFORMS };
static int isI(int f) { return f == I || f == IC; }
static int isP(int f) { return f == P || f == PC; }
static int rounds(int f) { return isP(f) ? 2 : 1; }
static int roundsOK(int f) { return isP(f) && mpichBugs ? 1 : rounds(f); }

static void fail(const char *what, long i, double got, double want)
{
	fprintf(stderr, "collcheck: rank %d: %s: element %ld is %g, want %g\n", rank, what, i, got, want);
#ifndef LENIENT
	MPI_Abort(MPI_COMM_WORLD, 1);
#endif
}

#define EXPECT(what, i, got, want) do { if ((double)(got) != (double)(want)) fail(what, (long)(i), (got), (want)); } while (0)

static void ck(int rc, const char *call)
{
	if (rc != MPI_SUCCESS) {
		char s[MPI_MAX_ERROR_STRING];
		int n;
		MPI_Error_string(rc, s, &n);
		fprintf(stderr, "collcheck: rank %d: %s failed: %s\n", rank, call, s);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
}

#define WITHREQ(...) (__VA_ARGS__, &req)
#define WITHINFO(...) (__VA_ARGS__, MPI_INFO_NULL, &req)

/* RUN calls the form f of a collective: A are the int form's arguments, AC the _c
 * form's. */
#define RUN(B_, I_, P_, BC_, IC_, PC_, A, AC) do { switch (f) { \
	case B: ck(B_ A, #B_); break; \
	case I: ck(I_ WITHREQ A, #I_); break; \
	case P: ck(P_ WITHINFO A, #P_); break; \
	case BC: ck(BC_ AC, #BC_); break; \
	case IC: ck(IC_ WITHREQ AC, #IC_); break; \
	case PC: ck(PC_ WITHINFO AC, #PC_); break; \
	} } while (0)

/* finish completes round of form f: a nonblocking call by MPI_Test or MPI_Wait, a
 * persistent one started by MPI_Start or MPI_Startall. */
static void finish(int f, int round)
{
	if (isI(f)) {
		if (f == I) {
			int done = 0;
			while (!done) ck(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test");
		} else {
			ck(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait");
		}
		if (req != MPI_REQUEST_NULL) fail("a completed nonblocking request is not MPI_REQUEST_NULL", 0, 0, 0);
	}
	if (isP(f)) {
		if (round == 0) ck(MPI_Start(&req), "MPI_Start");
		else ck(MPI_Startall(1, &req), "MPI_Startall");
		ck(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait");
		if (req == MPI_REQUEST_NULL) fail("MPI_Wait freed a persistent request", 0, 0, 0);
	}
}

/* release frees a persistent request and prints the check's line. */
static void release(int f, const char *name, const char *variant)
{
	if (isP(f)) {
		ck(MPI_Request_free(&req), "MPI_Request_free");
		if (req != MPI_REQUEST_NULL) fail("MPI_Request_free left the request", 0, 0, 0);
	}
	static const char *pre[] = {"", "I", "", "", "I", ""}, *post[] = {"", "", "_init", "_c", "_c", "_init_c"};
	char full[64];
	snprintf(full, sizeof full, "MPI_%s%s%s", pre[f], name, post[f]);
	if (isI(f)) full[5] = (char)(full[5] | 0x20); /* MPI_Ibcast: the call's letter after I is lower case */
	if (rank == 0) printf("coll ok %s%s%s\n", full, *variant ? " " : "", variant);
}

/* Values: the element k that rank from sends to rank to, in round. */
static int val(int from, int to, int k, int round) { return 1000 * from + 10 * to + k + 100000 * round; }

/* The affine maps x -> s*x + b, s = 1 or -1, composed: an associative operation that
 * does not commute. An int holds b*2, plus 1 where s is -1. */
static int enc(int s, int b) { return b * 2 + (s < 0); }
static int comp(int a, int b)
{
	int sa = (a & 1) ? -1 : 1, ba = (a - (a & 1)) / 2;
	int sb = (b & 1) ? -1 : 1, bb = (b - (b & 1)) / 2;
	return enc(sa * sb, sa * bb + ba);
}
static void affine(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	(void)dt;
	for (int i = 0; i < *len; i++) ((int *)inout)[i] = comp(((int *)in)[i], ((int *)inout)[i]);
}
static MPI_Op affineOp;
/* aff is rank r's operand of element j. */
static int aff(int r, int j, int round) { return enc((r + j) % 2 ? -1 : 1, r + j + round); }
/* affAll folds aff over ranks [lo, hi). */
static int affAll(int lo, int hi, int j, int round)
{
	int v = aff(lo, j, round);
	for (int r = lo + 1; r < hi; r++) v = comp(v, aff(r, j, round));
	return v;
}

/* A pair of an int and a double: a datatype that is not one kind's elements, with a
 * commutative user operation. */
struct pair { int i; double d; };
static MPI_Datatype pairType;
static MPI_Op pairOp;
static void pairSum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	(void)dt;
	struct pair *a = in, *b = inout;
	for (int k = 0; k < *len; k++) {
		b[k].i += a[k].i;
		b[k].d += a[k].d;
	}
}

/* pairAff is a pair operation that does not commute: the affine maps on .i, the left
 * operand's .d. */
static MPI_Op pairAffOp;
static void pairAff(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	(void)dt;
	struct pair *a = in, *b = inout;
	for (int k = 0; k < *len; k++) {
		b[k].i = comp(a[k].i, b[k].i);
		b[k].d = a[k].d;
	}
}

static int ibuf[BUF], rbuf[BUF];
static double dbuf[BUF], drbuf[BUF];
static int counts[MAXP], displs[MAXP], rcounts[MAXP], rdispls[MAXP];
static MPI_Count ccounts[MAXP], crcounts[MAXP];
static MPI_Aint cdispls[MAXP], crdispls[MAXP];
static MPI_Datatype types[MAXP], rtypes[MAXP];

static void fillc(void)
{
	for (int i = 0; i < size; i++) {
		ccounts[i] = counts[i];
		cdispls[i] = displs[i];
		crcounts[i] = rcounts[i];
		crdispls[i] = rdispls[i];
	}
}

static void clear(void)
{
	for (int i = 0; i < BUF; i++) ibuf[i] = rbuf[i] = -1;
}

/* Blocks of i+1 elements for rank i, with gap elements between them. */
static void vblocks(int *c, int *d, int gap)
{
	int at = 0;
	for (int i = 0; i < size; i++) {
		c[i] = i + 1;
		d[i] = at;
		at += c[i] + gap;
	}
}

static void t_barrier(int f)
{
	if (f == B) ck(MPI_Barrier(comm), "MPI_Barrier");
	if (f == I) ck(MPI_Ibarrier(comm, &req), "MPI_Ibarrier");
	if (f == P) ck(MPI_Barrier_init(comm, MPI_INFO_NULL, &req), "MPI_Barrier_init");
	for (int round = 0; round < rounds(f); round++) finish(f, round);
	release(f, "Barrier", "");
}

static void t_bcast(int f)
{
	int root = f % size, n = 5;
	for (int round = 0; round < rounds(f); round++) {
		clear();
		for (int k = 0; k < n; k++) ibuf[k] = rank == root ? val(root, 0, k, round) : -1;
		if (round == 0) RUN(MPI_Bcast, MPI_Ibcast, MPI_Bcast_init, MPI_Bcast_c, MPI_Ibcast_c, MPI_Bcast_init_c,
			(ibuf, n, MPI_INT, root, comm), (ibuf, n, MPI_INT, root, comm));
		finish(f, round);
		for (int k = 0; k < n; k++) EXPECT("bcast", k, ibuf[k], val(root, 0, k, round));
	}
	release(f, "Bcast", "");
}

static void t_gather(int f, int inplace)
{
	int root = (f + 1) % size, n = 3;
	for (int round = 0; round < roundsOK(f); round++) {
		clear();
		for (int k = 0; k < n; k++) ibuf[k] = val(rank, root, k, round);
		if (inplace && rank == root)
			for (int k = 0; k < n; k++) rbuf[root * n + k] = val(rank, root, k, round);
		const void *s = inplace && rank == root ? MPI_IN_PLACE : ibuf;
		if (round == 0) RUN(MPI_Gather, MPI_Igather, MPI_Gather_init, MPI_Gather_c, MPI_Igather_c, MPI_Gather_init_c,
			(s, n, MPI_INT, rbuf, n, MPI_INT, root, comm), (s, n, MPI_INT, rbuf, n, MPI_INT, root, comm));
		finish(f, round);
		if (rank == root)
			for (int i = 0; i < size * n; i++) EXPECT("gather", i, rbuf[i], val(i / n, root, i % n, round));
	}
	release(f, "Gather", inplace ? "in place" : "");
}

static void t_scatter(int f, int inplace)
{
	int root = (f + 2) % size, n = 2;
	for (int round = 0; round < roundsOK(f); round++) {
		clear();
		if (rank == root)
			for (int i = 0; i < size * n; i++) ibuf[i] = val(root, i / n, i % n, round);
		void *r = inplace && rank == root ? MPI_IN_PLACE : rbuf;
		if (round == 0) RUN(MPI_Scatter, MPI_Iscatter, MPI_Scatter_init, MPI_Scatter_c, MPI_Iscatter_c, MPI_Scatter_init_c,
			(ibuf, n, MPI_INT, r, n, MPI_INT, root, comm), (ibuf, n, MPI_INT, r, n, MPI_INT, root, comm));
		finish(f, round);
		int *got = inplace && rank == root ? ibuf + root * n : rbuf;
		for (int k = 0; k < n; k++) EXPECT("scatter", k, got[k], val(root, rank, k, round));
	}
	release(f, "Scatter", inplace ? "in place" : "");
}

static void t_allgather(int f, int inplace)
{
	int n = 2;
	for (int round = 0; round < roundsOK(f); round++) {
		clear();
		for (int k = 0; k < n; k++) ibuf[k] = val(rank, 0, k, round);
		if (inplace)
			for (int k = 0; k < n; k++) rbuf[rank * n + k] = val(rank, 0, k, round);
		const void *s = inplace ? MPI_IN_PLACE : ibuf;
		if (round == 0) RUN(MPI_Allgather, MPI_Iallgather, MPI_Allgather_init, MPI_Allgather_c, MPI_Iallgather_c, MPI_Allgather_init_c,
			(s, n, MPI_INT, rbuf, n, MPI_INT, comm), (s, n, MPI_INT, rbuf, n, MPI_INT, comm));
		finish(f, round);
		for (int i = 0; i < size * n; i++) EXPECT("allgather", i, rbuf[i], val(i / n, 0, i % n, round));
	}
	release(f, "Allgather", inplace ? "in place" : "");
}

static void t_alltoall(int f, int inplace)
{
	int n = 2;
	for (int round = 0; round < rounds(f); round++) {
		clear();
		int *src = inplace ? rbuf : ibuf;
		for (int i = 0; i < size * n; i++) src[i] = val(rank, i / n, i % n, round);
		const void *s = inplace ? MPI_IN_PLACE : ibuf;
		if (round == 0) RUN(MPI_Alltoall, MPI_Ialltoall, MPI_Alltoall_init, MPI_Alltoall_c, MPI_Ialltoall_c, MPI_Alltoall_init_c,
			(s, n, MPI_INT, rbuf, n, MPI_INT, comm), (s, n, MPI_INT, rbuf, n, MPI_INT, comm));
		finish(f, round);
		for (int i = 0; i < size * n; i++) EXPECT("alltoall", i, rbuf[i], val(i / n, rank, i % n, round));
	}
	release(f, "Alltoall", inplace ? "in place" : "");
}

static void t_gatherv(int f, int inplace, int gap)
{
	int root = (f + 3) % size;
	vblocks(counts, displs, gap);
	fillc();
	int n = counts[rank];
	for (int round = 0; round < rounds(f); round++) {
		clear();
		for (int k = 0; k < n; k++) ibuf[k] = val(rank, root, k, round);
		if (inplace && rank == root)
			for (int k = 0; k < n; k++) rbuf[displs[root] + k] = val(rank, root, k, round);
		const void *s = inplace && rank == root ? MPI_IN_PLACE : ibuf;
		if (round == 0) RUN(MPI_Gatherv, MPI_Igatherv, MPI_Gatherv_init, MPI_Gatherv_c, MPI_Igatherv_c, MPI_Gatherv_init_c,
			(s, n, MPI_INT, rbuf, counts, displs, MPI_INT, root, comm),
			(s, n, MPI_INT, rbuf, ccounts, cdispls, MPI_INT, root, comm));
		finish(f, round);
		if (rank == root)
			for (int i = 0; i < size; i++) {
				for (int k = 0; k < counts[i]; k++) EXPECT("gatherv", displs[i] + k, rbuf[displs[i] + k], val(i, root, k, round));
				for (int k = counts[i]; k < counts[i] + gap; k++) EXPECT("gatherv gap", displs[i] + k, rbuf[displs[i] + k], -1);
			}
	}
	release(f, "Gatherv", inplace ? (gap ? "in place, gaps" : "in place") : (gap ? "gaps" : ""));
}

static void t_scatterv(int f, int inplace, int gap)
{
	int root = (f + 1) % size;
	vblocks(counts, displs, gap);
	fillc();
	int n = counts[rank];
	for (int round = 0; round < rounds(f); round++) {
		clear();
		if (rank == root)
			for (int i = 0; i < size; i++)
				for (int k = 0; k < counts[i]; k++) ibuf[displs[i] + k] = val(root, i, k, round);
		void *r = inplace && rank == root ? MPI_IN_PLACE : rbuf;
		if (round == 0) RUN(MPI_Scatterv, MPI_Iscatterv, MPI_Scatterv_init, MPI_Scatterv_c, MPI_Iscatterv_c, MPI_Scatterv_init_c,
			(ibuf, counts, displs, MPI_INT, r, n, MPI_INT, root, comm),
			(ibuf, ccounts, cdispls, MPI_INT, r, n, MPI_INT, root, comm));
		finish(f, round);
		int *got = inplace && rank == root ? ibuf + displs[root] : rbuf;
		for (int k = 0; k < n; k++) EXPECT("scatterv", k, got[k], val(root, rank, k, round));
		if (!(inplace && rank == root)) EXPECT("scatterv past the block", n, rbuf[n], -1);
	}
	release(f, "Scatterv", inplace ? (gap ? "in place, gaps" : "in place") : (gap ? "gaps" : ""));
}

/* t_allgatherv receives into MPI_Type_contiguous(2, MPI_INT) blocks: each rank sends
 * 2*(r+1) ints. */
static void t_allgatherv(int f, int inplace, int gap)
{
	MPI_Datatype two;
	MPI_Type_contiguous(2, MPI_INT, &two);
	MPI_Type_commit(&two);
	vblocks(counts, displs, gap);
	fillc();
	int n = 2 * counts[rank];
	for (int round = 0; round < rounds(f); round++) {
		clear();
		for (int k = 0; k < n; k++) ibuf[k] = val(rank, 0, k, round);
		if (inplace)
			for (int k = 0; k < n; k++) rbuf[2 * displs[rank] + k] = val(rank, 0, k, round);
		const void *s = inplace ? MPI_IN_PLACE : ibuf;
		if (round == 0) RUN(MPI_Allgatherv, MPI_Iallgatherv, MPI_Allgatherv_init, MPI_Allgatherv_c, MPI_Iallgatherv_c, MPI_Allgatherv_init_c,
			(s, n, MPI_INT, rbuf, counts, displs, two, comm),
			(s, n, MPI_INT, rbuf, ccounts, cdispls, two, comm));
		finish(f, round);
		for (int i = 0; i < size; i++) {
			for (int k = 0; k < 2 * counts[i]; k++) EXPECT("allgatherv", 2 * displs[i] + k, rbuf[2 * displs[i] + k], val(i, 0, k, round));
			for (int k = 2 * counts[i]; k < 2 * (counts[i] + gap); k++) EXPECT("allgatherv gap", 2 * displs[i] + k, rbuf[2 * displs[i] + k], -1);
		}
	}
	MPI_Type_free(&two);
	release(f, "Allgatherv", inplace ? (gap ? "in place, gaps" : "in place") : (gap ? "gaps" : ""));
}

/* t_alltoallv: rank r sends r+d+1 elements to rank d. */
static void t_alltoallv(int f, int inplace, int gap)
{
	int sat = 0, rat = 0;
	for (int i = 0; i < size; i++) {
		counts[i] = rank + i + 1;
		displs[i] = sat;
		sat += counts[i] + gap;
		rcounts[i] = i + rank + 1;
		rdispls[i] = rat;
		rat += rcounts[i] + 2 * gap;
	}
	fillc();
	for (int round = 0; round < rounds(f); round++) {
		clear();
		int *src = inplace ? rbuf : ibuf;
		int *sd = inplace ? rdispls : displs;
		for (int d = 0; d < size; d++)
			for (int k = 0; k < counts[d]; k++) src[sd[d] + k] = val(rank, d, k, round);
		const void *s = inplace ? MPI_IN_PLACE : ibuf;
		if (round == 0) RUN(MPI_Alltoallv, MPI_Ialltoallv, MPI_Alltoallv_init, MPI_Alltoallv_c, MPI_Ialltoallv_c, MPI_Alltoallv_init_c,
			(s, counts, displs, MPI_INT, rbuf, rcounts, rdispls, MPI_INT, comm),
			(s, ccounts, cdispls, MPI_INT, rbuf, crcounts, crdispls, MPI_INT, comm));
		finish(f, round);
		for (int i = 0; i < size; i++) {
			for (int k = 0; k < rcounts[i]; k++) EXPECT("alltoallv", rdispls[i] + k, rbuf[rdispls[i] + k], val(i, rank, k, round));
			if (!inplace)
				for (int k = rcounts[i]; k < rcounts[i] + 2 * gap; k++) EXPECT("alltoallv gap", rdispls[i] + k, rbuf[rdispls[i] + k], -1);
		}
	}
	release(f, "Alltoallv", inplace ? (gap ? "in place, gaps" : "in place") : (gap ? "gaps" : ""));
}

/* t_alltoallw: rank r sends r+d+1 elements to rank d, doubles to an odd rank and ints to
 * an even one, at byte displacements with 8-byte gaps; in place, every block is ints. */
static void t_alltoallw(int f, int inplace)
{
	static char sb[8 * BUF], rb[8 * BUF];
	int sat = 0, rat = 0;
	for (int i = 0; i < size; i++) {
		types[i] = (i % 2 && !inplace) ? MPI_DOUBLE : MPI_INT;
		rtypes[i] = (rank % 2 && !inplace) ? MPI_DOUBLE : MPI_INT;
		counts[i] = rank + i + 1;
		displs[i] = sat;
		sat = (sat + counts[i] * (types[i] == MPI_DOUBLE ? 8 : 4) + 15) & ~7;
		rcounts[i] = i + rank + 1;
		rdispls[i] = rat;
		rat = (rat + rcounts[i] * (rtypes[i] == MPI_DOUBLE ? 8 : 4) + 15) & ~7;
	}
	fillc();
	for (int round = 0; round < rounds(f); round++) {
		memset(sb, 0, sizeof sb);
		memset(rb, 0xff, sizeof rb);
		char *src = inplace ? rb : sb;
		MPI_Datatype *st = inplace ? rtypes : types;
		int *sd = inplace ? rdispls : displs;
		for (int d = 0; d < size; d++)
			for (int k = 0; k < counts[d]; k++) {
				if (st[d] == MPI_DOUBLE) ((double *)(src + sd[d]))[k] = val(rank, d, k, round);
				else ((int *)(src + sd[d]))[k] = val(rank, d, k, round);
			}
		const void *s = inplace ? MPI_IN_PLACE : sb;
		if (round == 0) RUN(MPI_Alltoallw, MPI_Ialltoallw, MPI_Alltoallw_init, MPI_Alltoallw_c, MPI_Ialltoallw_c, MPI_Alltoallw_init_c,
			(s, counts, displs, types, rb, rcounts, rdispls, rtypes, comm),
			(s, ccounts, cdispls, types, rb, crcounts, crdispls, rtypes, comm));
		finish(f, round);
		for (int i = 0; i < size; i++)
			for (int k = 0; k < rcounts[i]; k++) {
				double got = rtypes[i] == MPI_DOUBLE ? ((double *)(rb + rdispls[i]))[k] : ((int *)(rb + rdispls[i]))[k];
				EXPECT("alltoallw", rdispls[i] + k, got, val(i, rank, k, round));
			}
	}
	release(f, "Alltoallw", inplace ? "in place" : "");
}

/* The reductions run the affine operation on ints, which does not commute. */
enum { ALLREDUCE, REDUCE, SCAN, EXSCAN };

static void t_reduce(int f, int which, int inplace)
{
	int n = 3, root = (f + 1) % size;
	static const char *names[] = {"Allreduce", "Reduce", "Scan", "Exscan"};
	for (int round = 0; round < rounds(f); round++) {
		clear();
		for (int j = 0; j < n; j++) ibuf[j] = rbuf[j] = aff(rank, j, round);
		const void *s = inplace && (which != REDUCE || rank == root) ? MPI_IN_PLACE : ibuf;
		if (round == 0) switch (which) {
			case ALLREDUCE:
				RUN(MPI_Allreduce, MPI_Iallreduce, MPI_Allreduce_init, MPI_Allreduce_c, MPI_Iallreduce_c, MPI_Allreduce_init_c,
					(s, rbuf, n, MPI_INT, affineOp, comm), (s, rbuf, n, MPI_INT, affineOp, comm));
				break;
			case REDUCE:
				RUN(MPI_Reduce, MPI_Ireduce, MPI_Reduce_init, MPI_Reduce_c, MPI_Ireduce_c, MPI_Reduce_init_c,
					(s, rbuf, n, MPI_INT, affineOp, root, comm), (s, rbuf, n, MPI_INT, affineOp, root, comm));
				break;
			case SCAN:
				RUN(MPI_Scan, MPI_Iscan, MPI_Scan_init, MPI_Scan_c, MPI_Iscan_c, MPI_Scan_init_c,
					(s, rbuf, n, MPI_INT, affineOp, comm), (s, rbuf, n, MPI_INT, affineOp, comm));
				break;
			case EXSCAN:
				RUN(MPI_Exscan, MPI_Iexscan, MPI_Exscan_init, MPI_Exscan_c, MPI_Iexscan_c, MPI_Exscan_init_c,
					(s, rbuf, n, MPI_INT, affineOp, comm), (s, rbuf, n, MPI_INT, affineOp, comm));
				break;
			}
		finish(f, round);
		for (int j = 0; j < n; j++) switch (which) {
			case ALLREDUCE: EXPECT("allreduce", j, rbuf[j], affAll(0, size, j, round)); break;
			case REDUCE: if (rank == root) EXPECT("reduce", j, rbuf[j], affAll(0, size, j, round)); break;
			case SCAN: EXPECT("scan", j, rbuf[j], affAll(0, rank + 1, j, round)); break;
			case EXSCAN: if (rank > 0) EXPECT("exscan", j, rbuf[j], affAll(0, rank, j, round)); break;
			}
	}
	release(f, names[which], inplace ? "in place" : "");
}

/* t_reducePairs reduces the struct pair datatype with a user operation: Allreduce and
 * Reduce, whose typed forms take such a datatype. With nc the operation does not
 * commute. */
static void t_reducePairs(int f, int which, int nc)
{
	static struct pair in[4], out[4];
	int n = 4, root = f % size;
	MPI_Op op = nc ? pairAffOp : pairOp;
	for (int round = 0; round < rounds(f); round++) {
		for (int k = 0; k < n; k++) {
			in[k].i = nc ? aff(rank, k, round) : rank + k + round;
			in[k].d = 0.5 * (rank + k);
			out[k].i = -1;
			out[k].d = -1;
		}
		if (round == 0) {
			if (which == ALLREDUCE)
				RUN(MPI_Allreduce, MPI_Iallreduce, MPI_Allreduce_init, MPI_Allreduce_c, MPI_Iallreduce_c, MPI_Allreduce_init_c,
					(in, out, n, pairType, op, comm), (in, out, n, pairType, op, comm));
			else
				RUN(MPI_Reduce, MPI_Ireduce, MPI_Reduce_init, MPI_Reduce_c, MPI_Ireduce_c, MPI_Reduce_init_c,
					(in, out, n, pairType, op, root, comm), (in, out, n, pairType, op, root, comm));
		}
		finish(f, round);
		if (which == ALLREDUCE || rank == root)
			for (int k = 0; k < n; k++) {
				if (nc) {
					EXPECT("pair reduction .i", k, out[k].i, affAll(0, size, k, round));
					EXPECT("pair reduction .d", k, out[k].d, 0.5 * k);
					continue;
				}
				EXPECT("pair reduction .i", k, out[k].i, size * (k + round) + size * (size - 1) / 2);
				EXPECT("pair reduction .d", k, out[k].d, 0.5 * (size * k + size * (size - 1) / 2));
			}
	}
	release(f, which == ALLREDUCE ? "Allreduce" : "Reduce", nc ? "struct pair, user op, not commutative" : "struct pair, user op");
}

/* t_reduceScatter: rank i's block is i+1 ints, combined with the affine operation. */
static void t_reduceScatter(int f, int inplace)
{
	vblocks(counts, displs, 0);
	fillc();
	int total = displs[size - 1] + counts[size - 1];
	for (int round = 0; round < rounds(f); round++) {
		clear();
		int *src = inplace ? rbuf : ibuf;
		for (int j = 0; j < total; j++) src[j] = aff(rank, j, round);
		const void *s = inplace ? MPI_IN_PLACE : ibuf;
		if (round == 0) RUN(MPI_Reduce_scatter, MPI_Ireduce_scatter, MPI_Reduce_scatter_init, MPI_Reduce_scatter_c, MPI_Ireduce_scatter_c, MPI_Reduce_scatter_init_c,
			(s, rbuf, counts, MPI_INT, affineOp, comm), (s, rbuf, ccounts, MPI_INT, affineOp, comm));
		finish(f, round);
		for (int k = 0; k < counts[rank]; k++) EXPECT("reduce_scatter", k, rbuf[k], affAll(0, size, displs[rank] + k, round));
	}
	release(f, "Reduce_scatter", inplace ? "in place" : "");
}

/* t_reduceScatterBlock: blocks of 2 doubles, MPI_MAX. */
static void t_reduceScatterBlock(int f, int inplace)
{
	int n = 2;
	for (int round = 0; round < rounds(f); round++) {
		double *src = inplace ? drbuf : dbuf;
		for (int j = 0; j < size * n; j++) src[j] = (j * 7 + rank * 3) % 11 + round;
		const void *s = inplace ? MPI_IN_PLACE : dbuf;
		if (round == 0) RUN(MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, MPI_Reduce_scatter_block_init,
			MPI_Reduce_scatter_block_c, MPI_Ireduce_scatter_block_c, MPI_Reduce_scatter_block_init_c,
			(s, drbuf, n, MPI_DOUBLE, MPI_MAX, comm), (s, drbuf, n, MPI_DOUBLE, MPI_MAX, comm));
		finish(f, round);
		for (int k = 0; k < n; k++) {
			int j = rank * n + k;
			double want = 0;
			for (int r = 0; r < size; r++)
				if ((j * 7 + r * 3) % 11 + round > want) want = (j * 7 + r * 3) % 11 + round;
			EXPECT("reduce_scatter_block", k, drbuf[k], want);
		}
	}
	release(f, "Reduce_scatter_block", inplace ? "in place" : "");
}

static void t_reduceLocal(int c)
{
	int in[4], io[4];
	for (int k = 0; k < 4; k++) in[k] = aff(0, k, 0), io[k] = aff(1, k, 0);
	if (c) ck(MPI_Reduce_local_c(in, io, (MPI_Count)4, MPI_INT, affineOp), "MPI_Reduce_local_c");
	else ck(MPI_Reduce_local(in, io, 4, MPI_INT, affineOp), "MPI_Reduce_local");
	for (int k = 0; k < 4; k++) EXPECT("reduce_local affine", k, io[k], comp(aff(0, k, 0), aff(1, k, 0)));
	double a[3] = {1, 2, 3}, b[3] = {10, 20, 30};
	ck(MPI_Reduce_local(a, b, 3, MPI_DOUBLE, MPI_PROD), "MPI_Reduce_local");
	for (int k = 0; k < 3; k++) EXPECT("reduce_local prod", k, b[k], 10.0 * (k + 1) * (k + 1));
	struct pair p[2] = {{1, 0.5}, {2, 1.5}}, q[2] = {{10, 1}, {20, 2}};
	ck(MPI_Reduce_local(p, q, 2, pairType, pairOp), "MPI_Reduce_local");
	EXPECT("reduce_local pair", 0, q[0].i + q[1].i, 33);
	EXPECT("reduce_local pair", 1, q[0].d + q[1].d, 5);
	if (rank == 0) printf("coll ok MPI_Reduce_local%s\n", c ? "_c" : "");
}

static void t_commutative(void)
{
	int c1 = -1, c2 = -1, c3 = -1;
	ck(MPI_Op_commutative(MPI_SUM, &c1), "MPI_Op_commutative");
	ck(MPI_Op_commutative(affineOp, &c2), "MPI_Op_commutative");
	ck(MPI_Op_commutative(pairOp, &c3), "MPI_Op_commutative");
	if (rank == 0) printf("coll ok MPI_Op_commutative: sum %d, affine %d, pair %d\n", c1, c2, c3);
}

/* t_many has several nonblocking and persistent calls outstanding at once. */
static void t_many(void)
{
	MPI_Request rs[4];
	int b = rank == 0 ? 7 : 0, sum = 0, all[MAXP];
	ck(MPI_Ibcast(&b, 1, MPI_INT, 0, comm, &rs[0]), "MPI_Ibcast");
	ck(MPI_Iallreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, comm, &rs[1]), "MPI_Iallreduce");
	ck(MPI_Ibarrier(comm, &rs[2]), "MPI_Ibarrier");
	ck(MPI_Iallgather(&rank, 1, MPI_INT, all, 1, MPI_INT, comm, &rs[3]), "MPI_Iallgather");
	MPI_Status sts[4];
	ck(MPI_Waitall(4, rs, sts), "MPI_Waitall");
	EXPECT("many: bcast", 0, b, 7);
	EXPECT("many: allreduce", 0, sum, size * (size - 1) / 2);
	for (int i = 0; i < size; i++) EXPECT("many: allgather", i, all[i], i);
	int x, y, z[MAXP];
	ck(MPI_Bcast_init(&x, 1, MPI_INT, size - 1, comm, MPI_INFO_NULL, &rs[0]), "MPI_Bcast_init");
	ck(MPI_Allreduce_init(&x, &y, 1, MPI_INT, MPI_MAX, comm, MPI_INFO_NULL, &rs[1]), "MPI_Allreduce_init");
	ck(MPI_Alltoall_init(all, 1, MPI_INT, z, 1, MPI_INT, comm, MPI_INFO_NULL, &rs[2]), "MPI_Alltoall_init");
	for (int round = 0; round < 3; round++) {
		x = rank == size - 1 ? 40 + round : -1;
		for (int i = 0; i < size; i++) all[i] = 100 * rank + i + round;
		/* The bcast must end before the allreduce reads x: start them apart. */
		ck(MPI_Startall(1, rs), "MPI_Startall");
		ck(MPI_Wait(&rs[0], MPI_STATUS_IGNORE), "MPI_Wait");
		ck(MPI_Startall(2, rs + 1), "MPI_Startall");
		ck(MPI_Waitall(2, rs + 1, sts), "MPI_Waitall");
		EXPECT("many: bcast_init", round, x, 40 + round);
		EXPECT("many: allreduce_init", round, y, 40 + round);
		for (int i = 0; i < size; i++) EXPECT("many: alltoall_init", i, z[i], 100 * i + rank + round);
	}
	for (int i = 0; i < 3; i++) ck(MPI_Request_free(&rs[i]), "MPI_Request_free");
	if (rank == 0) printf("coll ok many outstanding\n");
}

static void say(const char *what, int rc)
{
	int class;
	MPI_Error_class(rc, &class);
	if (rank == 0) printf("error %s: class %d\n", what, class);
}

/* t_errors makes calls that every rank finds wrong alike, under MPI_ERRORS_RETURN. */
static void t_errors(void)
{
	MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Request r = MPI_REQUEST_NULL;
	int x[MAXP * 4];
	say("MPI_Ibcast with root = size", MPI_Ibcast(x, 1, MPI_INT, size, comm, &r));
	say("MPI_Iallreduce with MPI_OP_NULL", MPI_Iallreduce(x, x + 8, 1, MPI_INT, MPI_OP_NULL, comm, &r));
	say("MPI_Bcast_init with MPI_DATATYPE_NULL", MPI_Bcast_init(x, 1, MPI_DATATYPE_NULL, 0, comm, MPI_INFO_NULL, &r));
	for (int i = 0; i < size; i++) counts[i] = -1, displs[i] = 0;
	say("MPI_Alltoallv with counts -1", MPI_Alltoallv(x, counts, displs, MPI_INT, x + 16, counts, displs, MPI_INT, comm));
	say("MPI_Igatherv with root -5", MPI_Igatherv(x, 1, MPI_INT, x + 8, counts, displs, MPI_INT, -5, comm, &r));
	MPI_Request null = MPI_REQUEST_NULL;
	say("MPI_Start on MPI_REQUEST_NULL", MPI_Start(&null));
	int c;
	say("MPI_Op_commutative of MPI_OP_NULL", MPI_Op_commutative(MPI_OP_NULL, &c));
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size > MAXP) {
		if (rank == 0) fprintf(stderr, "collcheck: run with at most %d ranks\n", MAXP);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	mpichBugs = argc > 1 && strcmp(argv[1], "mpich") == 0;
	MPI_Comm_dup(MPI_COMM_WORLD, &comm);
	MPI_Op_create(affine, 0, &affineOp);
	MPI_Op_create(pairSum, 1, &pairOp);
	MPI_Op_create(pairAff, 0, &pairAffOp);
	struct pair pp;
	int bl[2] = {1, 1};
	MPI_Aint disp[2] = {(char *)&pp.i - (char *)&pp, (char *)&pp.d - (char *)&pp};
	MPI_Datatype mem[2] = {MPI_INT, MPI_DOUBLE}, st;
	MPI_Type_create_struct(2, bl, disp, mem, &st);
	MPI_Type_create_resized(st, 0, sizeof(struct pair), &pairType);
	MPI_Type_commit(&pairType);
	MPI_Type_free(&st);

	for (int f = B; f <= P; f++) t_barrier(f);
	for (int f = 0; f < NFORMS; f++) {
		t_bcast(f);
		for (int inplace = 0; inplace < 2; inplace++) {
			t_gather(f, inplace);
			t_scatter(f, inplace);
			t_allgather(f, inplace);
			t_alltoall(f, inplace);
			for (int gap = 0; gap < 2; gap++) {
				t_gatherv(f, inplace, gap);
				t_scatterv(f, inplace, gap);
				/* An in-place persistent Allgatherv whose blocks leave gaps is not
				 * supported by gorma's library (docs/abi.md). */
				if (!(inplace && gap && isP(f))) t_allgatherv(f, inplace, gap);
				t_alltoallv(f, inplace, gap);
			}
			t_alltoallw(f, inplace);
			for (int which = ALLREDUCE; which <= EXSCAN; which++) t_reduce(f, which, inplace);
			t_reduceScatter(f, inplace);
			t_reduceScatterBlock(f, inplace);
		}
		for (int nc = 0; nc < 2; nc++) {
			t_reducePairs(f, ALLREDUCE, nc);
			t_reducePairs(f, REDUCE, nc);
		}
	}
	t_reduceLocal(0);
	t_reduceLocal(1);
	t_commutative();
	t_many();
	t_errors();

	MPI_Op_free(&affineOp);
	MPI_Op_free(&pairOp);
	MPI_Op_free(&pairAffOp);
	MPI_Type_free(&pairType);
	MPI_Comm_free(&comm);
	MPI_Finalize();
	if (rank == 0) printf("coll done\n");
	return 0;
}
