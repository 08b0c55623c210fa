package main

import (
	"math"
	"slices"
	"time"
)

// batchTarget is how long one timed batch of operations should take at least. Reading the
// clock costs some tens of nanoseconds, so operations shorter than this are timed in
// batches and a sample is the mean of one batch.
const batchTarget = 2 * time.Microsecond

// maxBatch bounds the batch size so that percentiles still see variation.
const maxBatch = 256

// measurement is the outcome of timing one operation at one size.
type measurement struct {
	samples []float64     // nanoseconds per operation, one per batch
	batch   int           // operations per sample
	iters   int           // measured operations
	total   time.Duration // time of all measured operations
}

// measure runs op warmup times untimed, then iters times timed in batches. op gets the
// running iteration number, counting the warmup. Ranks that run op collectively call
// measure with the same counts: only the reading of the clock depends on the batch size.
func measure(warmup, iters int, op func(i int) error) (measurement, error) {
	// The first warmup iterations include cold caches: calibrate the batch size on the
	// second half only.
	i := 0
	var t0 time.Time
	for ; i < warmup; i++ {
		if i == warmup/2 {
			t0 = time.Now()
		}
		if err := op(i); err != nil {
			return measurement{}, err
		}
	}
	batch := 1
	if calib := warmup - warmup/2; calib > 0 {
		per := time.Since(t0) / time.Duration(calib)
		if per < batchTarget {
			batch = min(int(batchTarget/max(per, 1)), maxBatch)
		}
	}
	m := measurement{batch: batch, iters: iters, samples: make([]float64, 0, iters/batch+1)}
	for done := 0; done < iters; {
		b := min(batch, iters-done)
		t := time.Now()
		for j := 0; j < b; j++ {
			if err := op(i); err != nil {
				return measurement{}, err
			}
			i++
		}
		d := time.Since(t)
		m.total += d
		m.samples = append(m.samples, float64(d)/float64(b))
		done += b
	}
	return m, nil
}

// latency summarises a measurement in microseconds, each figure multiplied by scale (0.5
// turns a pair of epochs into one).
func (m measurement) latency(bytes int, scale float64) row {
	s := slices.Clone(m.samples)
	slices.Sort(s)
	us := func(ns float64) float64 { return round3(ns * scale / 1e3) }
	avg := 0.0
	if m.iters > 0 {
		avg = float64(m.total) / float64(m.iters)
	}
	return row{Bytes: bytes, Iterations: m.iters, Batch: m.batch,
		MedianUS: us(percentile(s, 50)), AvgUS: us(avg), P99US: us(percentile(s, 99))}
}

// percentile returns the p-th percentile of sorted by the nearest-rank method, with the
// median of an even count taken as the mean of the middle two.
func percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	if p == 50 {
		if n%2 == 1 {
			return sorted[n/2]
		}
		return (sorted[n/2-1] + sorted[n/2]) / 2
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	return sorted[min(max(rank, 1), n)-1]
}

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

func round3(x float64) float64 { return math.Round(x*1e3) / 1e3 }
