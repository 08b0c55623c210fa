package shm

// SendQueued reports whether send work waits in the QP's send queue: a Send for which
// the peer has posted no receive yet, or that finds no room in its ring, and everything
// posted after it. Such work moves on only in this side's later PostSend, Poll and Wait
// calls, so a caller that stops calling them must know. Safe from any goroutine.
func (q *qp) SendQueued() bool { return q.queued.Load() != 0 }
