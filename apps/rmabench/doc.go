// Command rmabench measures one-sided (RMA) operations between pairs of ranks, the way the
// OSU micro-benchmarks do (osu_put_latency, osu_get_latency, osu_put_bw, osu_get_bw,
// osu_acc_latency, osu_fop_latency, osu_cas_latency), plus the synchronization and window
// costs that the project's targets name.
//
//	golaunch -n 2 ./bin/rmabench                                  # every case, 8 B to 1 MiB
//	golaunch -n 2 ./bin/rmabench --test put_lat,get_lat.lock_all --max-size 4K
//	golaunch -n 2 ./bin/rmabench --test busy_get --busy 200ms --json=busy.json
//	golaunch -n 2 --transport tcp ./bin/rmabench --test put_lat.lock_all,fence
//	golaunch -n 4 ./bin/rmabench --test put_lat,fence             # two pairs at once
//
// Ranks: the job has an even number of ranks, at least 2. Rank r pairs with rank r^1 (0
// with 1, 2 with 3, ...): the even rank is the origin, the odd rank its target. In every
// case each origin measures against its own target at the same time as the others, after
// a barrier and with the same counts, so a figure holds the contention of all pairs. The
// figures printed are rank 0's. The Fences of the fence modes and of the fence case span
// every rank, and so do alloc_free's Allocate and Free. With 2 ranks this is one origin
// and one target.
//
// Cases (--test takes a comma-separated list of case names, or of the part before the
// dot, such as put_lat for the four put_lat.* cases; "all" is every case):
//
//	put_lat.MODE, get_lat.MODE   latency of one Put or Get of each size, in four modes:
//	    lock      Lock(Exclusive) + op + Unlock per operation
//	    lock_all  LockAll once, then op + Flush per operation
//	    fence     Fence + op + Fence: the two ranks of a pair take turns (the origins in
//	              one epoch, the targets in the next: osu_put_latency's fence mode), the
//	              time of an epoch pair / 2
//	    pscw      Post/Start/op/Complete/Wait, taking turns as in fence mode
//	put_bw, get_bw               bandwidth: 64 operations of the size, then Flush (LockAll)
//	acc_lat.float64, acc_lat.int64   Accumulate(Sum) of each size + Flush (LockAll)
//	fop_lat, cas_lat             FetchAndOp(Sum) or CompareAndSwap of one int64 + Flush
//	fence                        an empty Fence, every rank; its table adds max_us, the
//	                             slowest sample, to median/avg/p99
//	busy_get                     Lock(Shared) + Get 8 B + Unlock while the target computes
//	                             for --busy without calling the runtime: median and max
//	                             ("-" when no operation started: --busy of 2 ms or less)
//	lock_put                     Lock(Exclusive) + Put 8 B + Unlock
//	alloc_free.allocate          Allocate + Free of a 1 MiB window (--window-size), per pair
//	                             of calls, every rank
//	alloc_free.nozero            the same with window.NoZero: not cleared, as MPI_Win_allocate's (no C twin:
//	                             the C twin's alloc_free.allocate is its peer)
//	alloc_free.create            Create + Free over a 1 MiB slice of the caller
//
// Method: every latency figure is timed in batches long enough that reading the clock does
// not matter (a sample is the mean of up to 256 operations, calibrated in the warmup). The
// median, the mean and the 99th percentile of the samples are reported in microseconds.
// --iters operations per size up to 16 KiB, scaled down in proportion above (at least 20),
// a tenth of that (at least 3) as warmup. Every rank returns its setup's garbage to the
// system once (debug.FreeOSMemory), and collects garbage before each size, as Go's
// testing package does before a benchmark: otherwise a collection, or the background
// scavenger's millisecond bursts, run beside a timed loop. Before each timed loop every
// rank computes for 20 ms without a system call (settle; the C twin too). Once a rank's
// only P has gone idle (a wait that slept), Go's sysmon thread wakes every ~100 us for
// milliseconds, and each wake-up takes a bound rank's processor from the loop (the fence
// case's p99 and max). The cases run in the order above. Bandwidth is MB/s = 10^6 bytes per second over --bw-iters rounds of
// 64 operations. Buffers and windows hold non-zero bytes before
// anything is measured. In the busy_get case the target fills its window with a known
// pattern, and the origin checks every Get against it.
//
// bench/mpi/rmabench.c is the C twin (same cases, pairs, flags, iteration counts, output
// and JSON rows); scripts/compare-rma.sh runs both side by side (NP=4 for 4 ranks). Output
// is one table per case after a header naming the transport, the progress mode and the
// hosts of ranks 0 and 1, and with more than 2 ranks a line on the pairs; --json prints
// one JSON document instead (its "ranks" is the job's size), --json=FILE writes it to
// FILE beside the text.
//
// Each JSON row also holds vcsw_per_call and ivcsw_per_call: the process's voluntary and
// involuntary context switches (getrusage, every thread's) per timed iteration, the unit
// of the row's iterations. They are averaged over the ranks that run the timed loop.
// Every rank runs it in the *.fence, *.pscw, fence and alloc_free.* cases. The origins
// alone run it in the others, while the targets idle (or compute, in busy_get). A
// busy_get row without operations holds zeros.
package main
