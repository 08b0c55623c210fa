// Command obsprog is the rank program of the observation tests (golaunch --profile,
// --trace): a point-to-point pattern whose messages a receiver takes out of the order
// they were sent, so that a timeline's flows must follow each message, not the order of
// receives. Every rank, with right = rank+1 and left = rank-1 (mod size):
//
//   - sends right three 100-byte messages with tags 3, 2, 1, and receives from left by
//     tags 1, 2, 3 (each one arrives before its receive is posted, or after);
//   - sends right one 1 MiB message (a rendezvous) with tag 4, and receives it from left
//     into an Irecv from AnySource posted before;
//   - Isends right and left 8 bytes with tag 5 and waits for both, Irecvs from both;
//   - sends itself 16 bytes with tag 6 and receives them;
//   - Sendrecvs 4 bytes right (from left) with tag 8, and Ssends 4 bytes right with tag
//     9 into an Irecv from left;
//   - makes one Allreduce of 256 float64 inside a TraceRegion named "reduce phase", and
//     one 512-byte Put to right between two Fences;
//   - splits the World by rank parity, makes a Barrier of its half and frees it (Free
//     sends the engine's control messages), then makes a Barrier of the World.
//
// Each rank then prints "obsprog: rank RANK finalized", and rank 0 "obsprog: ok". With the
// argument deadlock, every rank instead sends right one small message and then 1 MiB,
// which no rank receives: the job hangs, for the tests of hang reports that point into
// the timeline. Three modes run the pattern, print "ready RANK PID", and then (modes.go):
//
//   - ft (under golaunch --ft): Barriers until one fails with a peer's failure, then
//     Revoke, then Finalize;
//   - untilgone PATH: wait until PATH can no longer be found, then Finalize;
//   - crash VICTIM HOW: rank VICTIM records a region "before the crash" and crashes (HOW:
//     panic, or nilwrite: a write through a nil pointer), the others block in a Barrier.
//
// Mode fill ROUNDS fills the flight recorder (GORMA_TRACE_EVENTS) with regions, then
// makes ROUNDS Sendrecvs around the ring, and prints "fill RANK SECONDS": how long its
// Finalize took. 64 ranks of it under --trace measure what the timeline costs a job's
// end (scripts/trace-scale.sh).
//
// In the pattern every rank sends right 3x100 + 1 MiB + 8 bytes in 5 messages by
// point-to-point, left 8 bytes in 1, and itself 16 bytes in 1.
package main
