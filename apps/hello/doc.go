// Command hello is the smallest gorma rank program: every rank prints its rank, the
// job's size, its host and its pid. Then a token goes once around the ring of ranks
// (rank 0 → 1 → … → 0), each rank adding its own rank to it, and rank 0 checks that the
// token came back holding 0+1+…+(size-1) and prints it. Then all ranks meet in a Barrier
// and Finalize. Any error is printed to stderr and makes the rank exit with status 1.
//
//	golaunch -n 4 ./bin/hello      # what `make run` does
//	./bin/hello                    # without golaunch: a world of one rank
//
// Output (with golaunch's [rank] prefixes; the order of the first lines varies):
//
//	[0] hello from rank 0 of 4 on host node1 (pid 4242, local rank 0 of 4, transport to the next rank: shm)
//	...
//	[0] token came back around the ring of 4 ranks: 6 (want 6)
package main
