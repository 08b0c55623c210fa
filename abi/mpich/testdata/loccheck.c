/* loccheck: MPI_MINLOC and MPI_MAXLOC on MPICH's pair types, and the pair types as
 * datatypes of messages. It prints the same lines on gorma's libmpich.so.12 and on
 * MPICH's. Run with 2 or more ranks. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int rank, size;

struct di { double v; int i; };
struct fi { float v; int i; };
struct li { long v; int i; };
struct si { short v; int i; };

#define N 4

/* Each rank's pair j: a value that ties across ranks at j = 0, and an index that says
 * which rank sent it. */
static double val(int r, int j) { return j == 0 ? 7.0 : (double)((r * 5 + j * 3) % 7) - 3.0; }

static void check_di(MPI_Op op, const char *name)
{
	struct di in[N], out[N];
	for (int j = 0; j < N; j++) {
		in[j].v = val(rank, j);
		in[j].i = rank * 10 + j;
	}
	MPI_Allreduce(in, out, N, MPI_DOUBLE_INT, op, MPI_COMM_WORLD);
	if (rank == 0) {
		printf("allreduce double_int %s:", name);
		for (int j = 0; j < N; j++) printf(" (%g,%d)", out[j].v, out[j].i);
		printf("\n");
	}
	memset(out, 0, sizeof out);
	MPI_Reduce(in, out, N, MPI_DOUBLE_INT, op, size - 1, MPI_COMM_WORLD);
	if (rank == size - 1) {
		printf("reduce double_int %s at %d:", name, rank);
		for (int j = 0; j < N; j++) printf(" (%g,%d)", out[j].v, out[j].i);
		printf("\n");
	}
	MPI_Request req;
	MPI_Iallreduce(MPI_IN_PLACE, in, N, MPI_DOUBLE_INT, op, MPI_COMM_WORLD, &req);
	MPI_Wait(&req, MPI_STATUS_IGNORE);
	if (rank == 0) {
		printf("iallreduce in place double_int %s:", name);
		for (int j = 0; j < N; j++) printf(" (%g,%d)", in[j].v, in[j].i);
		printf("\n");
	}
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0); /* one write per line: the ranks' lines do not mix */
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);

	check_di(MPI_MAXLOC, "maxloc");
	check_di(MPI_MINLOC, "minloc");

	struct fi fin = {(float)(rank % 2), rank}, fout;
	MPI_Allreduce(&fin, &fout, 1, MPI_FLOAT_INT, MPI_MAXLOC, MPI_COMM_WORLD);
	if (rank == 0) printf("float_int maxloc: (%g,%d)\n", fout.v, fout.i);
	struct li lin = {(1L << 40) + (rank == size - 1), rank}, lout;
	MPI_Allreduce(&lin, &lout, 1, MPI_LONG_INT, MPI_MAXLOC, MPI_COMM_WORLD);
	if (rank == 0) printf("long_int maxloc: (%ld,%d)\n", lout.v, lout.i);
	struct si sin = {(short)(-rank), rank}, sout;
	MPI_Allreduce(&sin, &sout, 1, MPI_SHORT_INT, MPI_MINLOC, MPI_COMM_WORLD);
	if (rank == 0) printf("short_int minloc: (%d,%d)\n", sout.v, sout.i);
	int iin[2] = {rank == 1 ? 9 : 3, rank}, iout[2];
	MPI_Allreduce(iin, iout, 1, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD);
	if (rank == 0) printf("2int maxloc: (%d,%d)\n", iout[0], iout[1]);
	double din[2] = {-(double)rank, (double)rank}, dout[2];
	MPI_Allreduce(din, dout, 1, MPI_2DOUBLE_PRECISION, MPI_MINLOC, MPI_COMM_WORLD);
	if (rank == 0) printf("2double_precision minloc: (%g,%g)\n", dout[0], dout[1]);

	/* MPI_Reduce_local: inout takes the lower value, ties the lower index. */
	struct di a[2] = {{1.0, 5}, {2.0, 1}}, b[2] = {{1.0, 3}, {0.5, 9}};
	MPI_Reduce_local(a, b, 2, MPI_DOUBLE_INT, MPI_MINLOC);
	if (rank == 0) printf("reduce_local minloc: (%g,%d) (%g,%d)\n", b[0].v, b[0].i, b[1].v, b[1].i);

	/* The struct pairs as message datatypes: the padding after each int stays. */
	int sz;
	MPI_Aint lb, ext;
	char name[MPI_MAX_OBJECT_NAME];
	int n;
	MPI_Datatype ts[] = {MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT, MPI_SHORT_INT, MPI_2INT, MPI_LONG_DOUBLE_INT};
	for (int k = 0; k < 6; k++) {
		MPI_Type_size(ts[k], &sz);
		MPI_Type_get_extent(ts[k], &lb, &ext);
		MPI_Type_get_name(ts[k], name, &n);
		if (rank == 0) printf("%s: size %d lb %ld extent %ld\n", name, sz, (long)lb, (long)ext);
	}
	if (rank < 2) {
		struct di m[3];
		memset(m, 0xab, sizeof m);
		if (rank == 0) {
			for (int j = 0; j < 3; j++) { m[j].v = j + 0.5; m[j].i = -j; }
			MPI_Send(m, 3, MPI_DOUBLE_INT, 1, 4, MPI_COMM_WORLD);
		} else {
			MPI_Status st;
			int count;
			MPI_Recv(m, 3, MPI_DOUBLE_INT, 0, 4, MPI_COMM_WORLD, &st);
			MPI_Get_count(&st, MPI_DOUBLE_INT, &count);
			unsigned char pad = ((unsigned char *)&m[1])[12];
			printf("recv double_int: count %d (%g,%d) (%g,%d) (%g,%d) padding %#x\n", count,
				m[0].v, m[0].i, m[1].v, m[1].i, m[2].v, m[2].i, pad);
		}
	}

	/* MINLOC on a type that is no pair fails with MPI_ERR_OP. */
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	double x = 1, y;
	int rc = MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_MINLOC, MPI_COMM_WORLD);
	int class;
	MPI_Error_class(rc, &class);
	if (rank == 0) printf("minloc on MPI_DOUBLE: class %d (MPI_ERR_OP %d)\n", class, MPI_ERR_OP);
	MPI_Finalize();
	return 0;
}
