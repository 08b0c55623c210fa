package runtime

import "context"

// Barrier returns once every rank of w has called Barrier (the same number of times). It
// uses the dissemination algorithm: in round k (k = 0, 1, ... while 2^k < Size) each rank
// sends an empty message to rank+2^k and receives one from rank-2^k, modulo Size, so it
// takes ceil(log2(Size)) rounds of one message each. The messages travel in w's internal
// context, so they never match user receives (AnySource and AnyTag included). Once any
// peer has failed, Barrier fails at every rank with a *ProcError naming it. On an
// intercommunicator it returns once every rank of both groups has called it.
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
	if err == nil && e.failed != nil {
		err = e.failed
	}
	e.mu.Unlock()
	if err != nil || n == 1 {
		return err
	}
	for round, k := 0, 1; k < n; round, k = round+1, k<<1 {
		dst, _ := w.jobRank((me + k) % n)
		src, _ := w.jobRank((me - k + n) % n)
		if err := e.send(ctx, w.ctx+1, nil, 1, dst, round); err != nil {
			return err
		}
		if _, err := e.recv(ctx, w.ctx+1, nil, 1, src, round, true); err != nil {
			return err
		}
	}
	return nil
}
