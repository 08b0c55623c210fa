/* Prints "session RANK PID SID PGRP" after MPI_Init: whether the launcher started the
 * rank in a session (SID == PID) and a process group (PGRP == PID) of its own. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
	int rank;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	printf("session %d %d %d %d\n", rank, (int)getpid(), (int)getsid(0), (int)getpgrp());
	fflush(stdout);
	MPI_Finalize();
	return 0;
}
