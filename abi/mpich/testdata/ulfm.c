/* ulfm: the survivors of a killed rank recover with MPICH's MPIX_ calls. Run with 3
 * ranks under golaunch --ft: rank 2 kills itself, the others see the failure, revoke,
 * acknowledge, agree and shrink, then reduce over the survivors. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	int rank, size, class, rc;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == size - 1) raise(SIGKILL);
	int x = 1, sum = 0;
	do { /* until the failure shows */
		rc = MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	} while (rc == MPI_SUCCESS);
	MPI_Error_class(rc, &class);
	printf("rank %d: allreduce failed: %s\n", rank,
	       class == MPIX_ERR_PROC_FAILED ? "MPIX_ERR_PROC_FAILED" : class == MPIX_ERR_REVOKED ? "MPIX_ERR_REVOKED" : "another class");
	MPIX_Comm_revoke(MPI_COMM_WORLD);
	MPIX_Comm_failure_ack(MPI_COMM_WORLD);
	MPI_Group acked;
	int n;
	MPIX_Comm_failure_get_acked(MPI_COMM_WORLD, &acked);
	MPI_Group_size(acked, &n);
	MPI_Group_free(&acked);
	int flag = 1;
	rc = MPIX_Comm_agree(MPI_COMM_WORLD, &flag);
	MPI_Comm alive;
	MPIX_Comm_shrink(MPI_COMM_WORLD, &alive);
	int asize, arank;
	MPI_Comm_size(alive, &asize);
	MPI_Comm_rank(alive, &arank);
	rc = MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, alive);
	printf("rank %d: %d acknowledged, agreed %d, %d survivors, sum %d, rc %d\n", rank, n, flag, asize, sum, rc);
	MPI_Comm_free(&alive);
	MPI_Finalize();
	return 0;
}
