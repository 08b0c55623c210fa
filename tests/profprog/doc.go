// Command profprog is the Go twin of internal/prof/testdata/ompi/pattern.c: the
// communication pattern whose profile launcher/prof_test.go compares with Open MPI's. It
// makes the same calls with the same data sizes, in the same order:
//
//   - a ring: 3 Sends of 1000 bytes to the right neighbour (tag 7), each matched by a Recv
//     from the left one; even ranks send first, odd ranks receive first;
//   - an Allreduce (sum) of 256 float64;
//   - an Alltoallv of bytes in which rank r sends 8(r+1)(d+1) bytes to rank d;
//   - a window of 4096 bytes per rank (window.Allocate), a Fence, one 512-byte Put to
//     the right neighbour, a Fence, and Free.
//
// Each rank checks what it received: the ring's bytes, the Allreduce's sums, the
// Alltoallv's blocks and the bytes the left neighbour put. A mismatch or an error prints
// "profprog: rank R: STEP: ..." on stderr and exits 1. Every rank prints "profprog ok
// rank R of N" before it finalizes. Run it with 2 ranks or more.
package main
