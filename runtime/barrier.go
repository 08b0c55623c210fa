package runtime

import "context"

// Barrier returns once every rank of w has called it as often, by dissemination
// (ceil(log2(Size)) rounds of one message). Once any peer has failed it fails at every
// rank with a *ProcError naming it. On an intercommunicator it waits for both groups.
func Barrier(ctx context.Context, w *World) error {
	if err := w.live(); err != nil {
		return withOp("barrier", err)
	}
	// Observed, it counts as a Barrier call with a collective message of 0 bytes to each
	// rank w addresses, unless w is a layer's (a Sibling, a window's World), whose call
	// counts.
	c := w.e.obs.barrierBegin(w)
	err := w.k.barrier(ctx, w)
	w.e.obs.barrierEnd(c, w)
	return withOp("barrier", err)
}

// barrier is Barrier without observation, for the barriers a call makes within.
func barrier(ctx context.Context, w *World) error {
	if err := w.live(); err != nil {
		return err
	}
	return w.k.barrier(ctx, w)
}

// dissemination is Barrier of an intracommunicator.
func dissemination(ctx context.Context, w *World) error {
	e := w.e
	n, me := w.Size(), w.Rank()
	e.mu.Lock()
	err := e.checkLocked()
	if err == nil {
		err = e.ft.worldFailedLocked(w)
	}
	e.mu.Unlock()
	if err != nil || n == 1 {
		return err
	}
	for round, k := 0, 1; k < n; round, k = round+1, k<<1 {
		dst, _ := jobRank(w, (me+k)%n)
		src, _ := jobRank(w, (me-k+n)%n)
		if err := e.send(ctx, callNone, w.ctx+1, nil, 1, dst, round); err != nil {
			return err
		}
		if _, err := e.recv(ctx, w.ctx+1, nil, 1, src, round, true); err != nil {
			return err
		}
	}
	return nil
}
