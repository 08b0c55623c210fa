package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// The per-rank figures, in the order of the vector each rank sends rank 0. A figure
// without a name is an input of rank 0's summary, not reported as such.
const (
	fStartUnix   = iota // s: this process's start (Unix time)
	fInitUnix           // s: Init returned (Unix time)
	fPreShm             // kB: the host's Shmem before this rank's Init
	fStartup            // s: launch to Init returned (filled in at rank 0)
	fInit               // s: this process's start to Init returned
	fBarrier            // us per Barrier
	fAllreduce8         // us per 8 B Allreduce
	fAllreduce1M        // us per 1 MiB Allreduce
	fWinAllocate        // us: window.Allocate + Fence
	fWinFree            // us: Free
	fVmHWM              // kB: peak resident set
	fRssAnon            // kB: private anonymous resident memory at the peak point
	fRssShmem           // kB: shared memory resident in this process at the peak point
	fFDs                // open file descriptors at the peak point
	nFigures
)

// figures name the reported figures (the JSON's keys).
var figures = [nFigures]struct{ name string }{
	fStartup: {"startup_s"}, fInit: {"init_s"}, fBarrier: {"barrier_us"},
	fAllreduce8: {"allreduce_8_us"}, fAllreduce1M: {"allreduce_1m_us"},
	fWinAllocate: {"win_allocate_us"}, fWinFree: {"win_free_us"},
	fVmHWM: {"vmhwm_kb"}, fRssAnon: {"rss_anon_kb"}, fRssShmem: {"rss_shmem_kb"}, fFDs: {"fds"},
}

// sample is what a rank read before and at Init.
type sample struct {
	preShmKB        int64
	start, initDone time.Time
}

// bigBytes is the size of the large Allreduce.
const bigBytes = 1 << 20

// measure runs the phases after Init and returns the report, complete at rank 0.
func measure(ctx context.Context, w *runtime.World, o options, s sample) (report, error) {
	v := make([]float64, nFigures)
	v[fStartUnix] = unixSeconds(s.start)
	v[fInitUnix] = unixSeconds(s.initDone)
	v[fPreShm] = float64(s.preShmKB)
	v[fInit] = s.initDone.Sub(s.start).Seconds()
	var err error
	if v[fBarrier], err = timeCalls(ctx, w, o.iters, func() error { return collectives.Barrier(ctx, w) }); err != nil {
		return report{}, fmt.Errorf("barrier: %w", err)
	}
	if v[fAllreduce8], err = allreduce(ctx, w, 8, o.iters); err != nil {
		return report{}, fmt.Errorf("allreduce of 8 B: %w", err)
	}
	if v[fAllreduce1M], err = allreduce(ctx, w, bigBytes, o.bigIters); err != nil {
		return report{}, fmt.Errorf("allreduce of 1 MiB: %w", err)
	}
	shmPeak, err := peak(ctx, w, o, v)
	if err != nil {
		return report{}, err
	}
	all := make([]float64, nFigures*w.Size())
	if err := collectives.Gather(ctx, w, v, all, 0); err != nil {
		return report{}, fmt.Errorf("gather: %w", err)
	}
	if w.Rank() != 0 {
		return report{}, nil
	}
	return summarize(w, o, all, shmPeak), nil
}

// peak allocates the window, fills this rank's memory, and with every rank holding it
// between two Barriers, reads this process's memory and descriptors (and rank 0 the
// host's Shmem, returned); then it frees the window.
func peak(ctx context.Context, w *runtime.World, o options, v []float64) (int64, error) {
	t0 := time.Now()
	win, err := window.Allocate[byte](ctx, w, o.winBytes)
	if err != nil {
		return 0, fmt.Errorf("window allocate: %w", err)
	}
	alloc := time.Since(t0)
	// As fast as the C twin's memset: a store of one byte, then copies that double it.
	// The fill is not timed, but on a host of more ranks than cores it runs beside the
	// others' timed calls.
	if b := win.Local(); len(b) > 0 {
		b[0] = byte(w.Rank() + 1)
		for n := 1; n < len(b); n *= 2 {
			copy(b[n:], b[:n])
		}
	}
	t1 := time.Now()
	if err := win.Fence(ctx, 0); err != nil {
		return 0, fmt.Errorf("window fence: %w", err)
	}
	v[fWinAllocate] = float64((alloc + time.Since(t1)).Nanoseconds()) / 1e3
	if err := collectives.Barrier(ctx, w); err != nil {
		return 0, err
	}
	st, err := procKB("/proc/self/status", "VmHWM", "RssAnon", "RssShmem")
	if err != nil {
		return 0, err
	}
	fds, err := openFDs()
	if err != nil {
		return 0, err
	}
	v[fVmHWM], v[fRssAnon], v[fRssShmem], v[fFDs] = float64(st[0]), float64(st[1]), float64(st[2]), float64(fds)
	var shm int64
	if w.Rank() == 0 {
		if shm, err = shmemKB(); err != nil {
			return 0, err
		}
	}
	if err := collectives.Barrier(ctx, w); err != nil {
		return 0, err
	}
	t2 := time.Now()
	if err := win.Free(ctx); err != nil {
		return 0, fmt.Errorf("window free: %w", err)
	}
	v[fWinFree] = float64(time.Since(t2).Nanoseconds()) / 1e3
	return shm, nil
}

// timeCalls makes 3 untimed calls, then iters timed ones each followed by an untimed
// Barrier (as osu_allreduce, so that calls do not pipeline), and returns this rank's
// mean per timed call in microseconds.
func timeCalls(ctx context.Context, w *runtime.World, iters int, call func() error) (float64, error) {
	var total time.Duration
	for i := range 3 + iters {
		t0 := time.Now()
		if err := call(); err != nil {
			return 0, err
		}
		if i >= 3 {
			total += time.Since(t0)
		}
		if err := collectives.Barrier(ctx, w); err != nil {
			return 0, err
		}
	}
	return float64(total.Nanoseconds()) / 1e3 / float64(iters), nil
}

// allreduce times Allreduce (float64 sum) of size bytes and checks the last result.
func allreduce(ctx context.Context, w *runtime.World, size, iters int) (float64, error) {
	send, recv := make([]float64, size/8), make([]float64, size/8)
	for i := range send {
		send[i] = float64(w.Rank() + i%7)
	}
	us, err := timeCalls(ctx, w, iters, func() error {
		return collectives.Allreduce(ctx, w, send, recv, collectives.Sum[float64]())
	})
	if err != nil {
		return 0, err
	}
	p := w.Size()
	for i, x := range recv {
		if want := float64(p*(p-1)/2 + p*(i%7)); x != want {
			return 0, fmt.Errorf("element %d is %v, want %v", i, x, want)
		}
	}
	return us, nil
}

// summarize turns the ranks' vectors into the report (rank 0).
func summarize(w *runtime.World, o options, all []float64, shmPeak int64) report {
	p := w.Size()
	rows := make([][]float64, p)
	for r := range p {
		rows[r] = all[r*nFigures : (r+1)*nFigures]
	}
	rep := report{Benchmark: "scalebench", System: "gorma", Ranks: p, Iters: o.iters, BigIters: o.bigIters,
		WindowBytes: o.winBytes, LaunchFrom: "script", ShmBaseFrom: "script", ShmBaseKB: o.shmBaseKB,
		ShmPeakKB: shmPeak, Figures: map[string]stat{}}
	hosts := map[string]bool{}
	for r := range p {
		hosts[w.HostOf(r)] = true
	}
	rep.Hosts = len(hosts)
	launch := float64(o.launchNS) / 1e9
	if o.launchNS == 0 {
		rep.LaunchFrom = "first rank"
		launch = column(rows, fStartUnix)[0]
	}
	if o.shmBaseKB < 0 {
		rep.ShmBaseFrom = "ranks before Init"
		rep.ShmBaseKB = int64(column(rows, fPreShm)[0])
	}
	rep.ShmKB = rep.ShmPeakKB - rep.ShmBaseKB
	for _, r := range rows {
		r[fStartup] = r[fInitUnix] - launch
	}
	for i, f := range figures {
		if f.name != "" {
			c := column(rows, i)
			rep.Figures[f.name] = stat{Median: round(median(c)), Max: round(c[len(c)-1])}
		}
	}
	return rep
}

// column returns figure i of every rank, sorted.
func column(rows [][]float64, i int) []float64 {
	c := make([]float64, len(rows))
	for r, row := range rows {
		c[r] = row[i]
	}
	slices.Sort(c)
	return c
}

// median of sorted values.
func median(s []float64) float64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// round keeps six significant digits' worth of decimals: microseconds stay exact.
func round(x float64) float64 {
	y, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 6, 64), 64)
	return y
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
