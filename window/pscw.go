package window

import (
	"context"
	"errors"

	"github.com/gorma-hpc/gorma/internal/prof"
)

// General active-target synchronization (MPI_Win_post, start, complete, wait, test).
//
// The handshake runs entirely on metadata words (meta.go), never on messages, so no
// call waits for code of another rank to run except for the matching PSCW call itself:
//
//	Post(group)    target: adds 1 to word post+me in the metadata of every origin in group
//	Start(group)   origin: waits until its own word post+t counts more Posts than it has
//	               consumed from each target t, and consumes one
//	Complete()     origin: completes its operations to each target (flush), then adds 1 to
//	               word done+me in the target's metadata
//	Wait(), Test() target: waits until its own word done+o counts more Completes than it
//	               has consumed from each origin o, and consumes one
//
// The words count epochs, so a target may post again before an origin has started the
// previous epoch and nothing is lost. On a mapped rank an increment is a CPU atomic add on
// its metadata; otherwise a remote fetch-and-add. Complete's increment is posted only after
// the flush has returned: the target sees the Complete after the data.

func (w *epochs[T]) Post(ctx context.Context, group []int, assert Assert) error {
	if w.ob != nil {
		return w.ob.sync(prof.CallPost, -1, -1, func() error { return w.post(ctx, group, assert) })
	}
	return w.post(ctx, group, assert)
}

func (w *epochs[T]) post(ctx context.Context, group []int, assert Assert) error {
	const op = "post"
	if err := w.pscwCheck(op, group); err != nil {
		return err
	}
	s := &w.pscw
	if s.exposureOn {
		return werrf(op, -1, -1, ErrEpoch, "an exposure epoch is already open (Wait first)")
	}
	if assert&NoStore == 0 {
		if err := w.coh.ownerSync(ctx); err != nil { // cache.go: own stores reach cached copies
			return werr(op, w.rank, -1, err)
		}
	}
	if assert&NoCheck == 0 {
		for _, r := range group {
			if err := w.reach(&w.tg[r]); err != nil {
				return werr(op, r, -1, err)
			}
			if err := w.addMeta(ctx, &w.tg[r], w.lay.post+w.rank); err != nil {
				return werr(op, r, -1, err)
			}
		}
	}
	s.exposure = append(s.exposure[:0], group...)
	s.exposureOn = true
	w.ob.begins(epExposure)
	return nil
}

func (w *epochs[T]) Start(ctx context.Context, group []int, assert Assert) error {
	if w.ob != nil {
		return w.ob.sync(prof.CallStart, -1, -1, func() error { return w.start(ctx, group, assert) })
	}
	return w.start(ctx, group, assert)
}

func (w *epochs[T]) start(ctx context.Context, group []int, assert Assert) error {
	const op = "start"
	if err := w.pscwCheck(op, group); err != nil {
		return err
	}
	s := &w.pscw
	if s.accessOn {
		return werrf(op, -1, -1, ErrEpoch, "an access epoch is already open (Complete first)")
	}
	for _, r := range group { // Complete tells every target through its metadata
		if err := w.reach(&w.tg[r]); err != nil {
			return werr(op, r, -1, err)
		}
	}
	if assert&NoCheck == 0 {
		for _, r := range group {
			t := &w.tg[r]
			i, want := w.lay.post+r, s.started[r]+1
			err := w.waitOn(ctx, blocked{w.track, "window.Start", 0, nil}, w.mw, func() bool { return load(w.mw, i) >= want }, func() error { return w.targetErr(t) })
			if err != nil {
				return werr(op, r, -1, err)
			}
		}
		for _, r := range group { // consumed only once all have posted: a failed Start is undone
			s.started[r]++
		}
	}
	s.access = append(s.access[:0], group...)
	s.accessOn = true
	w.ob.begins(epAccess)
	for _, r := range group {
		w.tg[r].open |= openStart
	}
	return nil
}

func (w *epochs[T]) Complete(ctx context.Context) error {
	if w.ob != nil {
		return w.ob.sync(prof.CallComplete, -1, -1, func() error { return w.complete(ctx) })
	}
	return w.complete(ctx)
}

func (w *epochs[T]) complete(ctx context.Context) error {
	const op = "complete"
	if err := w.usable(op, -1, -1); err != nil {
		return err
	}
	s := &w.pscw
	if !s.accessOn {
		return werrf(op, -1, -1, ErrEpoch, "no access epoch is open (Start first)")
	}
	var first error
	for _, r := range s.access {
		t := &w.tg[r]
		err := w.dp.flush(ctx, t, op)
		if err == nil && r == w.rank {
			err = werr(op, r, -1, w.coh.ownerSync(ctx)) // Puts to self reach cached copies
		}
		if err == nil {
			err = werr(op, r, -1, w.addMeta(ctx, t, w.lay.done+w.rank))
		}
		if err != nil && first == nil {
			first = err
		}
		t.open &^= openStart
	}
	s.accessOn = false
	w.ob.ends(epAccess)
	return first
}

func (w *epochs[T]) Wait(ctx context.Context) error {
	if w.ob != nil {
		return w.ob.sync(prof.CallWaitEpoch, -1, -1, func() error { return w.wait(ctx) })
	}
	return w.wait(ctx)
}

func (w *epochs[T]) wait(ctx context.Context) error {
	const op = "wait"
	if err := w.exposureCheck(op); err != nil {
		return err
	}
	if err := w.waitOn(ctx, blocked{w.track, "window.Wait", 0, nil}, w.mw, w.completed, func() error { return w.originsErr(op) }); err != nil {
		return werr(op, -1, -1, err)
	}
	w.endExposure()
	return nil
}

func (w *epochs[T]) Test() (bool, error) {
	if w.ob == nil {
		return w.test()
	}
	c := w.ob.begin(prof.CallWaitEpoch)
	done, err := w.test()
	w.ob.synced(c, lTest, -1)
	return done, err
}

func (w *epochs[T]) test() (bool, error) {
	const op = "test"
	if err := w.exposureCheck(op); err != nil {
		return false, err
	}
	if !w.completed() {
		return false, w.originsErr(op)
	}
	w.endExposure()
	return true, nil
}

func (w *epochs[T]) exposureCheck(op string) error {
	if err := w.usable(op, -1, -1); err != nil {
		return err
	}
	if !w.pscw.exposureOn {
		return werrf(op, -1, -1, ErrEpoch, "no exposure epoch is open (Post first)")
	}
	return nil
}

// completed reports whether every origin of the exposure epoch has completed.
func (w *epochs[T]) completed() bool {
	s := &w.pscw
	for _, r := range s.exposure {
		if load(w.mw, w.lay.done+r) < s.waited[r]+1 {
			return false
		}
	}
	return true
}

func (w *epochs[T]) endExposure() {
	s := &w.pscw
	for _, r := range s.exposure {
		s.waited[r]++
	}
	s.exposureOn = false
	w.ob.ends(epExposure)
}

// originsErr returns the error (naming it) of a failed origin of the exposure epoch that
// has not completed, or nil.
func (w *epochs[T]) originsErr(op string) error {
	s := &w.pscw
	for _, r := range s.exposure {
		if load(w.mw, w.lay.done+r) > s.waited[r] {
			continue // it completed: its failure no longer matters to this epoch
		}
		if err := w.targetErr(&w.tg[r]); err != nil {
			return werr(op, r, -1, err)
		}
	}
	return nil
}

// pscwCheck checks the state and the group of a Post or Start.
func (w *epochs[T]) pscwCheck(op string, group []int) error {
	if err := w.usable(op, -1, -1); err != nil {
		return err
	}
	if w.locks > 0 || w.lockAll {
		return werrf(op, -1, -1, ErrEpoch, "PSCW inside a passive-target epoch (Unlock first)")
	}
	if err := w.fenceGiveWay(op, -1); err != nil {
		return err
	}
	s := &w.pscw
	if s.seen == nil {
		s.seen = make([]bool, w.size)
		s.started = make([]uint64, w.size)
		s.waited = make([]uint64, w.size)
	}
	var err error
	for _, r := range group {
		switch {
		case uint(r) >= uint(w.size):
			err = werrf(op, r, -1, ErrInvalid, "group names rank %d of a window of %d ranks", r, w.size)
		case s.seen[r]:
			err = werrf(op, r, -1, ErrInvalid, "group names rank %d twice", r)
		default:
			s.seen[r] = true
			continue
		}
		break
	}
	for _, r := range group {
		if uint(r) < uint(w.size) {
			s.seen[r] = false
		}
	}
	return err
}

// addMeta adds 1 to metadata word i of t: a CPU atomic on mapped metadata (this rank's
// own included), a remote fetch-and-add otherwise.
func (w *epochs[T]) addMeta(ctx context.Context, t *target[T], i int) error {
	if t.mw != nil {
		add(t.mw, i, 1)
		ring(t.mw)
		return nil
	}
	if t.meta == nil {
		return errors.New("internal: no metadata for rank") // unreachable: every peer has one
	}
	_, err := w.remoteAdd(ctx, t, i, 1)
	return err
}
