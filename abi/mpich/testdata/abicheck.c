/* abicheck: MPI semantics that gorma's libmpich.so.12 and MPICH's must agree on. It
 * prints one line per check, the same on both libraries, except the "library" line.
 * With "rma" it checks the one-sided calls instead; with "fatal" it makes an invalid call
 * under MPI_ERRORS_ARE_FATAL; with "fork" a child of fork calls MPI; with "absent" it
 * calls functions that gorma defines but does not cover. Run with 2 ranks. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int rank, size;

static void say(const char *what, int code)
{
	int class;
	MPI_Error_class(code, &class);
	if (rank == 0) printf("%s: class %d\n", what, class);
}

static int handled, handled_class;
static MPI_Comm handled_comm;

static void on_error(MPI_Comm *comm, int *code, ...)
{
	handled++;
	handled_comm = *comm;
	MPI_Error_class(*code, &handled_class);
}

static int deletes;

static int count_delete(MPI_Comm comm, int key, void *val, void *extra)
{
	(void)comm; (void)key; (void)val;
	deletes += *(int *)extra;
	return MPI_SUCCESS;
}

static void isum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	(void)dt;
	for (int i = 0; i < *len; i++) ((int *)inout)[i] += 2 * ((int *)in)[i];
}

/* rma checks the one-sided calls: Put, Accumulate and Fence; Fetch_and_op,
 * Compare_and_swap and passive target on the caller's memory; Post, Start, Complete
 * and Wait. */
static void rma(void)
{
	double *base;
	MPI_Win win;
	MPI_Win_allocate(4 * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
	for (int i = 0; i < 4; i++) base[i] = 0;
	MPI_Win_fence(0, win);
	double v[2] = {1 + rank, 2 + rank};
	MPI_Put(v, 2, MPI_DOUBLE, (rank + 1) % size, 0, 2, MPI_DOUBLE, win);
	MPI_Accumulate(v, 2, MPI_DOUBLE, 0, 2, 2, MPI_DOUBLE, MPI_SUM, win);
	MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
	if (rank == 0) printf("window after put and accumulate: %g %g %g %g\n", base[0], base[1], base[2], base[3]);
	long long cnt = 0, one = 1, old = -1, got = -1;
	MPI_Win cw;
	MPI_Win_create(&cnt, sizeof cnt, sizeof cnt, MPI_INFO_NULL, MPI_COMM_WORLD, &cw);
	MPI_Win_lock_all(0, cw);
	MPI_Fetch_and_op(&one, &old, MPI_LONG_LONG, 0, 0, MPI_SUM, cw);
	MPI_Win_flush(0, cw);
	MPI_Win_unlock_all(cw);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, cw);
	MPI_Get(&got, 1, MPI_LONG_LONG, 0, 0, 1, MPI_LONG_LONG, cw);
	MPI_Win_unlock(0, cw);
	if (rank == 0) printf("counter after fetch_and_op: %lld\n", got);
	MPI_Barrier(MPI_COMM_WORLD); /* every Get before any swap */
	long long cmp = size, swap = 1000 + rank;
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, cw);
	MPI_Compare_and_swap(&swap, &cmp, &old, MPI_LONG_LONG, 0, 0, cw);
	MPI_Win_unlock(0, cw);
	int won = old == size, winners;
	MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0) printf("compare_and_swap winners: %d, counter %s\n", winners, cnt >= 1000 ? "swapped" : "not swapped");
	MPI_Group world_group, peer;
	MPI_Comm_group(MPI_COMM_WORLD, &world_group);
	int other = 1 - rank;
	MPI_Group_incl(world_group, 1, &other, &peer);
	if (rank == 0) {
		MPI_Win_post(peer, 0, win);
		MPI_Win_wait(win);
		printf("after post and wait: %g\n", base[0]);
	} else if (rank == 1) {
		double x = 42;
		MPI_Win_start(peer, 0, win);
		MPI_Put(&x, 1, MPI_DOUBLE, 0, 0, 1, MPI_DOUBLE, win);
		MPI_Win_complete(win);
	}
	MPI_Group_free(&peer);
	MPI_Group_free(&world_group);
	MPI_Win_free(&cw);
	MPI_Win_free(&win);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0); /* one write per line: the ranks' lines do not mix */
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	char lib[MPI_MAX_LIBRARY_VERSION_STRING];
	int n;
	MPI_Get_library_version(lib, &n);
	lib[strcspn(lib, " \t\n")] = 0;
	if (rank == 0) printf("library: %s\n", lib);

	if (argc > 1 && !strcmp(argv[1], "fatal")) {
		int x = 0;
		MPI_Send(&x, 1, MPI_INT, 99, 0, MPI_COMM_WORLD);
		printf("fatal: returned\n");
		MPI_Finalize();
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "rma")) {
		rma();
		MPI_Finalize();
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "absent")) {
		/* Ports are defined but not covered by gorma: the call fails with
		 * MPI_ERR_UNSUPPORTED_OPERATION through the communicator's handler. */
		MPI_Comm inter;
		MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
		int rc = MPI_Comm_accept("port", MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter);
		int class;
		char msg[MPI_MAX_ERROR_STRING];
		MPI_Error_class(rc, &class);
		MPI_Error_string(rc, msg, &n);
		if (rank == 0) printf("absent: class %d, unsupported %d, message %s MPI_Comm_accept\n", class,
			class == MPI_ERR_UNSUPPORTED_OPERATION, strstr(msg, "MPI_Comm_accept") ? "names" : "does not name");
		fflush(stdout);
		MPI_Barrier(MPI_COMM_WORLD); /* rank 0 has printed before any rank ends the job */
		/* With no communicator, the world's handler: fatal by default. */
		MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
		char port[MPI_MAX_PORT_NAME];
		MPI_Open_port(MPI_INFO_NULL, port);
		printf("absent: returned\n");
		MPI_Finalize();
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "fork")) {
		if (rank == 0) {
			pid_t pid = fork();
			if (pid == 0) {
				int r;
				_exit(MPI_Comm_rank(MPI_COMM_WORLD, &r));
			}
			int st;
			waitpid(pid, &st, 0);
			printf("fork child: exit %d\n", WEXITSTATUS(st));
		}
		MPI_Finalize();
		return 0;
	}

	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	int x = 7, rc;
	rc = MPI_Send(&x, 1, MPI_INT, 99, 0, MPI_COMM_WORLD);
	say("send to rank 99", rc);
	char msg[MPI_MAX_ERROR_STRING];
	MPI_Error_string(rc, msg, &n);
	if (rank == 0) printf("its message %s MPI_Send\n", strstr(msg, "MPI_Send") ? "names" : "does not name");
	rc = MPI_Send(&x, -1, MPI_INT, 1, 0, MPI_COMM_WORLD);
	say("send count -1", rc);
	rc = MPI_Send(&x, 1, (MPI_Datatype)0x12345, 1, 0, MPI_COMM_WORLD);
	say("send datatype 0x12345", rc);
	rc = MPI_Bcast(&x, 1, MPI_INT, size, MPI_COMM_WORLD);
	say("bcast root size", rc);
	MPI_Comm dup, freed;
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	freed = dup;
	MPI_Comm_free(&dup);
	say("free leaves MPI_COMM_NULL", dup == MPI_COMM_NULL ? MPI_SUCCESS : MPI_ERR_OTHER);
	rc = MPI_Barrier(freed);
	say("barrier on a freed communicator", rc);

	/* A user error handler. */
	MPI_Errhandler eh;
	MPI_Comm_create_errhandler(on_error, &eh);
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	MPI_Comm_set_errhandler(dup, eh);
	MPI_Errhandler_free(&eh);
	rc = MPI_Send(&x, 1, MPI_INT, 99, 0, dup);
	say("send to rank 99 with a user handler", rc);
	if (rank == 0) printf("the handler ran %d time(s), class %d, on %s\n", handled, handled_class, handled_comm == dup ? "the communicator" : "another communicator");
	MPI_Comm_free(&dup);

	/* An attribute: copied by MPI_Comm_dup, deleted by MPI_Comm_free. */
	int key, one = 1, value = 42, *got, flag;
	MPI_Comm a, b;
	MPI_Comm_create_keyval(MPI_COMM_DUP_FN, count_delete, &key, &one);
	MPI_Comm_dup(MPI_COMM_WORLD, &a);
	MPI_Comm_set_attr(a, key, &value);
	MPI_Comm_dup(a, &b);
	MPI_Comm_get_attr(b, key, &got, &flag);
	if (rank == 0) printf("attribute on the copy: flag %d, value %d\n", flag, flag ? *got : -1);
	MPI_Comm_free(&a);
	MPI_Comm_free(&b);
	MPI_Comm_free_keyval(&key);
	if (rank == 0) printf("attribute deletes: %d, keyval %s\n", deletes, key == MPI_KEYVAL_INVALID ? "invalid" : "valid");

	/* A user operation and a derived datatype. */
	int in[4] = {rank, rank, rank, rank}, out[4];
	MPI_Op op;
	MPI_Op_create(isum, 1, &op);
	rc = MPI_Allreduce(in, out, 4, MPI_INT, op, MPI_COMM_WORLD);
	say("allreduce with a user op", rc);
	if (rank == 0) printf("user op result: %d %d\n", out[0], out[3]);
	MPI_Op_free(&op);
	double m[4][3], col[4];
	MPI_Datatype colt;
	MPI_Type_vector(4, 1, 3, MPI_DOUBLE, &colt);
	MPI_Type_commit(&colt);
	if (rank == 0) {
		for (int i = 0; i < 4; i++)
			for (int j = 0; j < 3; j++) m[i][j] = 10 * i + j;
		MPI_Send(&m[0][1], 1, colt, 1, 5, MPI_COMM_WORLD);
		MPI_Status st;
		MPI_Recv(col, 4, MPI_DOUBLE, 1, 6, MPI_COMM_WORLD, &st);
		MPI_Get_count(&st, MPI_DOUBLE, &n);
		printf("column back: %g %g %g %g, count %d, source %d, tag %d\n", col[0], col[1], col[2], col[3], n, st.MPI_SOURCE, st.MPI_TAG);
	} else if (rank == 1) {
		MPI_Recv(col, 4, MPI_DOUBLE, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		MPI_Send(col, 4, MPI_DOUBLE, 0, 6, MPI_COMM_WORLD);
	}
	MPI_Type_free(&colt);
	/* A message longer than the receive: truncated. */
	if (rank == 0) {
		int big[8] = {0};
		MPI_Send(big, 8, MPI_INT, 1, 7, MPI_COMM_WORLD);
	} else if (rank == 1) {
		int small[2];
		rc = MPI_Recv(small, 2, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	}
	MPI_Bcast(&rc, 1, MPI_INT, 1, MPI_COMM_WORLD);
	say("truncated receive", rc);
	MPI_Status st;
	rc = MPI_Recv(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st);
	MPI_Get_count(&st, MPI_INT, &n);
	if (rank == 0) printf("receive from MPI_PROC_NULL: rc %d source %d tag %d count %d\n", rc, st.MPI_SOURCE, st.MPI_TAG, n);
	MPI_Finalize();
	return 0;
}
