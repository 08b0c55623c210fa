package main

import "github.com/gorma-hpc/gorma/apps/internal/benchkit"

// The timing method (batches of operations as one sample, calibrated in the warmup) is
// benchkit's, shared with the other benchmark programs. Ranks that run an operation
// collectively call measure with the same counts: only the reading of the clock depends
// on the batch size.

const maxBatch = benchkit.MaxBatch

// measurement is benchkit's Measurement with this program's latency row.
type measurement struct{ benchkit.Measurement }

// measure runs op warmup times untimed, then iters times timed in batches.
func measure(warmup, iters int, op func(i int) error) (measurement, error) {
	m, err := benchkit.Measure(warmup, iters, op)
	return measurement{m}, err
}

// latency summarises a measurement in microseconds, each figure multiplied by scale (0.5
// turns a pair of epochs into one).
func (m measurement) latency(bytes int, scale float64) row {
	med, avg, p99 := m.Latency(scale)
	return row{Bytes: bytes, Iterations: m.Iters, Batch: m.Batch, MedianUS: med, AvgUS: avg, P99US: p99}
}

var (
	percentile = benchkit.Percentile
	round3     = benchkit.Round3
)

// scaled is the iteration count for size: base up to 16 KiB, in proportion above (at
// least 20).
func scaled(base, size int) int {
	if size <= 16<<10 {
		return base
	}
	return max(base*(16<<10)/size, 20)
}

// warmupOf is the warmup for iters measured operations: a tenth, at least 3.
func warmupOf(iters int) int { return max(iters/10, 3) }
