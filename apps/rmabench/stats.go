package main

import (
	goruntime "runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/gorma-hpc/gorma/apps/internal/benchkit"
)

// The timing method (batches of operations as one sample, calibrated in the warmup) is
// benchkit's, shared with the other benchmark programs. Ranks that run an operation
// collectively call measure with the same counts: only the reading of the clock depends
// on the batch size.

const maxBatch = benchkit.MaxBatch

// measurement is benchkit's Measurement with this program's latency row, and the
// process's context switches over the timed operations (benchkit.Switches).
type measurement struct {
	benchkit.Measurement
	csw [2]float64
}

// measure runs op warmup times untimed, then iters times timed in batches. It reads the
// context switches after the last warmup operation, outside every timed batch.
func measure(warmup, iters int, op func(i int) error) (measurement, error) {
	settle()
	var cs [2]float64
	if warmup == 0 {
		cs = benchkit.Switches()
	}
	m, err := benchkit.Measure(warmup, iters, func(i int) error {
		err := op(i)
		if i == warmup-1 {
			cs = benchkit.Switches()
		}
		return err
	})
	return measurement{m, since(cs)}, err
}

// latency summarises a measurement in microseconds, each figure multiplied by scale (0.5
// turns a pair of epochs into one), and its context switches per timed operation.
func (m measurement) latency(bytes int, scale float64) row {
	med, avg, p99 := m.Latency(scale)
	r := row{Bytes: bytes, Iterations: m.Iters, Batch: m.Batch, MedianUS: med, AvgUS: avg, P99US: p99}
	r.VCSW, r.IVCSW = perIter(m.csw, m.Iters)
	return r
}

// tail is latency with the slowest sample as MaxUS: the mean of the slowest batch.
func (m measurement) tail(bytes int, scale float64) row {
	r := m.latency(bytes, scale)
	if len(m.Samples) > 0 {
		r.MaxUS = round3(slices.Max(m.Samples) * scale / 1e3)
	}
	return r
}

// since returns the context switches after cs (benchkit.Switches).
func since(cs [2]float64) [2]float64 {
	now := benchkit.Switches()
	return [2]float64{now[0] - cs[0], now[1] - cs[1]}
}

// perIter divides the context switches sw among n timed iterations (zeros for none).
func perIter(sw [2]float64, n int) (vcsw, ivcsw float64) {
	if n == 0 {
		return 0, 0
	}
	return sw[0] / float64(n), sw[1] / float64(n)
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

// settleFor is how long settle keeps the rank busy before a timed loop.
const settleFor = 20 * time.Millisecond

// settle keeps the rank on its processor for settleFor before a timed loop, yielding to
// the Go scheduler often but making no system call. When a rank's only P has gone idle
// (a wait that slept, in a Barrier between sizes or in the case before), Go's sysmon
// thread wakes every ~100 us for some milliseconds, and each wake-up takes the
// processor of a bound rank from its timed loop for a few microseconds. It slows down
// once it has found nothing to do fifty times in a row.
func settle() {
	x := uint64(1)
	for end := time.Now().Add(settleFor); time.Now().Before(end); {
		for range 1000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		goruntime.Gosched()
	}
	settled.Add(x)
}

// settled keeps settle's computation from being optimized away.
var settled atomic.Uint64
