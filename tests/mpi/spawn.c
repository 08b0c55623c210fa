/* MPI_Comm_spawn of /bin/true from rank 0 of MPI_COMM_WORLD, with MPI_ERRORS_RETURN:
 * each rank prints "rank R: MPI_Comm_spawn returned an error" or "rank R: MPI_Comm_spawn
 * spawned", then finalizes and exits 0. golaunch starts no programs for MPI_Comm_spawn. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
	int rank, err, rc;
	MPI_Comm inter;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	rc = MPI_Comm_spawn("/bin/true", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, &err);
	printf("rank %d: MPI_Comm_spawn %s\n", rank, rc == MPI_SUCCESS ? "spawned" : "returned an error");
	fflush(stdout);
	if (rc == MPI_SUCCESS)
		MPI_Comm_disconnect(&inter);
	MPI_Finalize();
	return 0;
}
