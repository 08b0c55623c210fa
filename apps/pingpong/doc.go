// Command pingpong measures point-to-point latency and bandwidth between two ranks, the
// way the OSU micro-benchmarks do (osu_latency, osu_bw), over whatever transport the
// runtime picked (shm on one host, tcp across hosts; golaunch --transport overrides).
//
//	golaunch -n 2 ./bin/pingpong                           # latency and bandwidth, 8 B to 4 MiB
//	golaunch -n 2 ./bin/pingpong --test latency --max-size 4K
//	golaunch -n 2 -x GORMA_PROGRESS=spin ./bin/pingpong --json=pp.json
//	golaunch -n 2 --transport tcp ./bin/pingpong --test bw
//	golaunch -n 4 ./bin/pingpong --pairs --test latency --max-size 8
//
// It needs exactly two ranks and says so otherwise, unless --pairs is given. Then any even
// number of ranks runs, and ranks 2k and 2k+1 measure concurrently as one pair each. Rank
// 0 prints the median over the pairs of each figure. The even rank of each pair sends its
// figure to rank 0 after each size, outside the timed loops.
//
// Method (as osu_latency and osu_bw):
//
//   - latency: rank 0 sends a message of the size and rank 1 sends it back, with blocking
//     Send and Recv. After warmup round trips, the time of the measured ones is divided by
//     twice their number: the half round trip in microseconds. --iters round trips up to
//     16 KiB, scaled down in proportion above (at least 20), a tenth of that (at least 3)
//     for warmup. Before the first size, each pair ping-pongs 8 bytes, untimed, for 50 ms
//     (the job's warm-up: a job's first milliseconds are slower, whichever runtime); the C
//     twin does the same.
//   - bandwidth: rank 0 posts a window of --window (64) Isends of the size, waits for all
//     of them in one WaitAll (the C twin's MPI_Waitall), and waits for a 4-byte
//     acknowledgement from rank 1, which had posted 64 Irecvs and waited for them in one
//     WaitAll. It repeats this --bw-iters times (a fifth of that above 16 KiB) after
//     warmup. MB/s = 10^6 bytes per second. As in OSU, the messages of one window share
//     one send and one receive buffer.
//
// Buffers hold non-zero bytes before anything is measured. Output is one table per test
// ("#bytes  latency_us", "#bytes  MB/s") after a header naming the transport, the
// progress mode (GORMA_PROGRESS) and the host(s); --json prints one JSON document
// instead, --json=FILE writes it to FILE beside the text. Each JSON row also holds
// vcsw_per_call and ivcsw_per_call: the process's voluntary and involuntary context
// switches (getrusage, every thread's) per timed iteration, averaged over all ranks. An
// iteration is a round trip (latency) or a window and its acknowledgement (bandwidth).
// bench/mpi/pingpong.c is the C twin (same method, text output and JSON rows);
// scripts/compare-p2p.sh runs both side by side.
package main
