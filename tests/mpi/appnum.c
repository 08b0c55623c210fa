/* MPI_APPNUM check for golaunch's PMI-1 service under MPMD (golaunch -n 2 ./a : -n 2 ./b):
 * each rank reads its program's number (MPICH takes it from PMI's get_appnum), the ranks
 * of every program sum them in one MPI_Allreduce over MPI_COMM_WORLD, and each prints
 * "appnum rank R of N app A sum S". */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
	int rank, size, flag = 0, *app = NULL;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &app, &flag);
	if (!flag) {
		fprintf(stderr, "rank %d: MPI_APPNUM is not set\n", rank);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	long mine = *app, sum = 0;
	MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	printf("appnum rank %d of %d app %d sum %ld\n", rank, size, *app, sum);
	MPI_Finalize();
	return 0;
}
