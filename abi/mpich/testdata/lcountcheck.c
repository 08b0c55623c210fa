/* lcountcheck: the large-count calls (_c) of one-sided communication, windows,
 * neighbourhood collectives, datatype constructors and MPI_Op_create_c; the status
 * conversions between C, Fortran and Fortran 2008; MPI_DUP_FN; and MPICH's extended
 * generalized requests (MPIX_Grequest_*). Run at 2 ranks on one host; with the
 * argument "fixed", the checks whose answers are gorma's own and the functions that
 * MPICH's libmpich lacks (see lcount_test.go).
 * Each check aborts with a message on a wrong value; the lines printed are the same
 * on every MPI library. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* MPICH 4.0.2's libmpich.so.12 lacks MPI_DUP_FN (mpi.h makes the name MPIR_Dup_fn)
 * and the Fortran 2008 status conversions, which mpi_proto.h declares: the checks of
 * "fixed" find them at run time. */
typedef int(dup_fn)(MPI_Comm, int, void *, void *, void *, int *);
typedef int(conv_fn)(const void *, void *);

static void *need(const char *name)
{
	void *f = dlsym(RTLD_DEFAULT, name);
	if (f == NULL) {
		fprintf(stderr, "%s is not defined\n", name);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	return f;
}

static int rank, size;

#define CHECK(cond, ...)                                                        \
	do {                                                                    \
		if (!(cond)) {                                                  \
			fprintf(stderr, "rank %d: line %d: ", rank, __LINE__);  \
			fprintf(stderr, __VA_ARGS__);                           \
			fprintf(stderr, "\n");                                  \
			MPI_Abort(MPI_COMM_WORLD, 1);                           \
		}                                                               \
	} while (0)
#define OK(call) CHECK((call) == MPI_SUCCESS, "%s failed", #call)

static void say(const char *what)
{
	printf("rank %d: %s ok\n", rank, what);
}

static int class_of(int rc)
{
	int c;
	MPI_Error_class(rc, &c);
	return c;
}

/* One-sided: fence epochs with the blocking calls, a lock_all epoch with the request
 * forms, and the three window constructors. */
static void rma(void)
{
	int peer = 1 - rank;
	int buf[8], org[4], res[4];
	MPI_Win w;
	for (int i = 0; i < 8; i++)
		buf[i] = 100 * rank + i;
	OK(MPI_Win_create_c(buf, (MPI_Aint)sizeof buf, (MPI_Aint)sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w));
	int *unit, flag;
	OK(MPI_Win_get_attr(w, MPI_WIN_DISP_UNIT, &unit, &flag));
	CHECK(flag && *unit == (int)sizeof(int), "disp_unit %d", *unit);

	for (int i = 0; i < 4; i++)
		org[i] = 1000 * (rank + 1) + i;
	OK(MPI_Win_fence(0, w));
	OK(MPI_Put_c(org, 2, MPI_INT, peer, 1, 2, MPI_INT, w)); /* peer's buf[1..2] */
	OK(MPI_Win_fence(0, w));
	CHECK(buf[1] == 1000 * (peer + 1) && buf[2] == 1000 * (peer + 1) + 1, "put: %d %d", buf[1], buf[2]);
	OK(MPI_Get_c(res, 3, MPI_INT, peer, 4, 3, MPI_INT, w));
	OK(MPI_Win_fence(0, w));
	for (int i = 0; i < 3; i++)
		CHECK(res[i] == 100 * peer + 4 + i, "get[%d] = %d", i, res[i]);
	OK(MPI_Accumulate_c(org, 2, MPI_INT, peer, 6, 2, MPI_INT, MPI_SUM, w));
	OK(MPI_Win_fence(0, w));
	CHECK(buf[6] == 100 * rank + 6 + 1000 * (peer + 1), "accumulate: %d", buf[6]);
	OK(MPI_Get_accumulate_c(org, 1, MPI_INT, res, 1, MPI_INT, peer, 0, 1, MPI_INT, MPI_SUM, w));
	OK(MPI_Win_fence(0, w));
	CHECK(res[0] == 100 * peer, "get_accumulate fetched %d", res[0]);
	CHECK(buf[0] == 100 * rank + 1000 * (peer + 1), "get_accumulate left %d", buf[0]);
	OK(MPI_Win_fence(0, w));
	say("MPI_Put_c MPI_Get_c MPI_Accumulate_c MPI_Get_accumulate_c");

	MPI_Request rq[3];
	OK(MPI_Win_lock_all(0, w));
	OK(MPI_Rput_c(org + 2, 1, MPI_INT, peer, 3, 1, MPI_INT, w, &rq[0]));
	OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
	OK(MPI_Win_flush(peer, w));
	OK(MPI_Raccumulate_c(org, 1, MPI_INT, peer, 5, 1, MPI_INT, MPI_MAX, w, &rq[1]));
	OK(MPI_Wait(&rq[1], MPI_STATUS_IGNORE));
	OK(MPI_Win_flush(peer, w));
	OK(MPI_Win_unlock_all(w));
	OK(MPI_Barrier(MPI_COMM_WORLD));
	OK(MPI_Win_lock_all(0, w));
	OK(MPI_Rget_c(res, 3, MPI_INT, peer, 3, 3, MPI_INT, w, &rq[2]));
	OK(MPI_Wait(&rq[2], MPI_STATUS_IGNORE));
	OK(MPI_Win_unlock_all(w));
	CHECK(res[0] == 1000 * (rank + 1) + 2, "rput then rget: %d", res[0]);
	CHECK(res[2] == 1000 * (rank + 1), "raccumulate max then rget: %d", res[2]);
	OK(MPI_Barrier(MPI_COMM_WORLD));
	say("MPI_Rput_c MPI_Rget_c MPI_Raccumulate_c");
	OK(MPI_Win_free(&w));

	int *base;
	OK(MPI_Win_allocate_c(4 * sizeof(int), 2, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w));
	OK(MPI_Win_get_attr(w, MPI_WIN_DISP_UNIT, &unit, &flag));
	CHECK(flag && *unit == 2, "allocate_c disp_unit %d", *unit);
	base[0] = rank;
	OK(MPI_Win_fence(0, w));
	OK(MPI_Get_c(res, 1, MPI_INT, peer, 0, 1, MPI_INT, w));
	OK(MPI_Win_fence(0, w));
	CHECK(res[0] == peer, "allocate_c get %d", res[0]);
	OK(MPI_Win_free(&w));
	say("MPI_Win_allocate_c");

	OK(MPI_Win_allocate_shared_c((rank + 1) * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w));
	((long *)base)[0] = 7 + rank;
	OK(MPI_Win_fence(0, w));
	MPI_Aint qsize, qunit;
	long *qbase;
	OK(MPI_Win_shared_query_c(w, peer, &qsize, &qunit, &qbase));
	CHECK(qsize == (MPI_Aint)((peer + 1) * sizeof(long)) && qunit == (MPI_Aint)sizeof(long), "shared_query_c: size %ld unit %ld", (long)qsize, (long)qunit);
	CHECK(qbase[0] == 7 + peer, "shared_query_c: peer's memory holds %ld", qbase[0]);
	OK(MPI_Win_fence(0, w));
	OK(MPI_Win_free(&w));
	say("MPI_Win_allocate_shared_c MPI_Win_shared_query_c");
}

/* Neighbourhood collectives over a graph in which each rank's neighbours are itself
 * (slot 0) and the other rank (slot 1). Each collective runs blocking, nonblocking and
 * persistent. */
static void neighbours(void)
{
	MPI_Comm ring;
	int peer = 1 - rank, hood[2] = {rank, peer};
	OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, hood, MPI_UNWEIGHTED, 2, hood, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &ring));
	for (int mode = 0; mode < 3; mode++) {
		MPI_Request rq = MPI_REQUEST_NULL;
		int s[4], r[6];
		MPI_Count cs[2] = {1, 2}, cr[2] = {1, 2};
		MPI_Aint ds[2] = {0, 2}, dr[2] = {3, 0};
		for (int i = 0; i < 4; i++)
			s[i] = 10 * rank + i;

		/* allgather_c: one int to each neighbour. */
		memset(r, -1, sizeof r);
		if (mode == 0)
			OK(MPI_Neighbor_allgather_c(s, 1, MPI_INT, r, 1, MPI_INT, ring));
		else if (mode == 1)
			OK(MPI_Ineighbor_allgather_c(s, 1, MPI_INT, r, 1, MPI_INT, ring, &rq));
		else
			OK(MPI_Neighbor_allgather_init_c(s, 1, MPI_INT, r, 1, MPI_INT, ring, MPI_INFO_NULL, &rq));
		if (mode == 2)
			OK(MPI_Start(&rq));
		OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
		if (mode == 2)
			OK(MPI_Request_free(&rq));
		CHECK(r[0] == 10 * rank && r[1] == 10 * peer, "allgather_c mode %d: %d %d", mode, r[0], r[1]);

		/* allgatherv_c: one int, into blocks at 3 and 0. */
		memset(r, -1, sizeof r);
		MPI_Count one[2] = {1, 1};
		if (mode == 0)
			OK(MPI_Neighbor_allgatherv_c(s, 1, MPI_INT, r, one, dr, MPI_INT, ring));
		else if (mode == 1)
			OK(MPI_Ineighbor_allgatherv_c(s, 1, MPI_INT, r, one, dr, MPI_INT, ring, &rq));
		else
			OK(MPI_Neighbor_allgatherv_init_c(s, 1, MPI_INT, r, one, dr, MPI_INT, ring, MPI_INFO_NULL, &rq));
		if (mode == 2)
			OK(MPI_Start(&rq));
		OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
		if (mode == 2)
			OK(MPI_Request_free(&rq));
		CHECK(r[3] == 10 * rank && r[0] == 10 * peer && r[1] == -1, "allgatherv_c mode %d: %d %d %d", mode, r[3], r[0], r[1]);

		/* alltoall_c: two ints to each neighbour. */
		memset(r, -1, sizeof r);
		if (mode == 0)
			OK(MPI_Neighbor_alltoall_c(s, 2, MPI_INT, r, 2, MPI_INT, ring));
		else if (mode == 1)
			OK(MPI_Ineighbor_alltoall_c(s, 2, MPI_INT, r, 2, MPI_INT, ring, &rq));
		else
			OK(MPI_Neighbor_alltoall_init_c(s, 2, MPI_INT, r, 2, MPI_INT, ring, MPI_INFO_NULL, &rq));
		if (mode == 2)
			OK(MPI_Start(&rq));
		OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
		if (mode == 2)
			OK(MPI_Request_free(&rq));
		CHECK(r[0] == 10 * rank && r[1] == 10 * rank + 1 && r[2] == 10 * peer + 2 && r[3] == 10 * peer + 3,
		      "alltoall_c mode %d: %d %d %d %d", mode, r[0], r[1], r[2], r[3]);

		/* alltoallv_c: send blocks of 1 int at 0 and 2 ints at 2; receive blocks
		 * of 1 int at 3 and 2 ints at 0. */
		memset(r, -1, sizeof r);
		if (mode == 0)
			OK(MPI_Neighbor_alltoallv_c(s, cs, ds, MPI_INT, r, cr, dr, MPI_INT, ring));
		else if (mode == 1)
			OK(MPI_Ineighbor_alltoallv_c(s, cs, ds, MPI_INT, r, cr, dr, MPI_INT, ring, &rq));
		else
			OK(MPI_Neighbor_alltoallv_init_c(s, cs, ds, MPI_INT, r, cr, dr, MPI_INT, ring, MPI_INFO_NULL, &rq));
		if (mode == 2)
			OK(MPI_Start(&rq));
		OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
		if (mode == 2)
			OK(MPI_Request_free(&rq));
		CHECK(r[3] == 10 * rank && r[0] == 10 * peer + 2 && r[1] == 10 * peer + 3 && r[2] == -1,
		      "alltoallv_c mode %d: %d %d %d %d", mode, r[3], r[0], r[1], r[2]);

		/* alltoallw_c: one int each way, byte displacements. */
		memset(r, -1, sizeof r);
		MPI_Count wc[2] = {1, 1};
		MPI_Aint wsd[2] = {0, sizeof(int)}, wrd[2] = {4 * sizeof(int), 5 * sizeof(int)};
		MPI_Datatype wt[2] = {MPI_INT, MPI_INT};
		if (mode == 0)
			OK(MPI_Neighbor_alltoallw_c(s, wc, wsd, wt, r, wc, wrd, wt, ring));
		else if (mode == 1)
			OK(MPI_Ineighbor_alltoallw_c(s, wc, wsd, wt, r, wc, wrd, wt, ring, &rq));
		else
			OK(MPI_Neighbor_alltoallw_init_c(s, wc, wsd, wt, r, wc, wrd, wt, ring, MPI_INFO_NULL, &rq));
		if (mode == 2)
			OK(MPI_Start(&rq));
		OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
		if (mode == 2)
			OK(MPI_Request_free(&rq));
		CHECK(r[4] == 10 * rank && r[5] == 10 * peer + 1, "alltoallw_c mode %d: %d %d", mode, r[4], r[5]);
	}
	OK(MPI_Comm_free(&ring));
	say("MPI_Neighbor_*_c MPI_Ineighbor_*_c MPI_Neighbor_*_init_c");
}

/* packed returns the bytes of MPI_Pack of one d from src, into out. */
static int packed(MPI_Datatype d, const void *src, char *out, int cap)
{
	int pos = 0;
	OK(MPI_Pack(src, 1, d, out, cap, &pos, MPI_COMM_SELF));
	return pos;
}

/* same checks that a and b have one size, extent and packed image of src, and frees
 * both. */
static void same(const char *what, MPI_Datatype a, MPI_Datatype b, const void *src, long want_size)
{
	MPI_Count sa, sb, lba, lbb, exa, exb;
	char pa[512], pb[512];
	OK(MPI_Type_commit(&a));
	OK(MPI_Type_commit(&b));
	OK(MPI_Type_size_c(a, &sa));
	OK(MPI_Type_size_c(b, &sb));
	OK(MPI_Type_get_extent_c(a, &lba, &exa));
	OK(MPI_Type_get_extent_c(b, &lbb, &exb));
	CHECK(sa == sb && sa == want_size && lba == lbb && exa == exb, "%s: size %lld/%lld want %ld, lb %lld/%lld, extent %lld/%lld",
	      what, (long long)sa, (long long)sb, want_size, (long long)lba, (long long)lbb, (long long)exa, (long long)exb);
	int na = packed(a, src, pa, sizeof pa), nb = packed(b, src, pb, sizeof pb);
	CHECK(na == nb && memcmp(pa, pb, na) == 0, "%s: packed images differ (%d and %d bytes)", what, na, nb);
	OK(MPI_Type_free(&a));
	OK(MPI_Type_free(&b));
}

/* Each _c constructor against its int form. */
static void types(void)
{
	int src[64];
	for (int i = 0; i < 64; i++)
		src[i] = i * 3 + 1;
	MPI_Datatype a, b;

	int bl[3] = {2, 1, 3}, di[3] = {0, 3, 8};
	MPI_Count blc[3] = {2, 1, 3}, dic[3] = {0, 3, 8};
	OK(MPI_Type_indexed_c(3, blc, dic, MPI_INT, &a));
	OK(MPI_Type_indexed(3, bl, di, MPI_INT, &b));
	same("MPI_Type_indexed_c", a, b, src, 6 * sizeof(int));

	MPI_Aint da[3] = {0, 12, 40};
	MPI_Count dac[3] = {0, 12, 40};
	OK(MPI_Type_create_hindexed_c(3, blc, dac, MPI_INT, &a));
	OK(MPI_Type_create_hindexed(3, bl, da, MPI_INT, &b));
	same("MPI_Type_create_hindexed_c", a, b, src, 6 * sizeof(int));

	OK(MPI_Type_create_hindexed_block_c(3, 2, dac, MPI_INT, &a));
	OK(MPI_Type_create_hindexed_block(3, 2, da, MPI_INT, &b));
	same("MPI_Type_create_hindexed_block_c", a, b, src, 6 * sizeof(int));

	int ib[3] = {4, 0, 2};
	MPI_Count ibc[3] = {4, 0, 2};
	OK(MPI_Type_create_indexed_block_c(3, 2, ibc, MPI_INT, &a));
	OK(MPI_Type_create_indexed_block(3, 2, ib, MPI_INT, &b));
	same("MPI_Type_create_indexed_block_c", a, b, src, 6 * sizeof(int));

	MPI_Datatype ts[2] = {MPI_INT, MPI_SHORT};
	int sbl[2] = {1, 3};
	MPI_Count sblc[2] = {1, 3};
	MPI_Aint sd[2] = {4, 16};
	MPI_Count sdc[2] = {4, 16};
	OK(MPI_Type_create_struct_c(2, sblc, sdc, ts, &a));
	OK(MPI_Type_create_struct(2, sbl, sd, ts, &b));
	same("MPI_Type_create_struct_c", a, b, src, sizeof(int) + 3 * sizeof(short));

	int sz[2] = {4, 5}, sub[2] = {2, 3}, st[2] = {1, 2};
	MPI_Count szc[2] = {4, 5}, subc[2] = {2, 3}, stc[2] = {1, 2};
	OK(MPI_Type_create_subarray_c(2, szc, subc, stc, MPI_ORDER_C, MPI_INT, &a));
	OK(MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, MPI_INT, &b));
	same("MPI_Type_create_subarray_c", a, b, src, 6 * sizeof(int));

	int gs[2] = {6, 4}, dist[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC}, darg[2] = {MPI_DISTRIBUTE_DFLT_DARG, 1}, ps[2] = {2, 1};
	MPI_Count gsc[2] = {6, 4};
	OK(MPI_Type_create_darray_c(2, rank, 2, gsc, dist, darg, ps, MPI_ORDER_C, MPI_INT, &a));
	OK(MPI_Type_create_darray(2, rank, 2, gs, dist, darg, ps, MPI_ORDER_C, MPI_INT, &b));
	same("MPI_Type_create_darray_c", a, b, src, 12 * sizeof(int));

	OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
	int rc = MPI_Type_indexed_c(-1, blc, dic, MPI_INT, &a);
	printf("rank %d: MPI_Type_indexed_c count -1: class %d\n", rank, class_of(rc));
	OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
	say("MPI_Type_*_c");
}

/* MPI_Op_create_c: the function gets an MPI_Count length. */
static MPI_Count seen_len;
static void sum_c(void *in, void *inout, MPI_Count *len, MPI_Datatype *d)
{
	CHECK(*d == MPI_INT, "sum_c got datatype %#x", (unsigned)*d);
	for (MPI_Count i = 0; i < *len; i++)
		((int *)inout)[i] += ((int *)in)[i];
	seen_len += *len;
}

static void ops(void)
{
	MPI_Op op;
	OK(MPI_Op_create_c(sum_c, 1, &op));
	int in[3] = {rank + 1, 10 * (rank + 1), 100 * (rank + 1)}, out[3];
	OK(MPI_Allreduce(in, out, 3, MPI_INT, op, MPI_COMM_WORLD));
	CHECK(out[0] == 3 && out[1] == 30 && out[2] == 300, "allreduce with MPI_Op_create_c: %d %d %d", out[0], out[1], out[2]);
	int acc[3] = {1, 2, 3};
	seen_len = 0;
	OK(MPI_Reduce_local(in, acc, 3, MPI_INT, op));
	CHECK(seen_len == 3 && acc[0] == rank + 2 && acc[2] == 100 * (rank + 1) + 3, "reduce_local: len %lld, %d %d", (long long)seen_len, acc[0], acc[2]);
	OK(MPI_Op_free(&op));
	say("MPI_Op_create_c");
}

/* The status conversions keep every field: a status of a receive goes to Fortran and
 * Fortran 2008 and back. */
static void statuses(void)
{
	int v[3] = {1, 2, 3}, w[3];
	MPI_Status s, back;
	OK(MPI_Sendrecv(v, 3, MPI_INT, 0, 5, w, 3, MPI_INT, 0, 5, MPI_COMM_SELF, &s));
	MPI_Fint f[MPI_F_STATUS_SIZE];
	int n;

	OK(MPI_Status_c2f(&s, f));
	CHECK(f[MPI_F_SOURCE] == 0 && f[MPI_F_TAG] == 5, "c2f: source %d tag %d", f[MPI_F_SOURCE], f[MPI_F_TAG]);
	memset(&back, 0, sizeof back);
	OK(MPI_Status_f2c(f, &back));
	OK(MPI_Get_count(&back, MPI_INT, &n));
	CHECK(back.MPI_SOURCE == 0 && back.MPI_TAG == 5 && n == 3, "f2c: source %d tag %d count %d", back.MPI_SOURCE, back.MPI_TAG, n);

	OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
	int rc = MPI_Status_f2c(MPI_F_STATUS_IGNORE, &back);
	printf("rank %d: MPI_Status_f2c MPI_F_STATUS_IGNORE: class %d\n", rank, class_of(rc));
	rc = MPI_Status_c2f(MPI_STATUS_IGNORE, f);
	printf("rank %d: MPI_Status_c2f MPI_STATUS_IGNORE: class %d\n", rank, class_of(rc));
	OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
	say("MPI_Status_c2f MPI_Status_f2c");
}

/* The Fortran 2008 conversions keep every field too. */
static void statuses08(void)
{
	conv_fn *c2f08 = need("MPI_Status_c2f08"), *f082c = need("MPI_Status_f082c");
	conv_fn *f082f = need("MPI_Status_f082f"), *f2f08 = need("MPI_Status_f2f08");
	int v[3] = {1, 2, 3}, w[3], n;
	MPI_Status s, back;
	OK(MPI_Sendrecv(v, 3, MPI_INT, 0, 5, w, 3, MPI_INT, 0, 5, MPI_COMM_SELF, &s));
	MPI_Fint f[MPI_F_STATUS_SIZE], f2[MPI_F_STATUS_SIZE];
	MPI_F08_status f08, f08b;
	OK(MPI_Status_c2f(&s, f));
	OK(c2f08(&s, &f08));
	CHECK(f08.MPI_SOURCE == 0 && f08.MPI_TAG == 5, "c2f08: source %d tag %d", f08.MPI_SOURCE, f08.MPI_TAG);
	memset(&back, 0, sizeof back);
	OK(f082c(&f08, &back));
	OK(MPI_Get_count(&back, MPI_INT, &n));
	CHECK(back.MPI_SOURCE == 0 && back.MPI_TAG == 5 && n == 3, "f082c: count %d", n);

	memset(f2, 0, sizeof f2);
	OK(f082f(&f08, f2));
	CHECK(memcmp(f, f2, sizeof f) == 0, "f082f differs from c2f");
	memset(&f08b, 0, sizeof f08b);
	OK(f2f08(f2, &f08b));
	CHECK(memcmp(&f08, &f08b, sizeof f08) == 0, "f2f08 differs from c2f08");

	OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
	int rc = f082f(&f08, MPI_F_STATUSES_IGNORE);
	CHECK(class_of(rc) == MPI_ERR_OTHER, "MPI_Status_f082f(MPI_F_STATUSES_IGNORE): class %d", class_of(rc));
	rc = f2f08(MPI_F_STATUS_IGNORE, &f08b);
	CHECK(class_of(rc) == MPI_ERR_OTHER, "MPI_Status_f2f08(MPI_F_STATUS_IGNORE): class %d", class_of(rc));
	rc = f082c(MPI_F08_STATUS_IGNORE, &back);
	CHECK(class_of(rc) == MPI_ERR_OTHER, "MPI_Status_f082c(MPI_F08_STATUS_IGNORE): class %d", class_of(rc));
	OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
	say("MPI_Status_c2f08 MPI_Status_f082c MPI_Status_f082f MPI_Status_f2f08");
}

/* MPI_DUP_FN copies the attribute value and sets the flag. */
static void dupfn(void)
{
	dup_fn *dupf = need("MPI_DUP_FN"), *pdup = need("PMPI_DUP_FN");
	int key, val = 42, flag = 0;
	void *out = NULL;
	OK(MPI_Keyval_create(dupf, MPI_NULL_DELETE_FN, &key, NULL));
	OK(dupf(MPI_COMM_WORLD, key, NULL, &val, &out, &flag));
	CHECK(flag == 1 && out == &val, "MPI_DUP_FN: flag %d", flag);
	flag = 0;
	out = NULL;
	OK(pdup(MPI_COMM_WORLD, key, NULL, &val, &out, &flag));
	CHECK(flag == 1 && out == &val, "PMPI_DUP_FN: flag %d", flag);
	OK(MPI_Attr_put(MPI_COMM_WORLD, key, &val));
	MPI_Comm dup;
	OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
	int *got;
	OK(MPI_Attr_get(dup, key, &got, &flag));
	CHECK(flag && got == &val, "MPI_Comm_dup did not copy with MPI_DUP_FN");
	OK(MPI_Comm_free(&dup));
	OK(MPI_Attr_delete(MPI_COMM_WORLD, key));
	OK(MPI_Keyval_free(&key));
	say("MPI_DUP_FN");
}

/* MPICH's extended generalized requests: the program's poll and wait functions run
 * in MPI_Test and MPI_Wait and complete the request. */
struct greq {
	MPI_Request req;
	int polls, waits, queries, frees, until;
};

static int g_query(void *e, MPI_Status *st)
{
	((struct greq *)e)->queries++;
	MPI_Status_set_elements(st, MPI_BYTE, 4);
	MPI_Status_set_cancelled(st, 0);
	st->MPI_SOURCE = MPI_UNDEFINED;
	st->MPI_TAG = 9;
	return MPI_SUCCESS;
}

static int g_free(void *e)
{
	((struct greq *)e)->frees++;
	return MPI_SUCCESS;
}

static int g_cancel(void *e, int complete)
{
	(void)e;
	(void)complete;
	return MPI_SUCCESS;
}

static int g_poll(void *e, MPI_Status *st)
{
	struct greq *g = e;
	(void)st;
	if (++g->polls == g->until)
		OK(MPI_Grequest_complete(g->req));
	return MPI_SUCCESS;
}

static int g_wait(int n, void **states, double timeout, MPI_Status *st)
{
	(void)timeout;
	(void)st;
	for (int i = 0; i < n; i++) {
		struct greq *g = states[i];
		g->waits++;
		OK(MPI_Grequest_complete(g->req));
	}
	return MPI_SUCCESS;
}

static void greqs(void)
{
	struct greq g = {.until = 3};
	MPI_Status st;
	int flag = 0, tests = 0, n;
	OK(MPIX_Grequest_start(g_query, g_free, g_cancel, g_poll, g_wait, &g, &g.req));
	while (!flag) {
		OK(MPI_Test(&g.req, &flag, &st));
		tests++;
	}
	OK(MPI_Get_count(&st, MPI_BYTE, &n));
	CHECK(tests == 3 && g.polls == 3 && g.queries == 1 && g.frees == 1 && st.MPI_TAG == 9 && n == 4,
	      "test with poll: tests %d polls %d queries %d frees %d tag %d count %d", tests, g.polls, g.queries, g.frees, st.MPI_TAG, n);
	CHECK(g.req == MPI_REQUEST_NULL, "the completed request is not MPI_REQUEST_NULL");

	/* MPI_Wait polls; MPI_Waitall calls the wait function. */
	struct greq k = {.until = 5}, m[2] = {{.until = 100}, {.until = 100}};
	OK(MPIX_Grequest_start(g_query, g_free, g_cancel, g_poll, g_wait, &k, &k.req));
	OK(MPI_Wait(&k.req, &st));
	CHECK(k.waits == 0 && k.polls == 5 && k.frees == 1 && st.MPI_TAG == 9, "wait: waits %d polls %d", k.waits, k.polls);
	MPI_Request two[2];
	for (int i = 0; i < 2; i++) {
		OK(MPIX_Grequest_start(g_query, g_free, g_cancel, g_poll, g_wait, &m[i], &m[i].req));
		two[i] = m[i].req;
	}
	MPI_Status sts[2];
	OK(MPI_Waitall(2, two, sts));
	for (int i = 0; i < 2; i++)
		CHECK(m[i].waits == 1 && m[i].polls == 0 && m[i].frees == 1, "waitall %d: waits %d polls %d", i, m[i].waits, m[i].polls);

	MPIX_Grequest_class cls;
	struct greq c = {.until = 1};
	OK(MPIX_Grequest_class_create(g_query, g_free, g_cancel, g_poll, g_wait, &cls));
	OK(MPIX_Grequest_class_allocate(cls, &c, &c.req));
	flag = 0;
	OK(MPI_Test(&c.req, &flag, &st));
	CHECK(flag && c.polls == 1 && c.queries == 1 && c.frees == 1, "class request: flag %d polls %d", flag, c.polls);
	struct greq d = {.until = 2};
	OK(MPIX_Grequest_class_allocate(cls, &d, &d.req));
	OK(MPI_Wait(&d.req, &st));
	CHECK(d.waits == 0 && d.polls == 2 && d.frees == 1 && st.MPI_TAG == 9, "class request wait: waits %d polls %d", d.waits, d.polls);

	OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
	int rc = MPIX_Grequest_start(g_query, g_free, g_cancel, NULL, g_wait, &k, &k.req);
	printf("rank %d: MPIX_Grequest_start poll_fn NULL: class %d\n", rank, class_of(rc));
	rc = MPIX_Grequest_class_create(g_query, g_free, g_cancel, g_poll, NULL, &cls);
	printf("rank %d: MPIX_Grequest_class_create wait_fn NULL: class %d\n", rank, class_of(rc));
	OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
	say("MPIX_Grequest_start MPIX_Grequest_class_create MPIX_Grequest_class_allocate");
}

/* Checks whose answers gorma fixes where MPICH 4.0.2 differs (lcount_test.go). */
static void fixed(void)
{
	int peer = 1 - rank;
	int buf[4] = {10 * rank, 10 * rank + 1, 0, 0}, org[2] = {1, 2}, res[2] = {-1, -1};
	MPI_Win w;
	OK(MPI_Win_create(buf, sizeof buf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w));
	OK(MPI_Win_lock_all(0, w));
	MPI_Request rq;
	OK(MPI_Rget_accumulate_c(org, 2, MPI_INT, res, 2, MPI_INT, peer, 0, 2, MPI_INT, MPI_SUM, w, &rq));
	OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
	OK(MPI_Win_unlock_all(w));
	CHECK(res[0] == 10 * peer && res[1] == 10 * peer + 1, "rget_accumulate_c fetched %d %d", res[0], res[1]);
	OK(MPI_Barrier(MPI_COMM_WORLD));
	CHECK(buf[0] == 10 * rank + 1 && buf[1] == 10 * rank + 3, "rget_accumulate_c left %d %d", buf[0], buf[1]);
	OK(MPI_Win_free(&w));
	say("MPI_Rget_accumulate_c");

	OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
	int *base;
	int rc = MPI_Win_allocate_c(16, (MPI_Aint)1 << 40, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w);
	CHECK(class_of(rc) == MPI_ERR_COUNT, "disp_unit 2^40: class %d", class_of(rc));
	OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
	say("MPI_ERR_COUNT");
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	CHECK(size == 2, "run at 2 ranks, not %d", size);
	if (argc > 1 && strcmp(argv[1], "fixed") == 0) {
		fixed();
		statuses08();
		dupfn();
		MPI_Finalize();
		return 0;
	}
	rma();
	neighbours();
	types();
	ops();
	statuses();
	greqs();
	MPI_Finalize();
	return 0;
}
