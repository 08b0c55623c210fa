// Command verbsperf measures the latency and bandwidth of gorma's verbs providers between
// two processes, next to the floors the same program measures on the same machine, in the
// manner of perftest (ib_write_lat, ib_read_lat, ib_atomic_lat, ib_send_lat, ib_write_bw,
// ib_read_bw) and the OSU micro-benchmarks.
//
// Usage:
//
//	verbsperf [--provider shm|tcp|all] [--test all|floors|lat|bw|NAME,...]
//	          [--min-size 8] [--max-size 64M] [--iters N] [--quick]
//	          [--json[=FILE]] [--wait spin|hybrid|block] [--window 64] [--timeout 10m]
//	          [--idle-watch=true|false]
//
// The program re-executes itself as the peer (a hidden --peer flag) and talks to it over
// the peer's stdin and stdout: endpoint bytes, remote keys and commands that start the
// peer's half of each ping-pong travel there. Benchmark traffic goes only through the
// provider under test (opened with verbs.Open, as any user would). The tcp provider's
// secret is made per run and handed to the peer in its environment. Ranks started by
// golaunch get an idle-role watch for their tcp device, served by the launcher's process
// (transport/verbs/tcp/watch.go). So with --idle-watch (the default) a third process, the
// program again with a hidden --watcher flag, serves the watches of both tcp devices the
// same way. --idle-watch=false measures the provider waking its reader itself after each
// wait. The header line says which.
//
// # Tests
//
// Over each provider:
//
//   - write_lat: RDMA write ping-pong, each side polling its own memory for the peer's
//     write (as ib_write_lat), reported as half a round trip; and an RDMA write posted and
//     polled to its completion.
//   - read_lat: RDMA read posted and polled to its completion.
//   - atomic_lat: fetch-and-add and compare-and-swap on an 8-byte word, to completion.
//   - send_lat: Send/Recv ping-pong with preposted receives, half a round trip.
//   - write_bw, read_bw: a window of outstanding RDMA operations, first post to last
//     completion, in GB/s (10^9 bytes per second).
//   - arena: PD.AllocMR + MR.Dereg on reuse, with the arena counters of Device.Stats.
//
// The floors, without gorma, are these. flag_pp is a cache-line flag ping-pong over a memfd
// mapped in both processes, with release stores as a raw C one has: the machine's cross-core
// round trip. tcp_pp is an 8-byte TCP loopback round trip. tcp_stream is TCP loopback stream
// bandwidth. Its sink reads every message into the same buffer of the message's size, as
// write_bw's writes land on the same target bytes. Both TCP floors use the tcp provider's
// congestion control, CUBIC, as its connections do. memcpy is copy bandwidth per size. segment
// is memfd_create + ftruncate + mmap + fault in + munmap + close.
//
// # Method
//
// Each size runs warmup iterations first, then a count scaled down with size (10000 up to
// 16 KiB by default). Latency is timed in batches long enough that reading the clock does
// not matter (a sample is the mean of up to 256 operations); the median, the mean and the
// 99th percentile of the samples are reported in microseconds. Bandwidth is the median of
// three repetitions. A summary block compares the figures with the project's targets. A
// virtual machine may change speed within minutes, so a figure compared with a floor is
// paired with it. The floor is measured in alternation with the row, four times for shm
// send_lat 8 B (with flag_pp) and tcp read_lat 8 B (with tcp_pp). The floor comes first in
// two of the pairs and second in the others. The row reports its pair nearest the median
// ratio, and that median ratio (floor_ratio in the JSON). Or in alternation with each
// repetition (write_bw and read_bw from 1 MiB with memcpy on shm and tcp_stream on tcp).
// The floor is shown in an extra column named after it. Pairing happens when the floor
// test is selected too. A paired bandwidth row has eight repetitions, each paired with one
// of the floor. The floor goes first in half of the pairs and second in the other half.
// Each run of a pair starts after a rest of 100 ms, because the second of two back-to-back
// runs can be slower, whichever it is. The row's ratio to the floor (the paired_ratio
// column, and the summary's check) is the median of the pairs' ratios: a change of speed
// between repetitions then cancels out instead of landing on the test or on the floor.
//
// Output is stable text, one header per table, or with --json one JSON document holding
// every table, the machine description, the Go version and a timestamp.
package main
