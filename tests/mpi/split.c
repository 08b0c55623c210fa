/* MPI_Comm_split, checked: even and odd ranks form two communicators, ordered by
 * descending world rank; each checks its new rank and size and the sum of world ranks
 * over its half. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Comm half;
	int color = rank % 2;
	MPI_Comm_split(MPI_COMM_WORLD, color, size - rank, &half);
	int hrank, hsize;
	MPI_Comm_rank(half, &hrank);
	MPI_Comm_size(half, &hsize);
	int members = 0, wantRank = 0, sum = 0, wantSum = 0;
	for (int r = 0; r < size; r++) {
		if (r % 2 != color)
			continue;
		members++;
		wantSum += r;
		if (r > rank)
			wantRank++;
	}
	MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, half);
	if (hsize != members || hrank != wantRank || sum != wantSum) {
		fprintf(stderr, "rank %d: split gave rank %d of %d sum %d, want %d of %d sum %d\n",
			rank, hrank, hsize, sum, wantRank, members, wantSum);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	printf("split ok rank %d color %d rank %d of %d\n", rank, color, hrank, hsize);
	MPI_Comm_free(&half);
	MPI_Finalize();
	return 0;
}
