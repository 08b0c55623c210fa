// Command dht is a distributed hash table whose lookups are passive-target Gets on
// read-mostly data. It measures what the coherent page cache of package window (on for
// windows whose job spans hosts) gains when lookups reuse pages, and what it costs when
// they do not.
//
//	golaunch -n 4 --transport tcp bin/dht --workload read-mostly
//	golaunch -n 4 --transport tcp bin/dht --workload no-hit --json=nohit.json
//	golaunch -n 8 -H a:2,b:2,c:2,d:2 bin/dht --keys 4096 --lookups 500 --cache on
//
// The table: each rank owns a shard, a window.Win[uint64] (Allocate) of open-addressing
// buckets of 16 bytes (key, value; key 0 is an empty bucket). A key's hash names its owner
// rank and its home bucket; probing is linear, one aligned group of 4 buckets (64 bytes,
// one Get) per step. The value of key k is a function of k in its low 48 bits; updates
// change the 16 bits above (a version).
//
// Phases, for each cache setting (--cache both: off, then on, each with its own window,
// built the same way, and the same key sequence):
//
//   - build: every rank inserts its share of the keys 1..--keys: with --build remote the
//     keys equal to its rank modulo the number of ranks, wherever they live; with --build
//     local the keys it owns (a bulk load). An insert is Lock(Exclusive, owner), probing
//     with Get + Flush, Put, and Unlock, with up to --batch keys per lock. Then a barrier,
//     and a check that the shards hold every key once, with its value.
//   - operations: every rank opens one LockAll epoch and runs --warmup untimed and then
//     --lookups timed operations on keys drawn before the timing (key i+1 with weight
//     1/(i+1)^S for --zipf S, uniform for 0), of every shard. A lookup probes with Get +
//     Flush per group and checks the value. A fraction --update-frac are updates: the
//     probe, then a Put of the value with a new version and a Flush, which invalidates the
//     cached copies of the page at every rank before it returns (the key never moves, so
//     updates run in the LockAll epoch: a concurrent lookup reads either version).
//
// A wrong or missing value is fatal: the rank prints "dht: WRONG RESULT: ..." and exits 1.
//
// Figures per cache setting, at rank 0 (every rank sends its own with runtime.Send):
// ops/s, the sum over ranks of each rank's operations over its elapsed time. Mean latency
// (total time over operations) and median latency (of the per-operation means of batches
// of 64 operations, pooled over ranks, so that a clock read is small against a batch). The
// page cache's hits, misses, installs, invalidations (window.CacheStats, measured
// operations only, summed over ranks). The build time. And with --cache both the speedup:
// ops/s on over off, and mean latency off over on (the sum of per-rank rates weighs a rank
// that finished fast, say the owner of the hottest keys, more than the ratio of mean
// latencies does). The cache counts per page touched by a Get: a lookup that reads two
// groups counts twice.
//
// The cache serves only Gets from ranks reached over tcp (other hosts, or every rank with
// golaunch --transport tcp); Gets from ranks on the same host are copies from mapped
// memory either way. --workload picks a preset (explicit flags override it):
//
//	read-mostly  65536 keys, 50000 operations per rank, zipf 1.1, update fraction 0.001,
//	             4 KiB pages: hot keys, every remote page fits the cache
//	no-hit       1048576 keys (8 MiB per rank with 4 ranks), 3000 operations per rank,
//	             uniform, no updates, 512 B pages, local build: each rank touches a few
//	             thousand of tens of thousands of remote pages, so almost no page is read
//	             twice and the cache can only cost
//
// Output is a header, one row per cache setting (build_s, ops/s, mean_us, median_us,
// hits, misses, installs, invalidations) and the speedup; --json prints one JSON
// document instead, --json=FILE writes it to FILE beside the text. --cpuprofile=FILE
// writes each rank's CPU profile to FILE.RANK.
package main
