package main

import (
	"fmt"

	gorma "github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// fenceStep: a Fence epoch of operations from every rank to every rank, then a Fence
// epoch of Gets, all checked.
func (e *env) fenceStep() error { return e.fenceOn(e.pickWin()) }

func (e *env) fenceOn(m *winModel) error {
	d := e.drawAll(m, false, func(o, t int) bool { return true })
	if err := m.win.Fence(e.ctx, 0); err != nil {
		return err
	}
	var ps []pending
	for t := range e.size {
		for _, op := range d[e.rank][t] {
			p, err := e.issue(m, op, nil)
			if err != nil {
				return err
			}
			ps = append(ps, p)
		}
	}
	if err := m.win.Fence(e.ctx, 0); err != nil {
		return err
	}
	if err := e.finish(e.ctx, m, ps); err != nil {
		return err
	}
	if err := e.checkLocal(m, "fence"); err != nil {
		return err
	}
	return e.getEpoch(m)
}

// getEpoch Gets the drawn ranges in a Fence epoch and checks them.
func (e *env) getEpoch(m *winModel) error {
	targets, disps, want := e.readBack(m)
	got := make([][]int64, len(targets))
	for i, t := range targets {
		got[i] = make([]int64, len(want[i]))
		if err := m.win.Get(got[i], t, disps[i]); err != nil {
			return fmt.Errorf("%s get from %d: %w", m.name, t, err)
		}
	}
	if err := m.win.Fence(e.ctx, window.NoSucceed); err != nil { // ends the epochs
		return err
	}
	for i := range got {
		if err := check(e, fmt.Sprintf("%s get from %d disp %d", m.name, targets[i], disps[i]), got[i], want[i]); err != nil {
			return err
		}
	}
	return nil
}

// pscwStep: origin o accesses o+1 and sometimes o+2 (mod Size) in a PSCW epoch.
func (e *env) pscwStep() error {
	m := e.pickWin()
	n := e.size
	access := make([][]bool, n)
	for o := range n {
		access[o] = make([]bool, n)
		access[o][(o+1)%n] = true
		if n > 2 && e.rng.IntN(2) == 0 {
			access[o][(o+2)%n] = true
		}
	}
	d := e.drawAll(m, false, func(o, t int) bool { return access[o][t] })
	var post, start []int
	for r := range n {
		if access[r][e.rank] {
			post = append(post, r)
		}
		if access[e.rank][r] {
			start = append(start, r)
		}
	}
	if len(post) > 0 {
		if err := m.win.Post(e.ctx, post, 0); err != nil {
			return fmt.Errorf("post %v: %w", post, err)
		}
	}
	if err := m.win.Start(e.ctx, start, 0); err != nil {
		return fmt.Errorf("start %v: %w", start, err)
	}
	var ps []pending
	for _, t := range start {
		for _, op := range d[e.rank][t] {
			p, err := e.issue(m, op, nil)
			if err != nil {
				return err
			}
			ps = append(ps, p)
		}
	}
	if err := m.win.Complete(e.ctx); err != nil {
		return fmt.Errorf("complete: %w", err)
	}
	if err := e.finish(e.ctx, m, ps); err != nil {
		return err
	}
	if len(post) > 0 {
		if err := m.win.Wait(e.ctx); err != nil {
			return fmt.Errorf("wait: %w", err)
		}
	}
	if err := e.checkLocal(m, "pscw"); err != nil {
		return err
	}
	return gorma.Barrier(e.ctx, e.w) // nobody writes into a rank before it checked
}

// lockStep: each origin locks some targets one at a time (exclusive or shared), issues
// its operations with a Flush in the middle, reads back its own lane after a Flush, and
// unlocks.
func (e *env) lockStep() error {
	m := e.pickWin()
	n := e.size
	pick := make([][]bool, n)
	types := make([][]window.LockType, n)
	for o := range n {
		pick[o], types[o] = make([]bool, n), make([]window.LockType, n)
		for t := range n {
			pick[o][t] = e.rng.IntN(3) != 0
			types[o][t] = window.Shared
			if e.rng.IntN(2) == 0 {
				types[o][t] = window.Exclusive
			}
		}
	}
	d := e.drawAll(m, true, func(o, t int) bool { return pick[o][t] })
	for t := range n {
		if !pick[e.rank][t] {
			continue
		}
		if err := m.win.Lock(e.ctx, types[e.rank][t], t, 0); err != nil {
			return fmt.Errorf("lock %d: %w", t, err)
		}
		if err := e.passiveOps(m, d[e.rank][t:t+1], func() error { return m.win.Flush(e.ctx, t) }); err != nil {
			return err
		}
		if err := m.win.Unlock(e.ctx, t); err != nil {
			return fmt.Errorf("unlock %d: %w", t, err)
		}
	}
	return e.afterPassive(m)
}

// lockAllStep: LockAll, operations on every rank, FlushAll, read back, UnlockAll.
func (e *env) lockAllStep() error {
	m := e.pickWin()
	d := e.drawAll(m, true, func(o, t int) bool { return true })
	if err := m.win.LockAll(e.ctx, 0); err != nil {
		return fmt.Errorf("lockall: %w", err)
	}
	if err := e.passiveOps(m, d[e.rank], func() error { return m.win.FlushAll(e.ctx) }); err != nil {
		return err
	}
	if err := m.win.UnlockAll(e.ctx); err != nil {
		return fmt.Errorf("unlockall: %w", err)
	}
	return e.afterPassive(m)
}

// passiveOps issues ops (by target) inside a passive epoch, flushing halfway and at the
// end, then Gets back and checks the chunks of this origin's lane that they wrote.
func (e *env) passiveOps(m *winModel, byTarget [][]rmaOp, flush func() error) error {
	var ps []pending
	var all []rmaOp
	for _, ops := range byTarget {
		all = append(all, ops...)
	}
	for i, op := range all {
		p, err := e.issue(m, op, flush)
		if err != nil {
			return err
		}
		ps = append(ps, p)
		if i == len(all)/2 {
			if err := flush(); err != nil {
				return fmt.Errorf("flush: %w", err)
			}
		}
	}
	if err := flush(); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	if err := e.finish(e.ctx, m, ps); err != nil {
		return err
	}
	// This origin's lane at each target is written by it only: after the flush a Get
	// sees exactly the model.
	for _, op := range all {
		if op.kind == "cacc" || op.kind == "cfop" {
			continue
		}
		lo := op.o * m.lane(op.t)
		got := make([]int64, m.lane(op.t))
		if err := m.win.Get(got, op.t, lo); err != nil {
			return fmt.Errorf("%s get back from %d: %w", m.name, op.t, err)
		}
		if err := flush(); err != nil {
			return err
		}
		if err := check(e, fmt.Sprintf("%s own lane at %d after flush", m.name, op.t), got, m.model[op.t][lo:lo+len(got)]); err != nil {
			return err
		}
	}
	return nil
}

// afterPassive waits until every origin unlocked, checks this rank's memory (and Gets of
// others' under a shared lock), and waits until every rank checked.
func (e *env) afterPassive(m *winModel) error {
	if err := gorma.Barrier(e.ctx, e.w); err != nil {
		return err
	}
	if err := e.checkLocal(m, "passive epochs"); err != nil {
		return err
	}
	targets, disps, want := e.readBack(m)
	for i, t := range targets {
		got := make([]int64, len(want[i]))
		if err := m.win.Lock(e.ctx, window.Shared, t, 0); err != nil {
			return err
		}
		if err := m.win.Get(got, t, disps[i]); err != nil {
			return err
		}
		if err := m.win.Unlock(e.ctx, t); err != nil {
			return err
		}
		if err := check(e, fmt.Sprintf("%s locked get from %d disp %d", m.name, t, disps[i]), got, want[i]); err != nil {
			return err
		}
	}
	return gorma.Barrier(e.ctx, e.w)
}

// winChurn makes a short-lived window (Allocate, or Create over a new slice), runs a
// Fence epoch on it, and frees it: arena memory and keys are reused with new generations.
func (e *env) winChurn() error {
	n := 256 + 8*e.rng.IntN(64)
	create := e.rng.IntN(2) == 0
	var win *window.Win[int64]
	var err error
	if create {
		win, err = window.Create(e.ctx, e.w, make([]int64, n))
	} else {
		win, err = window.Allocate[int64](e.ctx, e.w, n)
	}
	if err != nil {
		return fmt.Errorf("churn window: %w", err)
	}
	lens := make([]int, e.size)
	for t := range lens {
		lens[t] = n
	}
	m := e.newModel(fmt.Sprintf("churn%d", e.step), win, lens)
	if err := win.Fence(e.ctx, 0); err != nil {
		return err
	}
	if err := e.fenceOn(m); err != nil {
		return err
	}
	e.maybeGC()
	if err := win.Free(e.ctx); err != nil {
		return fmt.Errorf("free churn window: %w", err)
	}
	return nil
}
