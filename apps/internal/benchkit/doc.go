// Package benchkit is what gorma's benchmark programs (apps/verbsperf, apps/pingpong,
// apps/rmabench, apps/allreducebench, apps/halobench, apps/dht) share. It holds the byte-count
// flag type (Size: 8, 4K, 1M) and the OSU/perftest timing method. Measure is a warmup that
// calibrates a batch size, then batches of operations timed as one sample, since a clock read
// costs tens of nanoseconds. Latency is the median, mean and 99th percentile in microseconds.
// Main is the common main of a rank program (flags, a context that SIGINT and SIGTERM cancel,
// exit codes 0, 1 for a failed run and 2 for bad flags). WriteJSON and StartProfile complete
// it.
//
// It holds no state; everything is safe for concurrent use. Only packages under apps/
// import it.
package benchkit
