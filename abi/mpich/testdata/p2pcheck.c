/* p2pcheck: point-to-point calls beyond send and receive, which gorma's libmpich.so.12
 * and MPICH's must agree on: persistent requests and MPI_Start(all), the set calls
 * (Waitany, Testany, Waitsome, Testsome, Request_get_status), buffered, synchronous
 * and ready sends, Sendrecv_replace and Isendrecv, matched probes, generalized requests
 * and the large-count (_c) forms. Each check aborts on a wrong value; the lines printed
 * are the same on both libraries. Run with 2 or more ranks. With "strict" it also
 * checks what Debian's MPICH 4.0.2 gets wrong: the status of MPI_Isendrecv and
 * MPI_Isendrecv_replace, which it leaves as a send's (source 0, tag 0, count 0), and
 * both calls with a derived datatype or MPI_PROC_NULL, on which it crashes. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size, left, right, strict;

static void fail(const char *what)
{
	fprintf(stderr, "rank %d: p2pcheck: %s\n", rank, what);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

#define CHECK(c, ...)                                          \
	do {                                                       \
		if (!(c)) {                                            \
			char m_[512];                                      \
			snprintf(m_, sizeof m_, __VA_ARGS__);              \
			fail(m_);                                          \
		}                                                      \
	} while (0)

/* ok checks an MPI call's return code. */
#define OK(call)                                                                  \
	do {                                                                          \
		int rc_ = (call);                                                         \
		CHECK(rc_ == MPI_SUCCESS, "line %d: %s returned %d", __LINE__, #call, rc_); \
	} while (0)

static int cls(int code)
{
	int c;
	MPI_Error_class(code, &c);
	return c;
}

static int count_of(MPI_Status *st, MPI_Datatype d)
{
	int n;
	MPI_Get_count(st, d, &n);
	return n;
}

static const char *src_name(int s)
{
	static char buf[32];
	if (s == MPI_ANY_SOURCE) return "any";
	if (s == MPI_PROC_NULL) return "null";
	snprintf(buf, sizeof buf, "%d", s);
	return buf;
}

static const char *tag_name(int t)
{
	static char buf[32];
	if (t == MPI_ANY_TAG) return "any";
	snprintf(buf, sizeof buf, "%d", t);
	return buf;
}

/* say prints a line from rank 0. */
#define say(...) do { if (rank == 0) { printf(__VA_ARGS__); fflush(stdout); } } while (0)

static void fill(int *b, int n, int base)
{
	for (int i = 0; i < n; i++) b[i] = base + i;
}

static void expect(const int *b, int n, int base, const char *what)
{
	for (int i = 0; i < n; i++) CHECK(b[i] == base + i, "%s: element %d is %d, want %d", what, i, b[i], base + i);
}

/* persistent: the init calls, Start and Startall, inactive requests, derived datatypes. */
static void persistent(void)
{
	int s[4], r[4];
	MPI_Request rq[2];
	MPI_Status st, sts[2];
	OK(MPI_Send_init(s, 4, MPI_INT, right, 1, MPI_COMM_WORLD, &rq[0]));
	OK(MPI_Recv_init(r, 4, MPI_INT, left, 1, MPI_COMM_WORLD, &rq[1]));
	st.MPI_SOURCE = 77;
	OK(MPI_Wait(&rq[1], &st));
	say("inactive wait: source %s, tag %s, count %d, handle kept %d\n", src_name(st.MPI_SOURCE),
	    tag_name(st.MPI_TAG), count_of(&st, MPI_INT), rq[1] != MPI_REQUEST_NULL);
	int flag = 0;
	OK(MPI_Test(&rq[0], &flag, &st));
	say("inactive test: flag %d, handle kept %d\n", flag, rq[0] != MPI_REQUEST_NULL);
	for (int it = 0; it < 3; it++) {
		fill(s, 4, rank * 100 + it * 10);
		OK(MPI_Startall(2, rq));
		OK(MPI_Waitall(2, rq, sts));
		expect(r, 4, left * 100 + it * 10, "send_init/recv_init");
		CHECK(sts[1].MPI_SOURCE == left && sts[1].MPI_TAG == 1 && count_of(&sts[1], MPI_INT) == 4, "recv_init status");
		CHECK(rq[0] != MPI_REQUEST_NULL && rq[1] != MPI_REQUEST_NULL, "a persistent request was freed by Waitall");
	}
	OK(MPI_Start(&rq[1]));
	fill(s, 4, rank * 100 + 50);
	OK(MPI_Start(&rq[0]));
	int rc = MPI_Start(&rq[1]);
	say("start of an active request: class %d\n", cls(rc));
	OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
	OK(MPI_Wait(&rq[1], &st));
	expect(r, 4, left * 100 + 50, "start");
	say("persistent send and receive: 4 rounds\n");

	/* Request_get_status leaves the outcome to Wait. */
	OK(MPI_Start(&rq[1]));
	OK(MPI_Barrier(MPI_COMM_WORLD));
	OK(MPI_Start(&rq[0]));
	do {
		OK(MPI_Request_get_status(rq[1], &flag, &st));
	} while (!flag);
	CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 1, "get_status on a persistent request: source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
	st.MPI_SOURCE = 77;
	OK(MPI_Wait(&rq[1], &st));
	CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 1, "wait after get_status: source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
	OK(MPI_Request_get_status(rq[1], &flag, &st));
	say("get_status of an inactive request: flag %d, source %s, tag %s\n", flag, src_name(st.MPI_SOURCE), tag_name(st.MPI_TAG));
	OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
	OK(MPI_Request_free(&rq[0]));
	OK(MPI_Request_free(&rq[1]));
	say("request_free: handles null %d\n", rq[0] == MPI_REQUEST_NULL && rq[1] == MPI_REQUEST_NULL);

	/* The other modes. */
	MPI_Request m[6];
	int ss[3][2], rr[3][2];
	OK(MPI_Ssend_init(ss[0], 2, MPI_INT, right, 2, MPI_COMM_WORLD, &m[0]));
	OK(MPI_Rsend_init(ss[1], 2, MPI_INT, right, 3, MPI_COMM_WORLD, &m[1]));
	OK(MPI_Bsend_init(ss[2], 2, MPI_INT, right, 4, MPI_COMM_WORLD, &m[2]));
	OK(MPI_Recv_init(rr[0], 2, MPI_INT, left, 2, MPI_COMM_WORLD, &m[3]));
	OK(MPI_Recv_init(rr[1], 2, MPI_INT, left, 3, MPI_COMM_WORLD, &m[4]));
	OK(MPI_Recv_init(rr[2], 2, MPI_INT, left, 4, MPI_COMM_WORLD, &m[5]));
	int bsize = 2 * (2 * sizeof(int) + MPI_BSEND_OVERHEAD);
	char *bbuf = malloc(bsize);
	OK(MPI_Buffer_attach(bbuf, bsize));
	for (int it = 0; it < 2; it++) {
		for (int k = 0; k < 3; k++) fill(ss[k], 2, rank * 1000 + k * 100 + it);
		OK(MPI_Startall(3, &m[3]));
		OK(MPI_Barrier(MPI_COMM_WORLD)); /* the ready send's receive is posted */
		OK(MPI_Startall(3, m));
		OK(MPI_Waitall(6, m, MPI_STATUSES_IGNORE));
		for (int k = 0; k < 3; k++) expect(rr[k], 2, left * 1000 + k * 100 + it, "ssend/rsend/bsend_init");
	}
	void *back;
	int bn;
	OK(MPI_Buffer_detach(&back, &bn));
	CHECK(back == bbuf && bn == bsize, "buffer_detach gave %p, %d; want %p, %d", back, bn, (void *)bbuf, bsize);
	free(bbuf);
	for (int k = 0; k < 6; k++) OK(MPI_Request_free(&m[k]));
	say("ssend_init, rsend_init, bsend_init: 2 rounds\n");

	/* A derived datatype: a column of a 4x4 matrix. */
	MPI_Datatype col;
	OK(MPI_Type_vector(4, 1, 4, MPI_INT, &col));
	OK(MPI_Type_commit(&col));
	int a[4][4], b[4][4];
	MPI_Request t[2];
	OK(MPI_Send_init(&a[0][1], 1, col, right, 5, MPI_COMM_WORLD, &t[0]));
	OK(MPI_Recv_init(&b[0][2], 1, col, left, 5, MPI_COMM_WORLD, &t[1]));
	for (int it = 0; it < 2; it++) {
		for (int i = 0; i < 4; i++)
			for (int j = 0; j < 4; j++) a[i][j] = rank * 100 + it * 50 + i * 4 + j, b[i][j] = -1;
		OK(MPI_Startall(2, t));
		OK(MPI_Waitall(2, t, sts));
		for (int i = 0; i < 4; i++)
			for (int j = 0; j < 4; j++) {
				int want = j == 2 ? left * 100 + it * 50 + i * 4 + 1 : -1;
				CHECK(b[i][j] == want, "column recv_init: b[%d][%d] = %d, want %d", i, j, b[i][j], want);
			}
		CHECK(count_of(&sts[1], col) == 1 && count_of(&sts[1], MPI_INT) == 4, "column recv_init count");
	}
	OK(MPI_Request_free(&t[0]));
	OK(MPI_Request_free(&t[1]));
	say("persistent column send and receive: 2 rounds\n");

	/* Cancel of a started persistent receive. */
	OK(MPI_Recv_init(r, 4, MPI_INT, left, 999, MPI_COMM_WORLD, &rq[0]));
	OK(MPI_Start(&rq[0]));
	OK(MPI_Cancel(&rq[0]));
	OK(MPI_Wait(&rq[0], &st));
	int cancelled;
	OK(MPI_Test_cancelled(&st, &cancelled));
	say("cancelled persistent receive: cancelled %d, handle kept %d\n", cancelled, rq[0] != MPI_REQUEST_NULL);
	OK(MPI_Request_free(&rq[0]));

	/* Start of a request that is not persistent. */
	int x = rank;
	OK(MPI_Isend(&x, 1, MPI_INT, right, 6, MPI_COMM_WORLD, &rq[0]));
	rc = MPI_Start(&rq[0]);
	say("start of a nonblocking request: class %d\n", cls(rc));
	OK(MPI_Recv(&x, 1, MPI_INT, left, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
	OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
	MPI_Type_free(&col);
}

/* nulls: sets with nothing active. */
static void nulls(void)
{
	MPI_Request rq[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
	int r[1], idx = 5, flag = 5, out = 5, ind[3];
	MPI_Status st, sts[3];
	OK(MPI_Recv_init(r, 1, MPI_INT, left, 1, MPI_COMM_WORLD, &rq[1])); /* inactive */
	st.MPI_SOURCE = 77;
	OK(MPI_Waitany(3, rq, &idx, &st));
	say("waitany of null and inactive: index undefined %d, source %s, tag %s\n", idx == MPI_UNDEFINED, src_name(st.MPI_SOURCE), tag_name(st.MPI_TAG));
	OK(MPI_Testany(3, rq, &idx, &flag, &st));
	say("testany of null and inactive: flag %d, index undefined %d\n", flag, idx == MPI_UNDEFINED);
	OK(MPI_Waitsome(3, rq, &out, ind, sts));
	say("waitsome of null and inactive: outcount undefined %d\n", out == MPI_UNDEFINED);
	OK(MPI_Testsome(3, rq, &out, ind, MPI_STATUSES_IGNORE));
	say("testsome of null and inactive: outcount undefined %d\n", out == MPI_UNDEFINED);
	OK(MPI_Waitany(0, rq, &idx, MPI_STATUS_IGNORE));
	say("waitany of none: index undefined %d\n", idx == MPI_UNDEFINED);
	MPI_Request nr = MPI_REQUEST_NULL;
	st.MPI_SOURCE = 77;
	OK(MPI_Wait(&nr, &st));
	say("wait of null: source %s, tag %s, count %d\n", src_name(st.MPI_SOURCE), tag_name(st.MPI_TAG), count_of(&st, MPI_INT));
	st.MPI_SOURCE = 77;
	OK(MPI_Test(&nr, &flag, &st));
	say("test of null: flag %d, source %s, tag %s\n", flag, src_name(st.MPI_SOURCE), tag_name(st.MPI_TAG));
	OK(MPI_Request_get_status(MPI_REQUEST_NULL, &flag, &st));
	say("get_status of null: flag %d, source %s, tag %s\n", flag, src_name(st.MPI_SOURCE), tag_name(st.MPI_TAG));
	OK(MPI_Request_free(&rq[1]));
}

/* post receives from every other rank with tag into rq[1], rq[3]...: the even entries are
 * MPI_REQUEST_NULL. It returns the number of entries. */
static int post(int *r, MPI_Request *rq, int tag)
{
	int n = 0;
	for (int p = 0; p < size; p++) {
		if (p == rank) continue;
		rq[n++] = MPI_REQUEST_NULL;
		OK(MPI_Irecv(&r[p], 1, MPI_INT, p, tag, MPI_COMM_WORLD, &rq[n++]));
	}
	return n;
}

static void send_all(int tag)
{
	for (int p = 0; p < size; p++) {
		if (p == rank) continue;
		int v = rank * 10 + tag;
		OK(MPI_Send(&v, 1, MPI_INT, p, tag, MPI_COMM_WORLD));
	}
}

/* entry is the rank whose receive post put at index i. */
static int entry(int i)
{
	int p = i / 2;
	return p < rank ? p : p + 1;
}

static void check_recvd(const int *r, int tag, const char *what)
{
	for (int p = 0; p < size; p++)
		if (p != rank) CHECK(r[p] == p * 10 + tag, "%s: from %d got %d", what, p, r[p]);
}

/* sets: Waitany, Testany, Waitsome, Testsome over receives from every rank. */
static void sets(void)
{
	int r[64];
	MPI_Request rq[128];
	MPI_Status st, sts[128];
	int ind[128], idx, flag, out;

	int n = post(r, rq, 11);
	send_all(11);
	for (int k = 0; k < size - 1; k++) {
		OK(MPI_Waitany(n, rq, &idx, &st));
		CHECK(idx >= 0 && idx % 2 == 1 && st.MPI_SOURCE == entry(idx) && st.MPI_TAG == 11, "waitany: index %d source %d", idx, st.MPI_SOURCE);
		CHECK(rq[idx] == MPI_REQUEST_NULL, "waitany left its request");
	}
	OK(MPI_Waitany(n, rq, &idx, &st));
	CHECK(idx == MPI_UNDEFINED, "waitany after all: %d", idx);
	check_recvd(r, 11, "waitany");
	say("waitany: a receive from each rank\n");

	n = post(r, rq, 12);
	send_all(12);
	int got = 0;
	while (got < size - 1) {
		OK(MPI_Testany(n, rq, &idx, &flag, &st));
		if (!flag) continue;
		CHECK(idx != MPI_UNDEFINED && st.MPI_SOURCE == entry(idx) && st.MPI_TAG == 12, "testany: index %d source %d", idx, st.MPI_SOURCE);
		got++;
	}
	OK(MPI_Testany(n, rq, &idx, &flag, &st));
	CHECK(flag && idx == MPI_UNDEFINED, "testany after all: flag %d index %d", flag, idx);
	check_recvd(r, 12, "testany");
	say("testany: a receive from each rank\n");

	n = post(r, rq, 13);
	send_all(13);
	got = 0;
	while (got < size - 1) {
		OK(MPI_Waitsome(n, rq, &out, ind, sts));
		CHECK(out >= 1, "waitsome: outcount %d", out);
		for (int k = 0; k < out; k++)
			CHECK(sts[k].MPI_SOURCE == entry(ind[k]) && sts[k].MPI_TAG == 13 && rq[ind[k]] == MPI_REQUEST_NULL, "waitsome: index %d source %d", ind[k], sts[k].MPI_SOURCE);
		got += out;
	}
	OK(MPI_Waitsome(n, rq, &out, ind, sts));
	CHECK(out == MPI_UNDEFINED, "waitsome after all: %d", out);
	check_recvd(r, 13, "waitsome");
	say("waitsome: a receive from each rank\n");

	/* Testsome before the senders send finds nothing. */
	n = post(r, rq, 14);
	OK(MPI_Testsome(n, rq, &out, ind, sts));
	say("testsome before the sends: outcount %d\n", out);
	OK(MPI_Barrier(MPI_COMM_WORLD));
	send_all(14);
	got = 0;
	while (got < size - 1) {
		OK(MPI_Testsome(n, rq, &out, ind, MPI_STATUSES_IGNORE));
		got += out;
	}
	check_recvd(r, 14, "testsome");
	say("testsome: a receive from each rank\n");

	/* A set of a receive and a nonblocking collective. */
	int v = rank + 1, sum = 0, x = -1;
	MPI_Request mix[3];
	OK(MPI_Irecv(&x, 1, MPI_INT, left, 15, MPI_COMM_WORLD, &mix[0]));
	OK(MPI_Iallreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &mix[1]));
	mix[2] = MPI_REQUEST_NULL;
	OK(MPI_Waitany(3, mix, &idx, &st));
	CHECK(idx == 1 && sum == size * (size + 1) / 2, "waitany of a collective: index %d sum %d", idx, sum);
	OK(MPI_Barrier(MPI_COMM_WORLD)); /* no rank sends before every Waitany returned */
	OK(MPI_Send(&v, 1, MPI_INT, right, 15, MPI_COMM_WORLD));
	OK(MPI_Waitsome(3, mix, &out, ind, sts));
	CHECK(out == 1 && ind[0] == 0 && x == left + 1 && sts[0].MPI_SOURCE == left, "waitsome after a collective: out %d x %d", out, x);
	say("waitany and waitsome over a receive and an allreduce\n");

	/* A truncated receive's error. */
	int big[2] = {1, 2}, small[1];
	MPI_Request tr[2];
	OK(MPI_Irecv(small, 1, MPI_INT, left, 16, MPI_COMM_WORLD, &tr[0]));
	OK(MPI_Send(big, 2, MPI_INT, right, 16, MPI_COMM_WORLD));
	int rc = MPI_Waitany(1, tr, &idx, &st);
	say("waitany of a truncated receive: class %d, index %d\n", cls(rc), idx);
	OK(MPI_Irecv(small, 1, MPI_INT, left, 17, MPI_COMM_WORLD, &tr[0]));
	OK(MPI_Irecv(&x, 1, MPI_INT, left, 18, MPI_COMM_WORLD, &tr[1]));
	OK(MPI_Send(big, 2, MPI_INT, right, 17, MPI_COMM_WORLD));
	OK(MPI_Send(big, 1, MPI_INT, right, 18, MPI_COMM_WORLD));
	int trunc_rc = -1, trunc_err = -1;
	got = 0;
	while (got < 2) {
		for (int k = 0; k < 2; k++) sts[k].MPI_ERROR = -7;
		rc = MPI_Waitsome(2, tr, &out, ind, sts);
		for (int k = 0; k < out; k++)
			if (ind[k] == 0) trunc_rc = cls(rc), trunc_err = cls(sts[k].MPI_ERROR);
		got += out;
	}
	say("waitsome of a truncated receive: class %d, its status's class %d\n", trunc_rc, trunc_err);
}

/* modes: Issend, Irsend, Sendrecv_replace, Isendrecv, Isendrecv_replace. */
static void modes(void)
{
	int s[3], r[3], flag;
	MPI_Request rq[2];
	MPI_Status st;
	fill(s, 3, rank * 10);
	OK(MPI_Issend(s, 3, MPI_INT, right, 20, MPI_COMM_WORLD, &rq[0]));
	OK(MPI_Test(&rq[0], &flag, MPI_STATUS_IGNORE));
	say("issend before its receive: flag %d\n", flag);
	OK(MPI_Barrier(MPI_COMM_WORLD));
	OK(MPI_Recv(r, 3, MPI_INT, left, 20, MPI_COMM_WORLD, &st));
	OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
	expect(r, 3, left * 10, "issend");

	OK(MPI_Irecv(r, 3, MPI_INT, left, 21, MPI_COMM_WORLD, &rq[1]));
	OK(MPI_Barrier(MPI_COMM_WORLD));
	OK(MPI_Irsend(s, 3, MPI_INT, right, 21, MPI_COMM_WORLD, &rq[0]));
	OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
	expect(r, 3, left * 10, "irsend");
	say("issend and irsend\n");

	int b[3];
	fill(b, 3, rank * 10);
	OK(MPI_Sendrecv_replace(b, 3, MPI_INT, right, 22, left, 22, MPI_COMM_WORLD, &st));
	expect(b, 3, left * 10, "sendrecv_replace");
	CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 22 && count_of(&st, MPI_INT) == 3, "sendrecv_replace status");

	MPI_Datatype col;
	OK(MPI_Type_vector(3, 1, 3, MPI_INT, &col));
	OK(MPI_Type_commit(&col));
	int m[3][3];
	for (int i = 0; i < 9; i++) m[i / 3][i % 3] = rank * 100 + i;
	OK(MPI_Sendrecv_replace(&m[0][1], 1, col, right, 23, left, 23, MPI_COMM_WORLD, &st));
	for (int i = 0; i < 9; i++) {
		int want = i % 3 == 1 ? left * 100 + i : rank * 100 + i;
		CHECK(m[i / 3][i % 3] == want, "sendrecv_replace of a column: element %d is %d, want %d", i, m[i / 3][i % 3], want);
	}
	say("sendrecv_replace, of ints and of a column\n");

	fill(s, 3, rank * 10 + 1);
	OK(MPI_Isendrecv(s, 3, MPI_INT, right, 24, r, 3, MPI_INT, left, 24, MPI_COMM_WORLD, &rq[0]));
	OK(MPI_Wait(&rq[0], &st));
	expect(r, 3, left * 10 + 1, "isendrecv");
	CHECK(!strict || (st.MPI_SOURCE == left && st.MPI_TAG == 24 && count_of(&st, MPI_INT) == 3), "isendrecv status: source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);

	fill(b, 3, rank * 10 + 2);
	OK(MPI_Isendrecv_replace(b, 3, MPI_INT, right, 27, left, 27, MPI_COMM_WORLD, &rq[0]));
	OK(MPI_Wait(&rq[0], &st));
	expect(b, 3, left * 10 + 2, "isendrecv_replace");
	CHECK(!strict || (st.MPI_SOURCE == left && st.MPI_TAG == 27 && count_of(&st, MPI_INT) == 3), "isendrecv_replace status: source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
	if (strict) { /* Debian's MPICH 4.0.2 fails an assertion in yaksa on these */
		for (int i = 0; i < 9; i++) m[i / 3][i % 3] = rank * 100 + i;
		int c[3] = {-1, -1, -1};
		OK(MPI_Isendrecv(&m[0][2], 1, col, right, 25, c, 3, MPI_INT, left, 25, MPI_COMM_WORLD, &rq[0]));
		OK(MPI_Wait(&rq[0], &st));
		for (int i = 0; i < 3; i++) CHECK(c[i] == left * 100 + i * 3 + 2, "isendrecv of a column: %d", c[i]);
		OK(MPI_Isendrecv(s, 3, MPI_INT, right, 26, &m[0][0], 1, col, left, 26, MPI_COMM_WORLD, &rq[0]));
		OK(MPI_Wait(&rq[0], &st));
		for (int i = 0; i < 3; i++) CHECK(m[i][0] == left * 10 + 1 + i && m[i][1] == rank * 100 + i * 3 + 1, "isendrecv into a column");

		for (int i = 0; i < 9; i++) m[i / 3][i % 3] = rank * 100 + i;
		OK(MPI_Isendrecv_replace(&m[0][1], 1, col, right, 28, left, 28, MPI_COMM_WORLD, &rq[0]));
		OK(MPI_Wait(&rq[0], &st));
		for (int i = 0; i < 9; i++) {
			int want = i % 3 == 1 ? left * 100 + i : rank * 100 + i;
			CHECK(m[i / 3][i % 3] == want, "isendrecv_replace of a column: element %d is %d, want %d", i, m[i / 3][i % 3], want);
		}
	}
	say("isendrecv and isendrecv_replace\n");

	if (strict) { /* Debian's MPICH 4.0.2 crashes on this */
		OK(MPI_Isendrecv(s, 3, MPI_INT, MPI_PROC_NULL, 29, r, 3, MPI_INT, MPI_PROC_NULL, 29, MPI_COMM_WORLD, &rq[0]));
		OK(MPI_Wait(&rq[0], &st));
		CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && count_of(&st, MPI_INT) == 0,
		      "isendrecv with MPI_PROC_NULL: source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
	}
	MPI_Type_free(&col);
}

/* bsend: MPI_Buffer_attach and detach, Bsend and Ibsend, and their errors. */
static void bsend(void)
{
	int v[4], r[4];
	int rc = MPI_Bsend(v, 4, MPI_INT, right, 30, MPI_COMM_WORLD);
	say("bsend without a buffer: class %d\n", cls(rc));
	int bsize = 4 * (4 * sizeof(int) + MPI_BSEND_OVERHEAD);
	char *buf = malloc(bsize);
	OK(MPI_Buffer_attach(buf, bsize));
	rc = MPI_Buffer_attach(buf, bsize);
	say("a second buffer_attach: class %d\n", cls(rc));
	for (int k = 0; k < 3; k++) {
		fill(v, 4, rank * 10 + k);
		OK(MPI_Bsend(v, 4, MPI_INT, right, 30 + k, MPI_COMM_WORLD));
	}
	MPI_Request rq;
	fill(v, 4, rank * 10 + 3);
	OK(MPI_Ibsend(v, 4, MPI_INT, right, 33, MPI_COMM_WORLD, &rq));
	fill(v, 4, -1); /* the message was copied */
	OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
	for (int k = 3; k >= 0; k--) {
		OK(MPI_Recv(r, 4, MPI_INT, left, 30 + k, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		expect(r, 4, left * 10 + k, "bsend");
	}
	void *back;
	int n;
	OK(MPI_Buffer_detach(&back, &n));
	CHECK(back == buf && n == bsize, "buffer_detach gave %p, %d; want %p, %d", back, n, (void *)buf, bsize);
	say("bsend and ibsend: 4 messages through the attached buffer\n");

	/* A column, packed into the buffer; the large-count forms of the buffer calls. */
	MPI_Count csize = bsize;
	OK(MPI_Buffer_attach_c(buf, csize));
	int m[4][4], c[4];
	for (int i = 0; i < 16; i++) m[i / 4][i % 4] = rank * 100 + i;
	MPI_Datatype col;
	OK(MPI_Type_vector(4, 1, 4, MPI_INT, &col));
	OK(MPI_Type_commit(&col));
	OK(MPI_Bsend(&m[0][3], 1, col, right, 34, MPI_COMM_WORLD));
	OK(MPI_Bsend_c(&m[0][0], (MPI_Count)1, col, right, 35, MPI_COMM_WORLD));
	OK(MPI_Ibsend_c(&m[0][1], (MPI_Count)1, col, right, 36, MPI_COMM_WORLD, &rq));
	OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
	for (int k = 0; k < 3; k++) {
		int j = k == 0 ? 3 : k - 1;
		OK(MPI_Recv(c, 4, MPI_INT, left, 34 + k, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		for (int i = 0; i < 4; i++) CHECK(c[i] == left * 100 + i * 4 + j, "bsend of a column %d: %d", j, c[i]);
	}
	MPI_Count cn;
	OK(MPI_Buffer_detach_c(&back, &cn));
	CHECK(back == buf && cn == bsize, "buffer_detach_c");
	OK(MPI_Buffer_detach(&back, &n));
	say("buffer_detach with none attached: size %d, null %d\n", n, back == NULL);
	rc = MPI_Bsend(v, 4, MPI_INT, right, 37, MPI_COMM_WORLD);
	say("bsend after detach: class %d\n", cls(rc));
	free(buf);
	MPI_Type_free(&col);
	say("bsend of columns, buffer_attach_c and buffer_detach_c\n");
}

/* mprobe: Mprobe, Improbe, Mrecv, Imrecv. */
static void mprobe(void)
{
	int a[3] = {rank, rank + 1, rank + 2}, b[2] = {rank * 7, rank * 7 + 1}, r[3], flag;
	MPI_Message msg;
	MPI_Status st;
	MPI_Request rq;
	OK(MPI_Improbe(left, 42, MPI_COMM_WORLD, &flag, &msg, &st));
	say("improbe before the send: flag %d\n", flag);
	OK(MPI_Barrier(MPI_COMM_WORLD));
	OK(MPI_Send(a, 3, MPI_INT, right, 40, MPI_COMM_WORLD));
	OK(MPI_Send(b, 2, MPI_INT, right, 41, MPI_COMM_WORLD));
	OK(MPI_Mprobe(left, 41, MPI_COMM_WORLD, &msg, &st));
	CHECK(msg != MPI_MESSAGE_NULL && st.MPI_SOURCE == left && st.MPI_TAG == 41 && count_of(&st, MPI_INT) == 2, "mprobe status");
	/* A receive posted now cannot take the probed message. */
	int other = -1;
	MPI_Request orq;
	OK(MPI_Irecv(&other, 3, MPI_INT, left, MPI_ANY_TAG, MPI_COMM_WORLD, &orq));
	OK(MPI_Mrecv(r, 2, MPI_INT, &msg, &st));
	CHECK(msg == MPI_MESSAGE_NULL && r[0] == left * 7 && r[1] == left * 7 + 1 && st.MPI_TAG == 41, "mrecv");
	OK(MPI_Wait(&orq, &st));
	CHECK(st.MPI_TAG == 40, "the receive after mprobe got tag %d", st.MPI_TAG);
	say("mprobe and mrecv take the probed message only\n");

	OK(MPI_Send(a, 3, MPI_INT, right, 42, MPI_COMM_WORLD));
	do {
		OK(MPI_Improbe(left, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &msg, &st));
	} while (!flag);
	CHECK(st.MPI_TAG == 42 && count_of(&st, MPI_INT) == 3, "improbe status");
	OK(MPI_Imrecv(r, 3, MPI_INT, &msg, &rq));
	CHECK(msg == MPI_MESSAGE_NULL, "imrecv left the message");
	OK(MPI_Wait(&rq, &st));
	CHECK(r[0] == left && r[2] == left + 2 && st.MPI_SOURCE == left && st.MPI_TAG == 42, "imrecv");
	say("improbe and imrecv\n");

	/* Into a column; the large-count forms. */
	MPI_Datatype col;
	OK(MPI_Type_vector(3, 1, 2, MPI_INT, &col));
	OK(MPI_Type_commit(&col));
	int m[6] = {-1, -1, -1, -1, -1, -1};
	OK(MPI_Send(a, 3, MPI_INT, right, 43, MPI_COMM_WORLD));
	OK(MPI_Mprobe(left, 43, MPI_COMM_WORLD, &msg, &st));
	OK(MPI_Mrecv_c(&m[1], (MPI_Count)1, col, &msg, &st));
	CHECK(m[1] == left && m[3] == left + 1 && m[5] == left + 2 && m[0] == -1 && m[2] == -1, "mrecv into a column");
	CHECK(count_of(&st, col) == 1, "mrecv_c count");
	OK(MPI_Send(a, 3, MPI_INT, right, 44, MPI_COMM_WORLD));
	OK(MPI_Mprobe(left, 44, MPI_COMM_WORLD, &msg, &st));
	for (int i = 0; i < 6; i++) m[i] = -1;
	OK(MPI_Imrecv_c(&m[0], (MPI_Count)1, col, &msg, &rq));
	OK(MPI_Wait(&rq, &st));
	CHECK(m[0] == left && m[2] == left + 1 && m[4] == left + 2 && m[1] == -1, "imrecv into a column");
	say("mrecv_c and imrecv_c into columns\n");

	OK(MPI_Mprobe(MPI_PROC_NULL, 45, MPI_COMM_WORLD, &msg, &st));
	say("mprobe of MPI_PROC_NULL: no_proc %d, source %s, tag %s, count %d\n", msg == MPI_MESSAGE_NO_PROC,
	    src_name(st.MPI_SOURCE), tag_name(st.MPI_TAG), count_of(&st, MPI_INT));
	st.MPI_SOURCE = 77;
	OK(MPI_Mrecv(r, 3, MPI_INT, &msg, &st));
	say("mrecv of no_proc: message null %d, source %s, tag %s, count %d\n", msg == MPI_MESSAGE_NULL,
	    src_name(st.MPI_SOURCE), tag_name(st.MPI_TAG), count_of(&st, MPI_INT));
	OK(MPI_Improbe(MPI_PROC_NULL, 45, MPI_COMM_WORLD, &flag, &msg, &st));
	CHECK(flag && msg == MPI_MESSAGE_NO_PROC, "improbe of MPI_PROC_NULL");
	OK(MPI_Imrecv(r, 3, MPI_INT, &msg, &rq));
	st.MPI_SOURCE = 77;
	OK(MPI_Wait(&rq, &st));
	say("imrecv of no_proc: source %s, tag %s, count %d\n", src_name(st.MPI_SOURCE), tag_name(st.MPI_TAG), count_of(&st, MPI_INT));
	msg = MPI_MESSAGE_NULL;
	int rc = MPI_Mrecv(r, 3, MPI_INT, &msg, &st);
	say("mrecv of MPI_MESSAGE_NULL: class %d\n", cls(rc));
	MPI_Type_free(&col);
}

/* Generalized requests: each function records its calls. */
static int queries, frees, cancels, cancel_complete;

static int query_fn(void *extra, MPI_Status *st)
{
	queries++;
	st->MPI_SOURCE = *(int *)extra;
	st->MPI_TAG = 66;
	st->count_lo = 12;
	st->count_hi_and_cancelled = 0;
	return MPI_SUCCESS;
}

static int free_fn(void *extra)
{
	(void)extra;
	frees++;
	return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
	(void)extra;
	cancels++;
	cancel_complete = complete;
	return MPI_SUCCESS;
}

static void *complete_later(void *req)
{
	usleep(50000);
	MPI_Grequest_complete(*(MPI_Request *)req);
	return NULL;
}

static void grequest(void)
{
	int extra = 5, flag;
	MPI_Request g;
	MPI_Status st;
	OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &extra, &g));
	OK(MPI_Test(&g, &flag, &st));
	say("grequest before complete: flag %d, queries %d\n", flag, queries);
	OK(MPI_Grequest_complete(g));
	OK(MPI_Request_get_status(g, &flag, &st));
	say("get_status of a completed grequest: flag %d, source %d, queries %d, frees %d\n", flag, st.MPI_SOURCE, queries, frees);
	OK(MPI_Wait(&g, &st));
	say("wait of a grequest: source %d, tag %d, count %d, null %d, queries %d, frees %d\n", st.MPI_SOURCE, st.MPI_TAG,
	    count_of(&st, MPI_INT), g == MPI_REQUEST_NULL, queries, frees);

	OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &extra, &g));
	OK(MPI_Cancel(&g));
	say("cancel before complete: cancels %d, complete %d\n", cancels, cancel_complete);
	OK(MPI_Grequest_complete(g));
	OK(MPI_Cancel(&g));
	say("cancel after complete: cancels %d, complete %d\n", cancels, cancel_complete);
	OK(MPI_Wait(&g, MPI_STATUS_IGNORE));

	MPI_Request keep;
	OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &extra, &g));
	keep = g;
	OK(MPI_Request_free(&g));
	/* MPICH 4.0.2 calls free_fn here, before the request completes; MPI calls it after. */
	say("request_free before complete: null %d\n", g == MPI_REQUEST_NULL);
	OK(MPI_Grequest_complete(keep));
	say("complete after request_free: frees %d\n", frees);

	/* Waitany over a grequest that another thread completes and a receive. */
	MPI_Request set[2];
	int x = -1, v = rank;
	OK(MPI_Irecv(&x, 1, MPI_INT, left, 50, MPI_COMM_WORLD, &set[0]));
	OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &extra, &set[1]));
	pthread_t th;
	CHECK(pthread_create(&th, NULL, complete_later, &set[1]) == 0, "pthread_create");
	int idx;
	OK(MPI_Waitany(2, set, &idx, &st));
	pthread_join(th, NULL);
	say("waitany of a receive and a grequest another thread completes: index %d, source %d\n", idx, st.MPI_SOURCE);
	OK(MPI_Barrier(MPI_COMM_WORLD));
	OK(MPI_Send(&v, 1, MPI_INT, right, 50, MPI_COMM_WORLD));
	OK(MPI_Waitany(2, set, &idx, &st));
	CHECK(idx == 0 && x == left && st.MPI_SOURCE == left, "waitany's receive: index %d x %d", idx, x);
	say("grequests: queries %d, frees %d\n", queries, frees);
}

/* large: the large-count forms. */
static void large(void)
{
	int s[5], r[5];
	MPI_Count n = 5;
	MPI_Status st;
	MPI_Request rq[2];
	fill(s, 5, rank * 10);
	if (rank % 2 == 0) {
		OK(MPI_Send_c(s, n, MPI_INT, right, 60, MPI_COMM_WORLD));
		OK(MPI_Recv_c(r, n, MPI_INT, left, 60, MPI_COMM_WORLD, &st));
	} else {
		OK(MPI_Recv_c(r, n, MPI_INT, left, 60, MPI_COMM_WORLD, &st));
		OK(MPI_Send_c(s, n, MPI_INT, right, 60, MPI_COMM_WORLD));
	}
	expect(r, 5, left * 10, "send_c/recv_c");
	OK(MPI_Irecv_c(r, n, MPI_INT, left, 61, MPI_COMM_WORLD, &rq[0]));
	OK(MPI_Isend_c(s, n, MPI_INT, right, 61, MPI_COMM_WORLD, &rq[1]));
	OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
	expect(r, 5, left * 10, "isend_c/irecv_c");
	OK(MPI_Irecv_c(r, n, MPI_INT, left, 62, MPI_COMM_WORLD, &rq[0]));
	OK(MPI_Barrier(MPI_COMM_WORLD));
	OK(MPI_Rsend_c(s, n, MPI_INT, right, 62, MPI_COMM_WORLD));
	OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
	OK(MPI_Irecv_c(r, n, MPI_INT, left, 63, MPI_COMM_WORLD, &rq[0]));
	OK(MPI_Ssend_c(s, n, MPI_INT, right, 63, MPI_COMM_WORLD));
	OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
	expect(r, 5, left * 10, "ssend_c");
	OK(MPI_Sendrecv_c(s, n, MPI_INT, right, 64, r, n, MPI_INT, left, 64, MPI_COMM_WORLD, &st));
	expect(r, 5, left * 10, "sendrecv_c");
	int b[5];
	fill(b, 5, rank * 10);
	OK(MPI_Sendrecv_replace_c(b, n, MPI_INT, right, 65, left, 65, MPI_COMM_WORLD, &st));
	expect(b, 5, left * 10, "sendrecv_replace_c");
	OK(MPI_Isendrecv_c(s, n, MPI_INT, right, 66, r, n, MPI_INT, left, 66, MPI_COMM_WORLD, &rq[0]));
	OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
	expect(r, 5, left * 10, "isendrecv_c");
	fill(b, 5, rank * 10);
	OK(MPI_Isendrecv_replace_c(b, n, MPI_INT, right, 67, left, 67, MPI_COMM_WORLD, &rq[0]));
	OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
	expect(b, 5, left * 10, "isendrecv_replace_c");
	OK(MPI_Irecv_c(r, n, MPI_INT, left, 68, MPI_COMM_WORLD, &rq[0]));
	OK(MPI_Issend_c(s, n, MPI_INT, right, 68, MPI_COMM_WORLD, &rq[1]));
	OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
	OK(MPI_Irecv_c(r, n, MPI_INT, left, 69, MPI_COMM_WORLD, &rq[0]));
	OK(MPI_Barrier(MPI_COMM_WORLD));
	OK(MPI_Irsend_c(s, n, MPI_INT, right, 69, MPI_COMM_WORLD, &rq[1]));
	OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
	expect(r, 5, left * 10, "irsend_c");
	say("send, recv, their modes and sendrecv: large-count forms\n");

	MPI_Request p[5];
	int rr[3][5];
	int bsize = 5 * sizeof(int) + MPI_BSEND_OVERHEAD;
	char *buf = malloc(bsize);
	OK(MPI_Buffer_attach(buf, bsize));
	OK(MPI_Send_init_c(s, n, MPI_INT, right, 70, MPI_COMM_WORLD, &p[0]));
	OK(MPI_Ssend_init_c(s, n, MPI_INT, right, 71, MPI_COMM_WORLD, &p[1]));
	OK(MPI_Bsend_init_c(s, n, MPI_INT, right, 72, MPI_COMM_WORLD, &p[2]));
	OK(MPI_Recv_init_c(rr[0], n, MPI_INT, left, 70, MPI_COMM_WORLD, &p[3]));
	OK(MPI_Recv_init_c(rr[1], n, MPI_INT, left, 71, MPI_COMM_WORLD, &p[4]));
	OK(MPI_Startall(5, p));
	OK(MPI_Recv(rr[2], 5, MPI_INT, left, 72, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
	OK(MPI_Waitall(5, p, MPI_STATUSES_IGNORE));
	for (int k = 0; k < 3; k++) expect(rr[k], 5, left * 10, "init_c");
	MPI_Request rs;
	OK(MPI_Recv_init_c(rr[0], n, MPI_INT, left, 73, MPI_COMM_WORLD, &p[3]));
	OK(MPI_Rsend_init_c(s, n, MPI_INT, right, 73, MPI_COMM_WORLD, &rs));
	OK(MPI_Start(&p[3]));
	OK(MPI_Barrier(MPI_COMM_WORLD));
	OK(MPI_Start(&rs));
	OK(MPI_Wait(&rs, MPI_STATUS_IGNORE));
	OK(MPI_Wait(&p[3], MPI_STATUS_IGNORE));
	for (int k = 0; k < 5; k++) OK(MPI_Request_free(&p[k]));
	OK(MPI_Request_free(&rs));
	void *back;
	int bn;
	OK(MPI_Buffer_detach(&back, &bn));
	free(buf);
	say("send_init_c, ssend_init_c, bsend_init_c, rsend_init_c, recv_init_c\n");

	int rc = MPI_Send_c(s, (MPI_Count)-1, MPI_INT, right, 74, MPI_COMM_WORLD);
	say("send_c of count -1: class %d\n", cls(rc));
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0); /* one write per line: the ranks' lines do not mix */
	int provided;
	MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size < 2 || size > 64) fail("run with 2 to 64 ranks");
	if (provided != MPI_THREAD_MULTIPLE) fail("MPI_THREAD_MULTIPLE is not provided");
	strict = argc > 1 && !strcmp(argv[1], "strict");
	left = (rank + size - 1) % size;
	right = (rank + 1) % size;
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	persistent();
	nulls();
	sets();
	modes();
	bsend();
	mprobe();
	grequest();
	large();
	OK(MPI_Barrier(MPI_COMM_WORLD));
	printf("rank %d: p2p ok\n", rank);
	MPI_Finalize();
	return 0;
}
