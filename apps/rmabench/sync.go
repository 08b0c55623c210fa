package main

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/gorma-hpc/gorma/apps/internal/benchkit"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// emptyFence: every rank calls Fence with nothing in the epochs.
func emptyFence(ctx context.Context, b *bench, _ int) (row, error) {
	m, err := measure(warmupOf(b.o.iters), b.o.iters, func(int) error { return b.bytes.Fence(ctx, 0) })
	if ferr := b.bytes.Fence(ctx, window.NoSucceed); err == nil {
		err = ferr
	}
	return m.tail(0, 1), err
}

// How alloc_free makes its window.
const (
	allocZeroed = iota // Allocate: cleared, gorma's default
	allocNoZero        // Allocate with NoZero: left as the arena holds it, as MPI's
	allocCreate        // Create over the caller's memory
)

// allocFree: every rank creates and frees a window of --window-size bytes, collectively.
func allocFree(how int) func(context.Context, *bench, int) (row, error) {
	return func(ctx context.Context, b *bench, size int) (row, error) {
		buf := make([]byte, size)
		for i := range buf {
			buf[i] = byte(i + 1)
		}
		iters := b.o.allocIters
		m, err := measure(warmupOf(iters), iters, func(int) error {
			var win *window.Win[byte]
			var err error
			switch how {
			case allocCreate:
				win, err = window.Create(ctx, b.w, buf)
			case allocNoZero:
				win, err = window.Allocate[byte](ctx, b.w, size, window.NoZero())
			default:
				win, err = window.Allocate[byte](ctx, b.w, size)
			}
			if err != nil {
				return err
			}
			return win.Free(ctx)
		})
		return m.latency(size, 1), err
	}
}

// check returns an error naming what differs between got and want.
func check(what string, got, want []byte) error {
	for i := range want {
		if got[i] != want[i] {
			return fmt.Errorf("%s: byte %d is %d, want %d", what, i, got[i], want[i])
		}
	}
	return nil
}

// busyOps bounds the operations timed per busy_get round.
const busyOps = 100

// busyGet: per round, every target computes for --busy in a loop that never calls the
// runtime, while its origin times single Lock(shared) + Get 8 B + Unlock, starting 1 ms
// into the round and stopping after busyOps of them or half of --busy. A peer whose
// passive target needs the target's code to run completes its first operation only when
// the target is done computing: one sample per round. Every Get is checked against the
// pattern that the target stored before the round.
func busyGet(ctx context.Context, b *bench, size int) (row, error) {
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i*11 + 5)
	}
	if !b.origin() {
		// The pattern, stored locally and published by an epoch on this rank itself.
		if err := b.bytes.Lock(ctx, window.Exclusive, b.me, 0); err != nil {
			return row{}, err
		}
		copy(b.bytes.Local(), want)
		if err := b.bytes.Unlock(ctx, b.me); err != nil {
			return row{}, err
		}
	}
	var samples []float64 // microseconds
	var sw [2]float64     // context switches in the timed loops
	for range b.o.busyReps {
		if err := runtime.Barrier(ctx, b.w); err != nil {
			return row{}, err
		}
		if !b.origin() {
			sink.Store(spin(b.o.busy))
		} else if err := busyRound(ctx, b, want, &samples, &sw); err != nil {
			return row{}, err
		}
		if err := runtime.Barrier(ctx, b.w); err != nil {
			return row{}, err
		}
	}
	if !b.origin() {
		return row{}, nil
	}
	r := busyRow(size, samples)
	r.VCSW, r.IVCSW = perIter(sw, r.Iterations)
	return r, nil
}

// busyRow summarises busy_get's samples (microseconds, any order). Rounds can take no
// sample at all (a --busy of at most 2 ms ends the sampling before the first operation
// starts, 1 ms into the round). The row then has no figures and Iterations 0, which the
// table prints as "-".
func busyRow(size int, samples []float64) row {
	if len(samples) == 0 {
		return row{Bytes: size}
	}
	slices.Sort(samples)
	return row{Bytes: size, Iterations: len(samples), MedianUS: round3(percentile(samples, 50)),
		MaxUS: round3(samples[len(samples)-1])}
}

// busyRound runs one round at an origin: its samples go to samples, the context switches
// of its loop of operations are added to sw.
func busyRound(ctx context.Context, b *bench, want []byte, samples *[]float64, sw *[2]float64) error {
	t0 := time.Now()
	time.Sleep(time.Millisecond)
	got := b.dst[:len(want)]
	cs := benchkit.Switches()
	defer func() {
		d := since(cs)
		sw[0] += d[0]
		sw[1] += d[1]
	}()
	for n := 0; n < busyOps && time.Since(t0) < b.o.busy/2; n++ {
		clear(got)
		t := time.Now()
		if err := b.bytes.Lock(ctx, window.Shared, b.peer, 0); err != nil {
			return err
		}
		if err := b.bytes.Get(got, b.peer, 0); err != nil {
			return err
		}
		if err := b.bytes.Unlock(ctx, b.peer); err != nil {
			return err
		}
		*samples = append(*samples, float64(time.Since(t).Nanoseconds())/1e3)
		if err := check("busy_get", got, want); err != nil {
			return err
		}
	}
	return nil
}

// sink keeps the result of spin alive.
var sink atomic.Uint64

// spin computes for d without calling the runtime (time.Now is a vDSO read).
func spin(d time.Duration) uint64 {
	end := time.Now().Add(d)
	x := uint64(1)
	for time.Now().Before(end) {
		for range 1000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	return x
}
