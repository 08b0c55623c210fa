/* hang: a deadlock for golaunch's hang report. Rank 0 waits in MPI_Recv for a message
 * that rank 1, waiting in MPI_Barrier, never sends. */
#include <mpi.h>

int main(int argc, char **argv)
{
	int rank, x = 0;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (rank == 0)
		MPI_Recv(&x, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	else
		MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
