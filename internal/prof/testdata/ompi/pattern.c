/* The communication pattern of the ompi testdata: a ring of Send/Recv, an
 * Allreduce, an Alltoallv and an MPI_Put to the right neighbour under Fence.
 * Build: mpicc.openmpi -O2 -o pattern pattern.c (see README). */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv) {
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int right = (rank + 1) % size, left = (rank + size - 1) % size;

	/* Ring: 1000 bytes to the right, 3 times. */
	char buf[1000] = {0}, rbuf[1000];
	for (int i = 0; i < 3; i++) {
		if (rank % 2 == 0) {
			MPI_Send(buf, 1000, MPI_BYTE, right, 7, MPI_COMM_WORLD);
			MPI_Recv(rbuf, 1000, MPI_BYTE, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(rbuf, 1000, MPI_BYTE, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(buf, 1000, MPI_BYTE, right, 7, MPI_COMM_WORLD);
		}
	}

	/* Allreduce of 256 doubles. */
	double v[256], s[256];
	for (int i = 0; i < 256; i++) v[i] = rank + i;
	MPI_Allreduce(v, s, 256, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);

	/* Alltoallv: rank r sends 8*(r+1)*(d+1) bytes to rank d. */
	int *sc = malloc(size * sizeof(int)), *sd = malloc(size * sizeof(int));
	int *rc = malloc(size * sizeof(int)), *rd = malloc(size * sizeof(int));
	int st = 0, rt = 0;
	for (int d = 0; d < size; d++) {
		sc[d] = 8 * (rank + 1) * (d + 1); sd[d] = st; st += sc[d];
		rc[d] = 8 * (d + 1) * (rank + 1); rd[d] = rt; rt += rc[d];
	}
	char *sb = calloc(st, 1), *rb = calloc(rt, 1);
	MPI_Alltoallv(sb, sc, sd, MPI_BYTE, rb, rc, rd, MPI_BYTE, MPI_COMM_WORLD);

	/* Put 512 bytes into the right neighbour's window under Fence. */
	char *wbuf;
	MPI_Win win;
	MPI_Win_allocate(4096, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &wbuf, &win);
	MPI_Win_fence(0, win);
	MPI_Put(buf, 512, MPI_BYTE, right, 0, 512, MPI_BYTE, win);
	MPI_Win_fence(0, win);
	MPI_Win_free(&win);

	free(sc); free(sd); free(rc); free(rd); free(sb); free(rb);
	MPI_Finalize();
	return 0;
}
