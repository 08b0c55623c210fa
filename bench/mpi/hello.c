/* C twin of apps/hello, for side-by-side startup timing against mpirun.
 * Each rank prints rank/size/host/pid, a token goes around the ring (each rank adds its
 * rank), rank 0 checks the sum, then a barrier. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
	int rank, size, len;
	char host[MPI_MAX_PROCESSOR_NAME];
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Get_processor_name(host, &len);
	printf("hello from rank %d of %d on %s (pid %d)\n", rank, size, host, (int)getpid());
	long token = 0;
	if (size > 1) {
		int next = (rank + 1) % size, prev = (rank + size - 1) % size;
		if (rank == 0) {
			MPI_Send(&token, 1, MPI_LONG, next, 0, MPI_COMM_WORLD);
			MPI_Recv(&token, 1, MPI_LONG, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(&token, 1, MPI_LONG, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			token += rank;
			MPI_Send(&token, 1, MPI_LONG, next, 0, MPI_COMM_WORLD);
		}
	}
	if (rank == 0) {
		long want = (long)size * (size - 1) / 2;
		if (token != want) {
			fprintf(stderr, "ring token %ld, want %ld\n", token, want);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		printf("ring token %ld ok\n", token);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
