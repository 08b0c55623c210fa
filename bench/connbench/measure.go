package connbench

import (
	"math"
	"slices"
	"time"
)

// batchTarget is how long a timed batch of round trips lasts at least, so that reading
// the clock does not count; maxBatch keeps enough samples for the percentiles.
const (
	batchTarget = 2 * time.Microsecond
	maxBatch    = 64
)

// measure runs op warmup times, then iters times in timed batches, and returns the
// nanoseconds per op of each batch, sorted.
func measure(warmup, iters int, op func() error) ([]float64, error) {
	t0 := time.Now()
	for range warmup {
		if err := op(); err != nil {
			return nil, err
		}
	}
	batch := 1
	if warmup > 0 {
		if per := time.Since(t0) / time.Duration(warmup); per < batchTarget {
			batch = min(int(batchTarget/max(per, 1)), maxBatch)
		}
	}
	samples := make([]float64, 0, iters/batch+1)
	for done := 0; done < iters; {
		b := min(batch, iters-done)
		t := time.Now()
		for range b {
			if err := op(); err != nil {
				return nil, err
			}
		}
		samples = append(samples, float64(time.Since(t))/float64(b))
		done += b
	}
	slices.Sort(samples)
	return samples, nil
}

// percentile is the p-th percentile of sorted by nearest rank (the mean of the middle
// two for the median of an even count); 0 when empty.
func percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if p == 50 && n%2 == 0 {
		return (sorted[n/2-1] + sorted[n/2]) / 2
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	return sorted[min(max(rank, 1), n)-1]
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return percentile(s, 50)
}

// round3 rounds to three decimals.
func round3(x float64) float64 { return math.Round(x*1e3) / 1e3 }

// Time runs the round trip op warmup times, then iters times in timed batches, and
// returns the row of size: the median and percentiles of the batches' means.
func Time(size, warmup, iters int, op func() error) (Row, error) {
	samples, err := measure(warmup, iters, op)
	if err != nil {
		return Row{}, err
	}
	return latencyRow(size, iters, samples), nil
}

// latencyRow turns sorted nanosecond samples into a row in microseconds.
func latencyRow(bytes, iters int, sorted []float64) Row {
	us := func(p float64) float64 { return round3(percentile(sorted, p) / 1e3) }
	return Row{Bytes: bytes, Iterations: iters, MedianUS: us(50), P5US: us(5), P95US: us(95), P99US: us(99)}
}

// scaledIters is the round trips for size: iters up to 4 KiB, fewer above (at least min).
func scaledIters(iters, size, least int) int {
	if size <= 4096 {
		return iters
	}
	return max(iters*4096/size, least)
}
