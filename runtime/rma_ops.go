package runtime

import (
	"context"
	"fmt"
	"time"

	"github.com/gorma-hpc/gorma/internal/gosched"
	"github.com/gorma-hpc/gorma/runtime/internal/subcore"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// counter is the runtime's side of a subcore.Counter: its slot in e.rma.counters and its
// counts, guarded by e.mu.
type counter struct {
	e       *engine
	idx     uint32
	pending int     // guarded by e.mu
	byRank  []int32 // pending per target rank, guarded by e.mu
	err     error   // first error since the last Wait, guarded by e.mu
	req     Request // Wait parks on it; completed when pending reaches 0
	closed  bool
}

// newCounter returns a counter for this World's one-sided requests (substrate.NewCounter).
func (w *World) newCounter() *counter {
	e := w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	c := &counter{e: e, byRank: make([]int32, len(e.links.peers))}
	c.req.e = e
	c.req.kind = reqSync
	if n := len(e.rma.counterFree); n > 0 {
		c.idx = e.rma.counterFree[n-1]
		e.rma.counterFree = e.rma.counterFree[:n-1]
		e.rma.counters[c.idx] = c
	} else {
		c.idx = uint32(len(e.rma.counters))
		e.rma.counters = append(e.rma.counters, c)
	}
	return c
}

// Close releases the counter; its pending requests must have completed (Wait).
func (c *counter) Close() {
	e := c.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	if c.pending == 0 {
		e.rma.counters[c.idx] = nil
		e.rma.counterFree = append(e.rma.counterFree, c.idx)
	}
	// Otherwise the slot stays taken: late completions find a closed counter.
}

// Pending reports how many counted requests have not completed.
func (c *counter) Pending() int {
	c.e.mu.Lock()
	defer c.e.mu.Unlock()
	return c.pending
}

// Wait makes progress until every request counted so far has completed, or ctx ends.
// It returns the first error among them (once: the next Wait starts afresh).
func (c *counter) Wait(ctx context.Context) error {
	e := c.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if c.pending > 0 {
		c.req.done = false
		err := e.waitLocked(ctx, &c.req)
		// It may have been the poller: hand the role to a parked goroutine, or that one
		// sleeps until its context ends (TestStressCounterWaitHandsOff).
		e.poll.handoffLocked()
		if err != nil {
			return fmt.Errorf("wait for one-sided requests: %w", err)
		}
	}
	err := c.err
	c.err = nil
	return err
}

// maxWR is the largest transfer one work request carries; longer ones are split.
const maxWR = readChunk

// Post posts one-sided requests counted on pc (subcore.Remote's Write, Read, FetchAdd,
// CmpSwap), split into requests of at most maxWR bytes.
func (r *remote) Post(pc *subcore.Counter, op verbs.Opcode, off uint64, local []byte, add, swap uint64) error {
	if size := r.pub.Size(); off > uint64(size) || uint64(len(local)) > uint64(size)-off {
		return invalidf("one-sided %v of %d bytes at offset %d of rank %d's %d-byte region", op, len(local), off, r.pub.Rank(), size)
	}
	c := subcore.Ops(pc).(*counter)
	e := r.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkLocked(); err != nil {
		return err
	}
	if !r.pub.Live() {
		return fmt.Errorf("%w: one-sided request on a closed remote region of rank %d", ErrInvalid, r.pub.Rank())
	}
	for {
		n := min(len(local), maxWR)
		if err := e.rma.postRMALocked(c, r, op, off, local[:n], add, swap); err != nil {
			return err
		}
		if op.IsAtomic() || n == len(local) {
			return nil
		}
		local, off = local[n:], off+uint64(n)
	}
}

func (s *rmaState) postRMALocked(c *counter, r *remote, op verbs.Opcode, off uint64, local []byte, add, swap uint64) error {
	p := r.p
	for p.failed == nil && p.sqFree == 0 {
		if err := s.rmaRoomLocked(c, p); err != nil {
			return err
		}
	}
	if p.failed != nil {
		return p.failed
	}
	p.swr = verbs.SendWR{WRID: wrid(wrRMA, p.rank, c.idx), Op: op, Flags: verbs.Signaled,
		Local: local, Remote: verbs.RemoteAddr{RKey: r.rkey, Offset: off}, CompareAdd: add, Swap: swap}
	if err := p.qp.PostSend(&p.swr); err != nil {
		return fmt.Errorf("%w: one-sided %v to rank %d: %w", ErrTransport, op, p.rank, err)
	}
	p.sqFree--
	c.pending++
	if p.rank >= len(c.byRank) { // a rank spawned since the counter was made
		c.byRank = append(c.byRank, make([]int32, p.rank+1-len(c.byRank))...)
	}
	c.byRank[p.rank]++
	return nil
}

// rmaRoomLocked waits for a send queue entry to p: by draining c when it has requests to
// p outstanding, otherwise by polling (the entries are held by messages, which complete
// without this rank's help) with a bounded spin and then short sleeps.
func (s *rmaState) rmaRoomLocked(c *counter, p *peer) error {
	e := s.e
	if p.rank < len(c.byRank) && c.byRank[p.rank] > 0 {
		c.req.done = false
		err := e.waitLocked(context.Background(), &c.req)
		e.poll.handoffLocked() // as in Wait
		return err
	}
	for i := 0; p.sqFree == 0 && p.failed == nil; i++ {
		if err := e.checkLocked(); err != nil {
			return err
		}
		if !e.poll.active {
			e.progressLocked()
		}
		if p.sqFree > 0 {
			break
		}
		e.mu.Unlock()
		if i < 100 {
			gosched.Yield()
		} else {
			time.Sleep(20 * time.Microsecond)
		}
		e.mu.Lock()
	}
	return nil
}

// rmaDoneLocked handles the completion of a counted one-sided request.
func (s *rmaState) rmaDoneLocked(p *peer, idx uint32, wc *verbs.WC) {
	e := s.e
	if p.failed != nil {
		return // its counters were failed with the peer
	}
	p.sqFree++
	if int(idx) >= len(s.counters) || s.counters[idx] == nil {
		return
	}
	c := s.counters[idx]
	if wc.Status != verbs.Success {
		// Fail the peer first: its failCountersLocked then completes this request. The
		// others to p, with p's *ProcError, so that the caller sees ErrProcFailed naming
		// the rank, as for every other operation with a failed peer (a window Lock or
		// atomic to a SIGKILLed rank over tcp: TestE2ERankKilled/tcp).
		e.peerFailedLocked(p, statusCause(p.dev.name, wc))
		return
	}
	c.countDoneLocked(p.rank, 1)
}

func (c *counter) countDoneLocked(rank int, n int32) {
	c.pending -= int(n)
	c.byRank[rank] -= n
	if c.pending == 0 {
		e := c.e
		if c.closed {
			e.rma.counters[c.idx] = nil
			e.rma.counterFree = append(e.rma.counterFree, c.idx)
			return
		}
		e.completeLocked(&c.req, nil)
	}
}

// failCountersLocked fails every counter's requests to the failed peer p.
func (s *rmaState) failCountersLocked(p *peer) {
	for _, c := range s.counters {
		if c == nil || p.rank >= len(c.byRank) || c.byRank[p.rank] == 0 {
			continue
		}
		if c.err == nil {
			c.err = p.failed
		}
		c.countDoneLocked(p.rank, c.byRank[p.rank])
	}
}

// failAllCountersLocked fails every counter (abort, finalize).
func (s *rmaState) failAllCountersLocked(err error) {
	for _, c := range s.counters {
		if c == nil || c.pending == 0 {
			continue
		}
		if c.err == nil {
			c.err = err
		}
		for rank, n := range c.byRank {
			if n > 0 {
				c.countDoneLocked(rank, n)
			}
		}
	}
}
