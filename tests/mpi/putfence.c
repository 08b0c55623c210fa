/* MPI_Put with MPI_Win_fence, checked: each rank puts its rank into slot rank of every
 * other rank's window, fences, and checks that slot r holds r everywhere. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int *base;
	MPI_Win win;
	MPI_Win_allocate(size * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
	for (int i = 0; i < size; i++)
		base[i] = -1;
	MPI_Win_fence(0, win);
	for (int t = 0; t < size; t++)
		MPI_Put(&rank, 1, MPI_INT, t, rank, 1, MPI_INT, win);
	MPI_Win_fence(0, win);
	for (int i = 0; i < size; i++) {
		if (base[i] != i) {
			fprintf(stderr, "rank %d: slot %d holds %d, want %d\n", rank, i, base[i], i);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
	MPI_Win_fence(0, win);
	MPI_Win_free(&win);
	printf("putfence ok rank %d of %d\n", rank, size);
	MPI_Finalize();
	return 0;
}
