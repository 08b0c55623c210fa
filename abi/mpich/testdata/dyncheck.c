/* dyncheck: partitioned communication (MPI_Psend_init, MPI_Precv_init, MPI_Pready and
 * its range and list forms, MPI_Parrived, with MPI_Start(all), MPI_Wait(all) and
 * MPI_Test) and dynamic processes (MPI_Comm_spawn, MPI_Comm_spawn_multiple,
 * MPI_Comm_get_parent, MPI_Comm_disconnect), which gorma's libmpich.so.12 and MPICH's
 * must agree on. Run with 2 ranks. With "spawn" the program spawns itself with its own
 * arguments, twice: a rank with a parent is a child, told by its parent which spawn made
 * it. Debian's MPICH 4.0.2 fails every MPI_Comm_spawn under its Hydra ("Error in spawn
 * call"), so the spawn lines are checked against fixed answers. Each check aborts on a
 * wrong value; the partitioned lines are the same on both libraries.
 * With "strict" it also checks what Debian's MPICH 4.0.2 does otherwise: that
 * MPI_Parrived reports a partition as soon as it has arrived (MPICH's sends the data
 * once every partition is ready), a receive partitioned otherwise than its send
 * (MPICH's crashes), and gives flag true on an inactive request (MPICH's
 * fails the call), partitioned calls to MPI_PROC_NULL, argument errors,
 * and that a spawn of another program fails with MPI_ERR_SPAWN (gorma spawns the job's
 * own program only). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, strict, spawn;

static void fail(const char *what)
{
	fprintf(stderr, "rank %d: dyncheck: %s\n", rank, what);
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

#define OK(call)                                                                    \
	do {                                                                            \
		int rc_ = (call);                                                           \
		CHECK(rc_ == MPI_SUCCESS, "line %d: %s returned %d", __LINE__, #call, rc_); \
	} while (0)

#define NP 4 /* partitions */
#define PC 3 /* ints per partition */

/* contiguous: rank 0 sends NP partitions of PC ints to rank 1 in two rounds, readying
 * them in reverse order with Pready, Pready_range and Pready_list; rank 1 polls
 * MPI_Parrived until each partition is there. */
static void contiguous(void)
{
	int buf[NP * PC];
	MPI_Request req;
	if (rank == 0)
		OK(MPI_Psend_init(buf, NP, PC, MPI_INT, 1, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
	else
		OK(MPI_Precv_init(buf, NP, PC, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
	for (int round = 0; round < 2; round++) {
		if (rank == 1)
			memset(buf, 0xff, sizeof buf);
		else
			for (int i = 0; i < NP * PC; i++)
				buf[i] = 1000 * round + i;
		if (round == 0)
			OK(MPI_Start(&req));
		else
			OK(MPI_Startall(1, &req));
		if (rank == 0) {
			int list[2] = {1, 0};
			OK(MPI_Pready(3, req));
			OK(MPI_Pready_range(2, 2, req));
			OK(MPI_Pready_list(2, list, req));
			if (round == 0) {
				OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
			} else {
				int idx = -1;
				OK(MPI_Waitany(1, &req, &idx, MPI_STATUS_IGNORE));
				CHECK(idx == 0 && req != MPI_REQUEST_NULL, "waitany: index %d", idx);
			}
		} else {
			int seen = 0, got[NP] = {0};
			while (seen < NP)
				for (int p = 0; p < NP; p++) {
					int flag = 0;
					if (got[p])
						continue;
					OK(MPI_Parrived(req, p, &flag));
					if (flag) {
						for (int i = 0; i < PC; i++)
							CHECK(buf[p * PC + i] == 1000 * round + p * PC + i, "round %d partition %d element %d: %d", round, p, i, buf[p * PC + i]);
						got[p] = 1;
						seen++;
					}
				}
			MPI_Status st;
			int flag = 0;
			while (!flag)
				OK(MPI_Test(&req, &flag, &st));
			int n;
			OK(MPI_Get_count(&st, MPI_INT, &n));
			CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == 7 && n == NP * PC, "status: source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG, n);
		}
		printf("dyn rank %d partitioned contiguous round %d ok\n", rank, round);
	}
	int flag = 0;
	if (rank == 1 && strict) { /* Debian's MPICH 4.0.2 fails MPI_Parrived on an inactive request */
		OK(MPI_Parrived(req, 0, &flag)); /* an inactive request: every partition is there */
		CHECK(flag, "parrived on an inactive request: %d", flag);
	}
	OK(MPI_Request_free(&req));
	CHECK(req == MPI_REQUEST_NULL, "request_free left the handle");
}

/* derived: the element is a vector (every other int of 2). Rank 0 sends 2 partitions
 * of 2 elements, rank 1 receives them as 2 of 2 (tag 11) and, strict, 4 of 1 (tag 12),
 * which overlap the send's partitions otherwise; two pairs
 * of requests, tags 11 and 12, initialized in opposite orders, are matched by tag. */
static void derived(void)
{
	MPI_Datatype vec;
	OK(MPI_Type_vector(2, 1, 2, MPI_INT, &vec));
	OK(MPI_Type_commit(&vec));
	int a[16], b[16];
	MPI_Request rs[2];
	if (rank == 0) {
		for (int i = 0; i < 16; i++)
			a[i] = i, b[i] = 100 + i;
		OK(MPI_Psend_init(a, 2, 2, vec, 1, 11, MPI_COMM_WORLD, MPI_INFO_NULL, &rs[0]));
		OK(MPI_Psend_init(b, 2, 2, vec, 1, 12, MPI_COMM_WORLD, MPI_INFO_NULL, &rs[1]));
	} else {
		memset(a, 0xff, sizeof a);
		memset(b, 0xff, sizeof b);
		/* Debian's MPICH 4.0.2 crashes on a receive partitioned otherwise than its send */
		OK(MPI_Precv_init(b, strict ? 4 : 2, strict ? 1 : 2, vec, 0, 12, MPI_COMM_WORLD, MPI_INFO_NULL, &rs[1]));
		OK(MPI_Precv_init(a, 2, 2, vec, 0, 11, MPI_COMM_WORLD, MPI_INFO_NULL, &rs[0]));
	}
	OK(MPI_Startall(2, rs));
	if (rank == 0) {
		OK(MPI_Pready_range(0, 1, rs[1]));
		OK(MPI_Pready(1, rs[0]));
		OK(MPI_Pready(0, rs[0]));
	}
	OK(MPI_Waitall(2, rs, MPI_STATUSES_IGNORE));
	if (rank == 1) {
		/* Both sides see 4 vectors of extent 3 ints, each the ints 3e and 3e+2: the
		 * sender's partition i holds vectors 2i and 2i+1, the receiver's j vector j. */
		int exp[16];
		memset(exp, 0xff, sizeof exp);
		for (int e = 0; e < 4; e++)
			exp[3 * e] = 3 * e, exp[3 * e + 2] = 3 * e + 2;
		for (int i = 0; i < 16; i++) {
			CHECK(a[i] == exp[i], "derived tag 11: int %d is %d, want %d", i, a[i], exp[i]);
			int eb = exp[i] == -1 ? -1 : exp[i] + 100;
			CHECK(b[i] == eb, "derived tag 12: int %d is %d, want %d", i, b[i], eb);
		}
	}
	OK(MPI_Request_free(&rs[0]));
	OK(MPI_Request_free(&rs[1]));
	OK(MPI_Type_free(&vec));
	printf("dyn rank %d partitioned derived ok\n", rank);
}

/* early (strict): rank 1 sees partition 2 arrive while rank 0 has not readied the
 * others, which it does only after a barrier that follows rank 1's check. */
static void early(void)
{
	int buf[NP * PC];
	MPI_Request req;
	if (rank == 0) {
		for (int i = 0; i < NP * PC; i++)
			buf[i] = 5 * i;
		OK(MPI_Psend_init(buf, NP, PC, MPI_INT, 1, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
		OK(MPI_Start(&req));
		OK(MPI_Pready(2, req));
		OK(MPI_Barrier(MPI_COMM_WORLD));
		int list[3] = {0, 3, 1};
		OK(MPI_Pready_list(3, list, req));
	} else {
		memset(buf, 0, sizeof buf);
		OK(MPI_Precv_init(buf, NP, PC, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
		OK(MPI_Start(&req));
		int flag = 0;
		while (!flag)
			OK(MPI_Parrived(req, 2, &flag));
		CHECK(buf[2 * PC] == 5 * 2 * PC, "early partition 2: %d", buf[2 * PC]);
		OK(MPI_Parrived(req, 0, &flag));
		CHECK(!flag, "partition 0 arrived before its MPI_Pready");
		OK(MPI_Barrier(MPI_COMM_WORLD));
	}
	OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
	if (rank == 1)
		for (int i = 0; i < NP * PC; i++)
			CHECK(buf[i] == 5 * i, "early element %d: %d", i, buf[i]);
	/* errors: a partition out of range, Pready on a receive, Parrived on a send */
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	int cls, flag;
	if (rank == 0) {
		OK(MPI_Start(&req));
		MPI_Error_class(MPI_Pready(NP, req), &cls);
		CHECK(cls == MPI_ERR_ARG, "pready of partition %d: class %d", NP, cls);
		MPI_Error_class(MPI_Parrived(req, 0, &flag), &cls);
		CHECK(cls == MPI_ERR_REQUEST, "parrived on a send: class %d", cls);
		OK(MPI_Pready_range(0, NP - 1, req));
		MPI_Error_class(MPI_Pready(0, req), &cls);
		CHECK(cls == MPI_ERR_ARG, "pready twice: class %d", cls);
	} else {
		OK(MPI_Start(&req));
		MPI_Error_class(MPI_Pready(0, req), &cls);
		CHECK(cls == MPI_ERR_REQUEST, "pready on a receive: class %d", cls);
	}
	OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
	OK(MPI_Request_free(&req));
	/* MPI_PROC_NULL: the round completes once every partition is ready */
	OK(MPI_Psend_init(buf, NP, PC, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
	OK(MPI_Start(&req));
	OK(MPI_Pready_range(0, NP - 1, req));
	OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
	OK(MPI_Request_free(&req));
	/* a spawn of another program */
	MPI_Comm ic = MPI_COMM_NULL;
	int codes[2] = {-1, -1};
	MPI_Error_class(MPI_Comm_spawn("/bin/true", MPI_ARGV_NULL, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &ic, codes), &cls);
	CHECK(cls == MPI_ERR_SPAWN && ic == MPI_COMM_NULL, "spawn of /bin/true: class %d", cls);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* talk: over the spawn intercommunicator ic, each parent rank sends its rank's child
 * which and its own rank; each child answers; then both sides merge and sum. */
static void talk(MPI_Comm ic, int child, int which)
{
	int rsize, msg[2];
	OK(MPI_Comm_remote_size(ic, &rsize));
	CHECK(rsize == 2, "remote size %d", rsize);
	if (!child) {
		msg[0] = which, msg[1] = rank;
		OK(MPI_Send(msg, 2, MPI_INT, rank, 1, ic));
		OK(MPI_Recv(msg, 2, MPI_INT, rank, 2, ic, MPI_STATUS_IGNORE));
		CHECK(msg[0] == 100 * which + rank && msg[1] == rank, "answer %d %d", msg[0], msg[1]);
	} else {
		OK(MPI_Recv(msg, 2, MPI_INT, rank, 1, ic, MPI_STATUS_IGNORE));
		CHECK(msg[1] == rank, "parent rank %d", msg[1]);
		which = msg[0];
		msg[0] = 100 * which + rank, msg[1] = rank;
		OK(MPI_Send(msg, 2, MPI_INT, rank, 2, ic));
	}
	MPI_Comm all;
	int arank, asize, sum = 0, one;
	OK(MPI_Intercomm_merge(ic, child, &all));
	OK(MPI_Comm_rank(all, &arank));
	OK(MPI_Comm_size(all, &asize));
	CHECK(asize == 4 && arank == rank + 2 * child, "merged rank %d of %d", arank, asize);
	one = arank;
	OK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, all));
	CHECK(sum == 6, "sum %d", sum);
	OK(MPI_Comm_free(&all));
	if (child)
		printf("dyn child of spawn %d rank %d ok\n", which, rank);
	else
		printf("dyn rank %d spawn %d ok\n", rank, which);
}

static void child(MPI_Comm parent)
{
	talk(parent, 1, 0);
	MPI_Comm again;
	OK(MPI_Comm_get_parent(&again));
	CHECK(again == parent, "get_parent gave another handle");
	OK(MPI_Comm_disconnect(&parent));
	CHECK(parent == MPI_COMM_NULL, "disconnect left the handle");
	OK(MPI_Comm_get_parent(&again));
	CHECK(again == MPI_COMM_NULL, "get_parent after disconnect");
}

static void parent(char **argv)
{
	MPI_Comm ic;
	int codes[2] = {-1, -1};
	char **args = argv[1] ? &argv[1] : MPI_ARGV_NULL;
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	int rc = MPI_Comm_spawn(argv[0], args, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &ic, codes);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
	if (rc != MPI_SUCCESS) { /* a launcher that cannot spawn: say why and end */
		char msg[MPI_MAX_ERROR_STRING];
		int cls, n;
		MPI_Error_class(rc, &cls);
		MPI_Error_string(rc, msg, &n);
		printf("dyn rank %d spawn refused: class %d: %s\n", rank, cls, msg);
		CHECK(cls == MPI_ERR_SPAWN && codes[0] == MPI_ERR_SPAWN && codes[1] == MPI_ERR_SPAWN, "spawn failed with class %d, errcodes %d %d", cls, codes[0], codes[1]);
		return;
	}
	CHECK(codes[0] == MPI_SUCCESS && codes[1] == MPI_SUCCESS, "errcodes %d %d", codes[0], codes[1]);
	talk(ic, 0, 1);
	OK(MPI_Comm_disconnect(&ic));
	CHECK(ic == MPI_COMM_NULL, "disconnect left the handle");

	char *cmds[2] = {argv[0], argv[0]};
	char **argvs[2] = {args, args};
	int np[2] = {1, 1};
	MPI_Info infos[2] = {MPI_INFO_NULL, MPI_INFO_NULL};
	OK(MPI_Comm_spawn_multiple(2, cmds, argv[1] ? argvs : MPI_ARGVS_NULL, np, infos, 1, MPI_COMM_WORLD, &ic, MPI_ERRCODES_IGNORE));
	talk(ic, 0, 2);
	OK(MPI_Comm_disconnect(&ic));
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0); /* one write per line: the ranks' lines do not mix */
	MPI_Comm par;
	MPI_Init(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		strict |= !strcmp(argv[i], "strict");
		spawn |= !strcmp(argv[i], "spawn");
	}
	OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
	OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
	CHECK(size == 2, "run with 2 ranks, not %d", size);
	OK(MPI_Comm_get_parent(&par));
	if (par != MPI_COMM_NULL) {
		child(par);
	} else {
		contiguous();
		derived();
		if (strict)
			early();
		if (spawn)
			parent(argv);
	}
	MPI_Finalize();
	return 0;
}
