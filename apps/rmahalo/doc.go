// Command rmahalo measures a 1-D halo exchange through an RMA window, the way a first
// one-sided stencil program writes it. Every rank owns an array of float64 with a ghost
// region of H bytes on each side, held in one window (window.Allocate). The ranks form a
// ring. An iteration Puts the rank's first H bytes of owned cells into its left
// neighbour's right ghost and its last H bytes into its right neighbour's left ghost,
// closes the epoch, and adds 1 to those boundary cells.
//
//	golaunch -n 4 ./bin/rmahalo                          # every mode, 8 B to 64 KiB
//	golaunch -n 4 ./bin/rmahalo --sync pscw,lock_all --sizes 8,4K --json=halo.json
//	golaunch -n 2 -x GORMA_PROGRESS=block ./bin/rmahalo --max-size 1K
//
// Modes (--sync, a comma-separated list):
//
//	fence     Fence; Put left and right; Fence
//	pscw      Post(neighbours); Start(neighbours); Put x2; Complete; Wait
//	lock      per neighbour Lock(Exclusive) + Put + Unlock; Barrier
//	lock_all  LockAll once per size; Put x2 + FlushAll; Barrier
//
// With 2 ranks both neighbours are the other rank: one group member, one lock.
//
// Method: per size, a new window; --warmup iterations untimed, then a Barrier and --iters
// timed iterations. Both counts scale down in proportion above 16 KiB. --size-time caps
// the timed iterations at about that long, from the slowest rank's warmup. The figure is
// rank 0's time of the timed iterations over their number, in microseconds. The ghosts are
// checked after the first iteration (then a Barrier) and after the last: each must hold
// its neighbour's boundary of that iteration. A wrong value fails the job, naming the
// rank, the size and the mode.
//
// Output: a header, then per mode a line "# rmahalo MODE: ..." and rows "bytes
// us_per_iteration". --json prints one JSON document instead, --json=FILE writes it to
// FILE beside the text. bench/mpi/rmahalo.c is the C twin; scripts/compare-rmahalo.sh
// runs both side by side.
package main
