package verbstest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// stressConcurrentPosters has eight goroutines post signaled RDMA writes and Sends on one
// QP at once, retrying on ErrQueueFull, while one goroutine polls each side. Every
// accepted request completes exactly once and each goroutine's requests complete in its
// post order; the writes' data and the Sends' payloads arrive, in per-goroutine order.
// The pollers either spin on Poll (as shm's copy did) or block in CQ.Wait (as tcp's did).
func stressConcurrentPosters(t *testing.T, f Factory) {
	t.Run("Poll", func(t *testing.T) { concurrentPosters(t, f, false) })
	t.Run("Wait", func(t *testing.T) { concurrentPosters(t, f, true) })
}

const (
	nPosters   = 8   // posting goroutines
	perPoster  = 150 // requests of each; every third is a Send, the others RDMA writes
	posterSlot = 16  // bytes per request: poster and index
	posterRecv = 32  // receives posted at the target
)

// posting is ConcurrentPosters' fixture.
type posting struct {
	x, y           *end
	src, dst, rbuf *buffer
	ctx            context.Context // bounds the case
	wait           bool            // pollers block in Wait rather than spin
}

func concurrentPosters(t *testing.T, f Factory, wait bool) {
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	needCaps(t, verbs.CapSend|verbs.CapRDMAWrite, a, b)
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	defer cancel()
	p := &posting{ctx: ctx, wait: wait}
	p.x, p.y = e.link(t, a, b, qpOpts{sendWR: 16, recvWR: posterRecv})
	p.src = a.alloc(t, arenaMem, nPosters*perPoster*posterSlot, verbs.AccessAll)
	p.dst = b.alloc(t, arenaMem, nPosters*perPoster*posterSlot, verbs.AccessAll)
	p.rbuf = b.alloc(t, arenaMem, posterRecv*posterSlot, verbs.AccessAll)
	clear(p.dst.b)
	for r := range posterRecv {
		postRecv(t, p.y, verbs.RecvWR{WRID: uint64(r), Local: p.rbuf.b[r*posterSlot : (r+1)*posterSlot], LKey: p.rbuf.lkey()})
	}
	errc := make(chan error, nPosters+2)
	var wg sync.WaitGroup
	for g := range nPosters {
		wg.Go(func() {
			if err := p.post(g); err != nil {
				errc <- err
			}
		})
	}
	recvDone := make(chan struct{})
	go func() {
		defer close(recvDone)
		if err := p.receive(); err != nil {
			errc <- err
		}
	}()
	if err := p.complete(errc); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	select {
	case <-recvDone:
	case <-ctx.Done():
		t.Fatal("receiver did not finish")
	}
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	for k := range nPosters * perPoster {
		sl := k * posterSlot
		if k%perPoster%3 != 0 && !bytes.Equal(p.dst.b[sl:sl+posterSlot], p.src.b[sl:sl+posterSlot]) {
			t.Fatalf("write %d did not land", k)
		}
	}
}

// post posts poster g's requests, retrying on ErrQueueFull.
func (p *posting) post(g int) error {
	for i := range perPoster {
		k := g*perPoster + i
		buf := p.src.b[k*posterSlot : (k+1)*posterSlot]
		binary.LittleEndian.PutUint64(buf, uint64(g))
		binary.LittleEndian.PutUint64(buf[8:], uint64(i))
		wr := verbs.SendWR{WRID: uint64(k), Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: buf, LKey: p.src.lkey(),
			Remote: verbs.RemoteAddr{RKey: p.dst.rkey(), Offset: uint64(k * posterSlot)}}
		if i%3 == 0 {
			wr.Op = verbs.OpSend
		}
		for {
			err := p.x.qp.PostSend(&wr)
			if err == nil {
				break
			}
			if !errors.Is(err, verbs.ErrQueueFull) || p.ctx.Err() != nil {
				return fmt.Errorf("poster %d: %v", g, err)
			}
			runtime.Gosched()
		}
	}
	return nil
}

// idle waits for work on c after the empties-th empty Poll; false means the case's time
// is up. Spinning yields, and sleeps briefly every 64 polls: with every processor busy
// spinning, the Go scheduler looks at the network poller only every 10 ms, which starves
// a provider whose completions come from goroutines blocked in it (tcp).
func (p *posting) idle(c verbs.CQ, empties int) bool {
	switch {
	case p.wait:
		ctx, cancel := context.WithTimeout(p.ctx, 50*time.Millisecond)
		defer cancel()
		_ = c.Wait(ctx)
	case empties%64 == 0:
		time.Sleep(20 * time.Microsecond)
	default:
		runtime.Gosched()
	}
	return p.ctx.Err() == nil
}

// receive takes the Sends at the target, checks their per-poster order and reposts.
func (p *posting) receive() error {
	sends := nPosters * ((perPoster + 2) / 3) // i%3 == 0
	next := make([]int, nPosters)
	wcs := make([]verbs.WC, 8)
	empties := 0
	for got := 0; got < sends; {
		n, err := p.y.cq.cq.Poll(wcs)
		if err != nil {
			return fmt.Errorf("receiver: %v", err)
		}
		if n == 0 {
			if empties++; !p.idle(p.y.cq.cq, empties) {
				return fmt.Errorf("receiver: %d of %d messages", got, sends)
			}
			continue
		}
		for _, wc := range wcs[:n] {
			if wc.Status != verbs.Success || wc.Op != verbs.WCRecv || wc.ByteLen != posterSlot {
				return fmt.Errorf("receiver: %s", fmtWC(wc))
			}
			m := p.rbuf.b[int(wc.WRID)*posterSlot : int(wc.WRID+1)*posterSlot]
			g, i := int(binary.LittleEndian.Uint64(m)), int(binary.LittleEndian.Uint64(m[8:]))
			if g >= nPosters || i != next[g] {
				return fmt.Errorf("receiver: message (%d, %d), want index %d", g, i, next[min(g, nPosters-1)])
			}
			next[g] += 3
			got++
			if err := p.y.qp.PostRecv(&verbs.RecvWR{WRID: wc.WRID, Local: m, LKey: p.rbuf.lkey()}); err != nil {
				return fmt.Errorf("receiver: repost: %v", err)
			}
		}
	}
	return nil
}

// complete takes every completion at the initiator: each request once, successful, in
// its poster's order. It stops at the first error of another goroutine.
func (p *posting) complete(errc <-chan error) error {
	total := nPosters * perPoster
	seen := make([]bool, total)
	lastOf := make([]int, nPosters)
	for i := range lastOf {
		lastOf[i] = -1
	}
	wcs := make([]verbs.WC, 8)
	empties := 0
	for got := 0; got < total; {
		select {
		case err := <-errc:
			return err
		default:
		}
		n, err := p.x.cq.cq.Poll(wcs)
		if err != nil {
			return err
		}
		if n == 0 {
			if empties++; !p.idle(p.x.cq.cq, empties) {
				return fmt.Errorf("initiator: %d of %d completions", got, total)
			}
			continue
		}
		for _, wc := range wcs[:n] {
			k := int(wc.WRID)
			if wc.Status != verbs.Success || k >= total || seen[k] {
				return fmt.Errorf("completion %s (seen %v)", fmtWC(wc), k < total && seen[k])
			}
			seen[k] = true
			g, i := k/perPoster, k%perPoster
			if i <= lastOf[g] {
				return fmt.Errorf("poster %d: request %d completed after %d", g, i, lastOf[g])
			}
			lastOf[g] = i
			got++
		}
	}
	return nil
}
