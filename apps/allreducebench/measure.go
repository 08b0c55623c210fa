package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/gorma-hpc/gorma/apps/internal/benchkit"
	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

// measure runs the selected tests and returns the report: complete at rank 0, which also
// prints the tables to text.
func measure(ctx context.Context, w *runtime.World, o options, text io.Writer) (report, error) {
	scratch, err := setScratch(o)
	if err != nil {
		return report{}, err
	}
	rep := newReport(w, o, scratch)
	fmt.Fprintf(text, "# gorma allreducebench (OSU method): %d ranks on %d host(s), transport %s, algorithm %s, progress %s, fresh buffers %v, scratch %s\n",
		rep.Ranks, len(rep.Hosts), rep.Transport, rep.Algorithm, rep.Progress, rep.Fresh, rep.Scratch)
	fmt.Fprintf(text, "# latency: each rank's mean per call in microseconds, averaged (min, max) over the ranks; GB/s = 10^9 bytes/s\n")
	if o.tests[0] == "overlap" {
		rep.Overlap, err = overlap(ctx, w, o, text)
		return rep, err
	}
	for i, test := range o.tests {
		var rows []row
		switch test {
		case "allreduce":
			rows, err = allreduce(ctx, w, o, text)
		case "barrier":
			rows, err = barrierTest(ctx, w, o, i == 0, text)
		default:
			rows, err = collTest(ctx, w, o, collBenches[test], text)
		}
		*rep.rows(test) = rows
		if err != nil {
			return rep, fmt.Errorf("%s: %w", test, err)
		}
	}
	return rep, nil
}

// allreduce runs the Allreduce test: the job's warm-up, then every size.
func allreduce(ctx context.Context, w *runtime.World, o options, text io.Writer) ([]row, error) {
	fmt.Fprintf(text, "\n# allreduce: float64 sum\n%s\n", header)
	b := newBuffers(w, o)
	if err := warmJob(ctx, w, o, b); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	var rows []row
	for _, size := range o.sizes {
		r, err := allreduceSize(ctx, w, o, b, size)
		if err != nil {
			return rows, fmt.Errorf("at %d bytes: %w", size, err)
		}
		rows = append(rows, r)
		fmt.Fprintln(text, formatRow(r))
	}
	return rows, nil
}

// barrierTest runs the Barrier test; first says that no test ran before it.
func barrierTest(ctx context.Context, w *runtime.World, o options, first bool, text io.Writer) ([]row, error) {
	fmt.Fprintf(text, "\n# barrier\n%s\n", header)
	r, err := barrier(ctx, w, o, first)
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(text, formatRow(r))
	return []row{r}, nil
}

var header = fmt.Sprintf("%-12s %10s %12s %12s %12s %12s %12s", "#bytes", "iterations", "avg_us", "min_us", "max_us", "algbw_GB/s", "busbw_GB/s")

func formatRow(r row) string {
	return fmt.Sprintf("%-12d %10d %12.3f %12.3f %12.3f %12.3f %12.3f", r.Bytes, r.Iterations, r.AvgUS, r.MinUS, r.MaxUS, r.AlgBW, r.BusBW)
}

// buffers are the reused send and receive vectors, with the value every element of a
// result must have.
type buffers struct {
	send, recv []float64
	rank, size int
}

func newBuffers(w *runtime.World, o options) *buffers {
	b := &buffers{rank: w.Rank(), size: w.Size()}
	if !o.fresh {
		b.send, b.recv = make([]float64, o.maxSize/8), make([]float64, o.maxSize/8)
		fill(b.send, b.rank)
		fill(b.recv, b.rank+100)
	}
	return b
}

// fill writes rank r's input: small non-zero integers, so that sums are exact.
func fill(v []float64, r int) {
	for i := range v {
		v[i] = float64(i%251 + r + 1)
	}
}

// check verifies a result of size ranks' inputs.
func check(v []float64, size int) error {
	for i, x := range v {
		want := float64(size*(i%251+1) + size*(size-1)/2)
		if x != want {
			return fmt.Errorf("element %d is %v, want %v", i, x, want)
		}
	}
	return nil
}

// scaled is the number of calls for size: base up to 16 KiB, in proportion above.
func scaled(base, minIters, size int) int {
	if size <= 16<<10 {
		return base
	}
	return max(base*(16<<10)/size, min(minIters, base))
}

// jobWarmup is how long, by rank 0's clock, the job calls Allreduce of the first size,
// untimed, before it measures anything. The first milliseconds of a job pay for its
// start-up (the other ranks and the launcher still starting or printing, first-touch
// faults). A first size measured with only its own warm-up of a tenth of its calls
// absorbs them or not from run to run. The C twin does the same.
const jobWarmup = 50 * time.Millisecond

// warmJob calls Allreduce of the first size, untimed, for jobWarmup (warmFor).
func warmJob(ctx context.Context, w *runtime.World, o options, b *buffers) error {
	if len(o.sizes) == 0 {
		return nil
	}
	n := o.sizes[0] / 8
	send, recv := b.send, b.recv
	if o.fresh {
		send, recv = make([]float64, n), make([]float64, n)
		fill(send, b.rank)
	}
	send, recv = send[:min(n, len(send))], recv[:min(n, len(recv))]
	sum := collectives.Sum[float64]()
	err := warmFor(ctx, w, 64, func() error { return collectives.Allreduce(ctx, w, send, recv, sum) })
	if err != nil {
		return err
	}
	return collectives.Barrier(ctx, w)
}

// warmFor makes call in batches of batch until rank 0 has spent jobWarmup; rank 0's
// decision goes to the others with each batch (Bcast), so every rank makes the same calls.
func warmFor(ctx context.Context, w *runtime.World, batch int, call func() error) error {
	more := []int64{1}
	start := time.Now()
	for more[0] != 0 {
		for range batch {
			if err := call(); err != nil {
				return err
			}
		}
		if w.Rank() == 0 && time.Since(start) >= jobWarmup {
			more[0] = 0
		}
		if err := collectives.Bcast(ctx, w, more, 0); err != nil {
			return err
		}
	}
	return nil
}

// clockBase anchors mono.
var clockBase = time.Now()

// mono reads the monotonic clock: time.Since of a fixed Time reads only that clock, where
// time.Now reads the wall clock too. A call's timing then costs two clock reads, close to
// the C twin's pair of MPI_Wtime calls, where time.Now and time.Since cost more.
func mono() time.Duration { return time.Since(clockBase) }

// allreduceSize measures one size.
func allreduceSize(ctx context.Context, w *runtime.World, o options, b *buffers, size int) (row, error) {
	n := size / 8
	iters := scaled(o.iters, o.minIters, size)
	send, recv := b.send[:min(n, len(b.send))], b.recv[:min(n, len(b.recv))]
	sum := collectives.Sum[float64]()
	call := func() (time.Duration, error) {
		if o.fresh {
			send, recv = make([]float64, n), make([]float64, n)
			fill(send, b.rank)
		}
		t0 := mono()
		err := collectives.Allreduce(ctx, w, send, recv, sum)
		d := mono() - t0
		if err == nil {
			err = collectives.Barrier(ctx, w)
		}
		return d, err
	}
	total, iters, cs, err := timeCalls(ctx, w, o, iters, call)
	if err != nil {
		return row{}, err
	}
	if err := check(recv, b.size); err != nil {
		return row{}, fmt.Errorf("wrong result: %w", err)
	}
	r, err := reduceRow(ctx, w, total, iters, cs)
	r.Bytes = size
	if r.AvgUS > 0 {
		r.AlgBW = float64(size) / r.AvgUS / 1e3
		r.BusBW = r.AlgBW * 2 * float64(b.size-1) / float64(b.size)
	}
	return r, err
}

// timeCalls makes a tenth of iters calls (at least 3) as warmup, caps iters by their
// time (capIters) and times that many calls. It returns this rank's total time over
// them, their count and the context switches before them (benchkit.Switches).
func timeCalls(ctx context.Context, w *runtime.World, o options, iters int, call func() (time.Duration, error)) (time.Duration, int, [2]float64, error) {
	warmup := max(iters/10, 3)
	var warm, total time.Duration
	for range warmup {
		d, err := call()
		if err != nil {
			return 0, 0, [2]float64{}, err
		}
		warm += d
	}
	iters, err := capIters(ctx, w, o, iters, warm, warmup)
	if err != nil {
		return 0, 0, [2]float64{}, err
	}
	cs := benchkit.Switches()
	for range iters {
		d, err := call()
		if err != nil {
			return 0, 0, cs, err
		}
		total += d
	}
	return total, iters, cs, nil
}

// capIters applies --size-time: the slowest rank's warmup mean per call decides, so that
// every rank runs the same number of calls.
func capIters(ctx context.Context, w *runtime.World, o options, iters int, warm time.Duration, warmup int) (int, error) {
	if o.sizeTime <= 0 {
		return iters, nil
	}
	per := []float64{warm.Seconds() / float64(warmup)}
	if err := collectives.Allreduce(ctx, w, nil, per, collectives.Max[float64]()); err != nil {
		return 0, err
	}
	if per[0] > 0 {
		iters = min(iters, max(int(o.sizeTime.Seconds()/per[0]), 3))
	}
	return iters, nil
}

// reduceRow turns this rank's total over iters calls, and its context switches since cs
// (benchkit.Switches), into the row of figures over the ranks (complete at every rank).
func reduceRow(ctx context.Context, w *runtime.World, total time.Duration, iters int, cs [2]float64) (row, error) {
	now := benchkit.Switches()
	us := float64(total.Nanoseconds()) / 1e3 / float64(iters)
	sw := []float64{(now[0] - cs[0]) / float64(iters), (now[1] - cs[1]) / float64(iters)}
	sum, lo, hi := []float64{us}, []float64{us}, []float64{us}
	if err := collectives.Allreduce(ctx, w, nil, sw, collectives.Sum[float64]()); err != nil {
		return row{}, err
	}
	if err := collectives.Allreduce(ctx, w, nil, sum, collectives.Sum[float64]()); err != nil {
		return row{}, err
	}
	if err := collectives.Allreduce(ctx, w, nil, lo, collectives.Min[float64]()); err != nil {
		return row{}, err
	}
	if err := collectives.Allreduce(ctx, w, nil, hi, collectives.Max[float64]()); err != nil {
		return row{}, err
	}
	n := float64(w.Size())
	return row{Iterations: iters, AvgUS: sum[0] / n, MinUS: lo[0], MaxUS: hi[0], VCSW: sw[0] / n, IVCSW: sw[1] / n}, nil
}

// barrier measures Barrier as osu_barrier does; first says that no test ran before it.
func barrier(ctx context.Context, w *runtime.World, o options, first bool) (row, error) {
	if first {
		// No other test warmed the job up: Barriers measured from the job's start are
		// slower than the same ranks' Barriers tens of milliseconds later.
		if err := warmFor(ctx, w, 256, func() error { return collectives.Barrier(ctx, w) }); err != nil {
			return row{}, err
		}
	}
	warmup := max(o.iters/10, 3)
	timed := func(n int) (time.Duration, error) {
		var total time.Duration
		for range n {
			t0 := mono()
			if err := collectives.Barrier(ctx, w); err != nil {
				return 0, err
			}
			total += mono() - t0
		}
		return total, nil
	}
	warm, err := timed(warmup)
	if err != nil {
		return row{}, err
	}
	iters, err := capIters(ctx, w, o, o.iters, warm, warmup)
	if err != nil {
		return row{}, err
	}
	cs := benchkit.Switches()
	total, err := timed(iters)
	if err != nil {
		return row{}, err
	}
	return reduceRow(ctx, w, total, iters, cs)
}
