package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/gorma-hpc/gorma/runtime"
)

// failure reports whether err is a peer's failure or its consequence, which the job
// survives: a failed rank (runtime.ErrProcFailed) or a World revoked because of one
// (runtime.ErrRevoked).
func failure(err error) bool {
	return errors.Is(err, runtime.ErrProcFailed) || errors.Is(err, runtime.ErrRevoked)
}

// train runs steps until --steps committed and returns the World and state it ended
// with. A step commits when every rank agrees that it succeeded; otherwise the ranks
// shrink the World, restore the state and run the step again.
func (t *trainer) train(ctx context.Context, w *runtime.World, st *state) (*runtime.World, *state, error) {
	for st.step < t.o.steps {
		if t.o.refill && w.Size() < t.target {
			var err error
			if w, st, err = t.grow(ctx, w, st); err != nil {
				return nil, nil, err
			}
		}
		if t.o.pause > 0 {
			time.Sleep(t.o.pause)
		}
		next, err := t.step(ctx, w, st)
		ok, err := settle(ctx, w, err)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			st = next
			if w.Rank() == 0 {
				if err := t.writeFile("step", strconv.Itoa(st.step)); err != nil {
					return nil, nil, err
				}
			}
			continue
		}
		if w, st, err = t.rebuild(ctx, w, st); err != nil {
			return nil, nil, err
		}
	}
	return w, st, nil
}

// settle ends an attempt on w whose error was err: after a failure it revokes w, which
// ends every rank's pending call on w, and then the ranks agree whether the attempt
// succeeded at all of them. Agreement is uniform, so every rank commits the same steps.
// An error that is no failure ends the rank.
func settle(ctx context.Context, w *runtime.World, err error) (bool, error) {
	if err != nil && !failure(err) {
		return false, err
	}
	flag := 1
	if err != nil {
		flag = 0
		if rerr := w.Revoke(); rerr != nil {
			return false, fmt.Errorf("rank %d: revoke after %v: %w", w.Rank(), err, rerr)
		}
	}
	v, aerr := w.Agree(ctx, flag)
	if aerr != nil && !failure(aerr) {
		return false, fmt.Errorf("rank %d: agree: %w", w.Rank(), aerr)
	}
	return aerr == nil && v == 1, nil
}

// rebuild shrinks w to its surviving ranks and restores st over them.
func (t *trainer) rebuild(ctx context.Context, w *runtime.World, st *state) (*runtime.World, *state, error) {
	nw, err := w.Shrink(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("rank %d: shrink after a failure: %w", w.Rank(), err)
	}
	t.release(w)
	return t.adopt(ctx, nw, st)
}

// adopt restores st (nil at a new rank) over w and commits the result once every rank
// agrees; while a rank fails meanwhile, it shrinks w and tries again.
func (t *trainer) adopt(ctx context.Context, w *runtime.World, st *state) (*runtime.World, *state, error) {
	for {
		next, err := t.restore(ctx, w, st)
		ok, err := settle(ctx, w, err)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			if w.Rank() == 0 {
				fmt.Fprintf(os.Stderr, "elastic: step %d: %d ranks\n", next.step, w.Size())
			}
			return w, next, nil
		}
		nw, err := w.Shrink(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("rank %d: shrink after a failure: %w", w.Rank(), err)
		}
		t.release(w)
		w = nw
	}
}

// grow starts the ranks that w lacks of t.target (World.Spawn), merges them in and
// restores st over the whole. Spawn and Merge may succeed at some ranks and fail at
// others (a new rank that fails, say), so the ranks agree on each outcome. Where the
// job has no room, or the new ranks failed, grow returns w and st as they are, and the
// next step boundary tries again: a host that joins the job gets ranks that way.
func (t *trainer) grow(ctx context.Context, w *runtime.World, st *state) (*runtime.World, *state, error) {
	ic, err := w.Spawn(ctx, t.target-w.Size())
	all, gerr := t.agreeGrowth(ctx, w, st, "spawn", err)
	if !all || gerr != nil {
		if ic != nil {
			t.release(ic)
		}
		return t.noGrowth(ctx, w, st, gerr)
	}
	merged, err := ic.Merge(ctx, false)
	t.release(ic)
	if all, gerr = t.agreeGrowth(ctx, w, st, "merge", err); !all || gerr != nil {
		if merged != nil {
			t.release(merged)
		}
		return t.noGrowth(ctx, w, st, gerr)
	}
	t.release(w)
	return t.adopt(ctx, merged, st)
}

// agreeGrowth agrees over w whether a step of grow (what) succeeded at every rank; err is
// this rank's error. A failure of a rank of w itself comes back as gerr.
func (t *trainer) agreeGrowth(ctx context.Context, w *runtime.World, st *state, what string, err error) (all bool, gerr error) {
	if err != nil && w.Rank() == 0 && err.Error() != t.growErr {
		t.growErr = err.Error()
		fmt.Fprintf(os.Stderr, "elastic: rank %d, step %d: %s of %d ranks: %v; going on with %d and trying at every step\n", w.Rank(), st.step, what, t.target-w.Size(), err, w.Size())
	}
	flag := 0
	if err == nil {
		flag = 1
	}
	v, aerr := w.Agree(ctx, flag)
	if aerr != nil {
		return false, aerr
	}
	return v == 1, nil
}

// noGrowth goes on after a grow that did not succeed everywhere: with w and st as they
// are, or, where a rank of w failed (gerr), after rebuilding.
func (t *trainer) noGrowth(ctx context.Context, w *runtime.World, st *state, gerr error) (*runtime.World, *state, error) {
	if gerr == nil {
		return w, st, nil
	}
	if _, err := settle(ctx, w, gerr); err != nil {
		return nil, nil, err
	}
	return t.rebuild(ctx, w, st)
}

// release frees a World the job no longer uses; Init's World stays (Finalize ends it).
func (t *trainer) release(w *runtime.World) {
	if w == t.init {
		return
	}
	if err := w.Free(); err != nil {
		fmt.Fprintf(os.Stderr, "elastic: rank %d: free a former World: %v\n", w.Rank(), err)
	}
}
