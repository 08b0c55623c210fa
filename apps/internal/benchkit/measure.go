package benchkit

import (
	"math"
	"slices"
	"time"
)

// BatchTarget is how long one timed batch of operations should take at least. Reading
// the clock costs some tens of nanoseconds, so operations shorter than this are timed in
// batches and a sample is the mean of one batch.
const BatchTarget = 2 * time.Microsecond

// MaxBatch bounds the batch size so that percentiles still see variation.
const MaxBatch = 256

// Measurement is the outcome of timing one operation at one size.
type Measurement struct {
	Samples []float64     // nanoseconds per operation, one per batch
	Batch   int           // operations per sample
	Iters   int           // measured operations
	Total   time.Duration // time of all measured operations
}

// Measure runs op warmup times untimed, then iters times timed in batches. op gets the
// running iteration number, counting the warmup. Ranks that run op collectively call
// Measure with the same counts: only the reading of the clock depends on the batch size.
func Measure(warmup, iters int, op func(i int) error) (Measurement, error) {
	// The first warmup iterations include a peer's start and cold caches: calibrate the
	// batch size on the second half only.
	i := 0
	var t0 time.Time
	for ; i < warmup; i++ {
		if i == warmup/2 {
			t0 = time.Now()
		}
		if err := op(i); err != nil {
			return Measurement{}, err
		}
	}
	batch := 1
	if calib := warmup - warmup/2; calib > 0 {
		per := time.Since(t0) / time.Duration(calib)
		if per < BatchTarget {
			batch = min(int(BatchTarget/max(per, 1)), MaxBatch)
		}
	}
	m := Measurement{Batch: batch, Iters: iters, Samples: make([]float64, 0, iters/batch+1)}
	for done := 0; done < iters; {
		b := min(batch, iters-done)
		t := time.Now()
		for j := 0; j < b; j++ {
			if err := op(i); err != nil {
				return Measurement{}, err
			}
			i++
		}
		d := time.Since(t)
		m.Total += d
		m.Samples = append(m.Samples, float64(d)/float64(b))
		done += b
	}
	return m, nil
}

// Latency returns the median, mean and 99th percentile in microseconds (rounded to the
// nanosecond), each multiplied by scale (0.5 turns a round trip into a half round trip).
func (m Measurement) Latency(scale float64) (medianUS, avgUS, p99US float64) {
	s := slices.Clone(m.Samples)
	slices.Sort(s)
	us := func(ns float64) float64 { return Round3(ns * scale / 1e3) }
	avg := 0.0
	if m.Iters > 0 {
		avg = float64(m.Total) / float64(m.Iters)
	}
	return us(Percentile(s, 50)), us(avg), us(Percentile(s, 99))
}

// Percentile returns the p-th percentile of sorted by the nearest-rank method, with the
// median of an even count taken as the mean of the middle two. NaN when empty.
func Percentile(sorted []float64, p float64) float64 {
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

// Median of unsorted values.
func Median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return Percentile(s, 50)
}

// Round3 rounds to three decimals.
func Round3(x float64) float64 { return math.Round(x*1e3) / 1e3 }
