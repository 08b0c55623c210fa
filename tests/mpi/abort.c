/* Failure scenarios for golaunch's abort rules, chosen by argv[1]:
 *   abort CODE WHO   rank WHO calls MPI_Abort(MPI_COMM_WORLD, CODE) after a barrier; the
 *                    others wait for a signal
 *   hang             every rank prints "ready RANK PID" after a barrier and waits for a
 *                    signal (a target for kill -9)
 *   nofinalize WHO   rank WHO exits 0 after a barrier without MPI_Finalize; the others
 *                    wait for a signal
 * Waiting ranks sleep in pause(), not in an MPI call, which would spin on the CPU. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void wait_forever(void) {
	for (;;)
		pause();
}

int main(int argc, char **argv) {
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc < 2) {
		fprintf(stderr, "usage: abort abort CODE WHO | hang | nofinalize WHO\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (strcmp(argv[1], "abort") == 0 && argc == 4) {
		if (rank == atoi(argv[3]))
			MPI_Abort(MPI_COMM_WORLD, atoi(argv[2]));
		wait_forever();
	} else if (strcmp(argv[1], "hang") == 0) {
		printf("ready %d %d\n", rank, (int)getpid());
		fflush(stdout);
		wait_forever();
	} else if (strcmp(argv[1], "nofinalize") == 0 && argc == 3) {
		if (rank == atoi(argv[2]))
			exit(0);
		wait_forever();
	}
	fprintf(stderr, "abort: unknown scenario %s\n", argv[1]);
	MPI_Abort(MPI_COMM_WORLD, 2);
	return 2;
}
