package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

// loop runs the measured Allreduce with --pause between calls until one fails or until
// next, called after each call from the --warmup-th on, says to stop. Rank 0 writes
// DIR/ready after the --warmup-th call.
func loop(ctx context.Context, w *runtime.World, o options, next func() (bool, error)) error {
	for i := 1; ; i++ {
		if err := allreduce(ctx, w); err != nil {
			return err
		}
		if i == o.warmup && w.Rank() == 0 {
			if err := writeFile(o.stateDir, "ready", "ready"); err != nil {
				return err
			}
		}
		if i >= o.warmup {
			if stop, err := next(); stop || err != nil {
				return err
			}
		}
		time.Sleep(o.pause)
	}
}

// killCase runs the loop until a call fails, then revokes and shrinks the World until an
// Allreduce on the shrunk World succeeds (a rank may fail during Shrink).
func killCase(ctx context.Context, w *runtime.World, o options) (*runtime.World, *report, error) {
	before, hostsWas := w.Size(), hosts(w)
	err := loop(ctx, w, o, func() (bool, error) { return false, nil })
	if !failure(err) {
		return nil, nil, err
	}
	ts := []int64{time.Now().UnixNano(), 0, 0} // failed, shrunk, done
	for err != nil {
		if err = w.Revoke(); err != nil {
			return nil, nil, fmt.Errorf("rank %d: revoke: %w", w.Rank(), err)
		}
		if w, err = w.Shrink(ctx); err != nil {
			return nil, nil, fmt.Errorf("shrink: %w", err)
		}
		ts[1] = time.Now().UnixNano()
		if err = allreduce(ctx, w); err != nil && !failure(err) {
			return nil, nil, fmt.Errorf("rank %d: the Allreduce after Shrink: %w", w.Rank(), err)
		}
	}
	ts[2] = time.Now().UnixNano()
	rep := &report{Case: "kill", Before: before, HostsWas: hostsWas, Ranks: w.Size(), Hosts: hosts(w)}
	all, mark, err := gather(ctx, w, o, ts)
	if err != nil || w.Rank() != 0 {
		return w, rep, err
	}
	failed, _ := extremes(column(all, 3, 0))
	_, shrunk := extremes(column(all, 3, 1))
	_, done := extremes(column(all, 3, 2))
	rep.DetectS, rep.ShrinkS, rep.RecoverS = since(mark, failed), since(mark, shrunk), since(mark, done)
	return w, rep, nil
}

// joinCase runs the loop, calling Spawn for the ranks the World lacks of --grow-to after
// every call until it succeeds; then the merged World runs one Allreduce.
func joinCase(ctx context.Context, w *runtime.World, o options) (*runtime.World, *report, error) {
	before, hostsWas := w.Size(), hosts(w)
	var ic *runtime.World
	said := false
	err := loop(ctx, w, o, func() (bool, error) {
		var err error
		if ic, err = w.Spawn(ctx, o.growTo-w.Size()); err == nil || failure(err) {
			return true, err
		}
		if !said && w.Rank() == 0 {
			fmt.Fprintf(os.Stderr, "ftbench: Spawn of %d ranks found no room; trying after every call: %v\n", o.growTo-w.Size(), err)
		}
		said = true
		return false, nil
	})
	if err != nil {
		return nil, nil, err
	}
	ts := []int64{time.Now().UnixNano(), 0} // spawned, done
	merged, err := ic.Merge(ctx, false)
	if err != nil {
		return nil, nil, fmt.Errorf("rank %d: merge with the spawned ranks: %w", w.Rank(), err)
	}
	return grown(ctx, merged, o, ts, before, hostsWas)
}

// joined is a spawned rank's part: Merge with its parents and the merged World's
// Allreduce.
func joined(ctx context.Context, parent *runtime.World, o options) (*runtime.World, *report, error) {
	merged, err := parent.Merge(ctx, true)
	if err != nil {
		return nil, nil, fmt.Errorf("spawned rank: merge with the ranks that started it: %w", err)
	}
	return grown(ctx, merged, o, []int64{0, 0}, 0, 0)
}

// grown runs the merged World's Allreduce and gathers the times at its rank 0, an old
// rank (the spawned ones Merge high).
func grown(ctx context.Context, w *runtime.World, o options, ts []int64, before, hostsWas int) (*runtime.World, *report, error) {
	if err := allreduce(ctx, w); err != nil {
		return nil, nil, fmt.Errorf("rank %d: the merged World's Allreduce: %w", w.Rank(), err)
	}
	ts[1] = time.Now().UnixNano()
	rep := &report{Case: "join", Before: before, HostsWas: hostsWas, Ranks: w.Size(), Hosts: hosts(w)}
	all, mark, err := gather(ctx, w, o, ts)
	if err != nil || w.Rank() != 0 {
		return w, rep, err
	}
	var spawned int64
	for _, t := range column(all, 2, 0) {
		spawned = max(spawned, t) // the spawned ranks gave 0
	}
	_, done := extremes(column(all, 2, 1))
	rep.SpawnS, rep.RecoverS = since(mark, spawned), since(mark, done)
	return w, rep, nil
}

// gather collects every rank's times at rank 0, which also reads the mark.
func gather(ctx context.Context, w *runtime.World, o options, ts []int64) (all []int64, mark int64, err error) {
	if w.Rank() == 0 {
		all = make([]int64, len(ts)*w.Size())
	}
	if err := collectives.Gather(ctx, w, ts, all, 0); err != nil {
		return nil, 0, fmt.Errorf("rank %d: gather the times: %w", w.Rank(), err)
	}
	if w.Rank() == 0 {
		mark, err = readMark(o.mark)
	}
	return all, mark, err
}

// column returns the c-th of every k values of v.
func column(v []int64, k, c int) []int64 {
	out := make([]int64, 0, len(v)/k)
	for i := c; i < len(v); i += k {
		out = append(out, v[i])
	}
	return out
}
