package main

import (
	"math"
	"time"

	"github.com/gorma-hpc/gorma/apps/internal/benchkit"
)

// The timing method (batches of operations as one sample, calibrated in the warmup) is
// benchkit's, shared with the other benchmark programs.

const maxBatch = benchkit.MaxBatch

// measurement is benchkit's Measurement with this program's latency row.
type measurement struct{ benchkit.Measurement }

// measure runs op warmup times untimed, then iters times timed in batches (benchkit.Measure).
func measure(warmup, iters int, op func(i int) error) (measurement, error) {
	m, err := benchkit.Measure(warmup, iters, op)
	return measurement{m}, err
}

// latency summarises a measurement in microseconds, each figure multiplied by scale (0.5
// turns a round trip into a half round trip).
func (m measurement) latency(bytes int, scale float64) Row {
	med, avg, p99 := m.Latency(scale)
	return Row{Bytes: bytes, Iterations: m.Iters, Batch: m.Batch, MedianUS: med, AvgUS: avg, P99US: p99}
}

var (
	percentile = benchkit.Percentile
	median     = benchkit.Median
	round3     = benchkit.Round3
)

// gbps is bytes per second in units of 10^9.
func gbps(bytes int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(bytes) / d.Seconds() / 1e9
}

// roundSig rounds x to 4 significant digits: bandwidths span 0.0001 to 100 GB/s.
func roundSig(x float64) float64 {
	if x == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	scale := math.Pow(10, 3-math.Floor(math.Log10(math.Abs(x))))
	return math.Round(x*scale) / scale
}
