/* A hang golaunch can see only through PMI: after MPI_Init every rank prints "ready RANK
 * PID"; rank 1 calls MPI_Finalize at once, whose PMI fence waits for the others, while
 * rank 0 waits in MPI_Recv for a message from rank 1 that never comes. Run it with 2
 * ranks. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
	int rank, v = 0;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	printf("ready %d %d\n", rank, (int)getpid());
	fflush(stdout);
	if (rank != 1)
		MPI_Recv(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Finalize();
	return 0;
}
