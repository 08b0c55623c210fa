// Command rmaprog is the rank program of the window package's real-process tests
// (window/launch_test.go): golaunch runs it with 2 to 8 ranks over shm or tcp, and its
// first argument picks a scenario, in the spirit of MPICH's test/mpi/rma. Every scenario
// checks its results; a mismatch prints "rmaprog: rank R: SCENARIO: what differs" on
// stderr and exits 1, and rank 0 prints "PASS SCENARIO N ranks" when every rank agreed.
//
//	acc          every rank accumulates (sum, int64 and float64) into the same elements of
//	             rank 0; the totals are exact
//	fop-acc      FetchAndOp and Accumulate on one counter: the total is exact and the
//	             values fetched are all different
//	cas-mutex    a mutex built from CompareAndSwap guards a counter that every rank
//	             increments with Get + Put: the count is exact
//	lock-counter the same counter under Lock(Exclusive)/Unlock instead of the mutex
//	fence        Fence epochs of all-to-all Puts, several rounds
//	pscw         Post/Start/Complete/Wait rings, each rank exposing to its predecessor
//	dynamic      CreateDynamic, Attach, Puts to attached memory, Detach
//	shared       AllocateShared + SharedQuery: loads and stores on a peer's memory (Gets
//	             when the peer's memory is not mapped here, as over tcp)
//	request      Rput, Rget, Raccumulate and RgetAccumulate completed by Request.Wait
//	passive      rank 0 computes for --busy (200 ms) in a loop that never calls the
//	             runtime while the others Lock+Get+Unlock its memory; each origin sends
//	             the time its Gets completed, and rank 0 checks that all of them came
//	             before it finished computing (no absolute threshold)
//	split        lock-counter, fence and acc on the two Worlds that Split makes of the
//	             even and the odd ranks (reversed), with a Sendrecv ring between them;
//	             three rounds, each freeing its Worlds (the later ones reuse contexts)
//	stale        the stale-read checker (tests/stalecheck) with the page cache
//	             on: zero stale reads and no lost update, with the cache counts
//	freed-write  every rank writes through the Local() slice of a freed window after
//	             allocating a new one: the new windows stay zero (the arena's quarantine);
//	             under GORMA_CHECK=1 the write faults instead and the rank dies
//	fence-mismatch  under GORMA_CHECK=1 only: rank 0 fences one window, the others
//	             another; every Fence fails naming both (printed on stdout), then the
//	             windows work on
//
// A scenario whose window API is not built yet exits 3 with "SKIP".
package main
