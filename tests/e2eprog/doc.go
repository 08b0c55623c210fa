// Command e2eprog is the rank program of the launcher's end-to-end stress tests
// (launcher/e2e_stress_test.go). Every rank is a real OS process started by golaunch,
// and all of them run one long randomized sequence of point-to-point messages, RMA
// window epochs and collectives, drawn from a random generator seeded by -seed that
// every rank holds (so every rank knows every rank's operations), and check every
// result exactly.
//
//	e2eprog [-seed N] [-steps N] [-gc] [-kill RANK@STEP]
//
// Each rank keeps a model of every rank's window memory and applies every drawn RMA
// operation to it; after each epoch it compares its own window memory, and the Gets it
// made, with the model. Message payloads and collective inputs are a hash of (seed,
// step, ranks, index), so every receiver knows what it must get.
//
// Allreduce runs on one World per algorithm: for each of auto, shm, hier, recdbl,
// rabenseifner, ring, direct and lanes the program sets GORMA_ALLREDUCE and makes a Dup
// of its World, whose first collective call reads the variable. An algorithm the job's
// layout does not allow fails that first call with runtime.ErrConfig at every rank and
// is left out of the sequence.
//
// With -gc, two goroutines allocate garbage all the time and each rank calls
// runtime.GC at random points, while RMA origin buffers are dropped by the program as
// soon as an operation is issued (the window owns them until completion), and some
// origins live on a goroutine stack that grows before the flush.
//
// With -kill R@S, rank R prints "dying R PID" and SIGKILLs itself at the start of step
// S. A rank whose call fails prints "e2eprog: rank R: step S KIND: ERROR" on stderr and
// exits 1; the ranks ignore SIGTERM, so that a test with a long --grace checks that the
// runtime itself noticed the failure. On success each rank prints
// "PASS rank R steps N checked C", then finalizes.
package main
