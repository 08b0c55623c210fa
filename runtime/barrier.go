package runtime

import "context"

// Barrier returns once every rank of w has called it (the same number of times), by
// dissemination: ceil(log2(Size)) rounds of one message, in w's internal context. Once any
// peer has failed it fails at every rank with a *ProcError naming it. On an
// intercommunicator it waits for every rank of both groups.
func Barrier(ctx context.Context, w *World) error {
	if err := w.live(); err != nil {
		return withOp("barrier", err)
	}
	return withOp("barrier", w.k.barrier(ctx, w))
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
		if err := e.send(ctx, w.ctx+1, nil, 1, dst, round); err != nil {
			return err
		}
		if _, err := e.recv(ctx, w.ctx+1, nil, 1, src, round, true); err != nil {
			return err
		}
	}
	return nil
}
