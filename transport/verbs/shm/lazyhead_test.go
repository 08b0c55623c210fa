package shm

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// TestHeadLagStream streams messages of mixed sizes (one slot to several fragments)
// through a ring that keeps filling, in every wait mode, with the sender and the receiver
// in their own goroutines. The receiver publishes its head only every slots/headLagDiv
// slots; a sender that waited on a head the receiver never published would stall here
// (the test's deadline), and a lost byte or reordered message fails the check. At the end,
// with everything received, the sender's view of the published head must leave room for
// a whole record at once.
func TestHeadLagStream(t *testing.T) {
	sizes := []int{8, 40, 100, 1000, 5000, 33000, 70000, 8, 8, 8}
	const msgs = 1500
	for _, mode := range []verbs.WaitMode{verbs.WaitSpin, verbs.WaitHybrid, verbs.WaitBlock} {
		t.Run(mode.String(), func(t *testing.T) {
			a, b := pair(t, verbs.Config{Wait: mode}, verbs.QPAttr{})
			ctx, cancel := context.WithTimeout(t.Context(), testbudget.Scale(30*time.Second))
			defer cancel()
			stream(ctx, t, a, b, 70000, 64, sizes, msgs)
			q := a.qp.(*qp)
			q.mu.Lock()
			ok := q.tx.refresh()
			n := q.tx.fit(q.maxRec)
			q.mu.Unlock()
			if !ok || n != q.maxRec {
				t.Fatalf("drained ring: the sender's view of the published head fits %d of %d slots (refresh ok %v)", n, q.maxRec, ok)
			}
		})
	}
}

// stream sends msgs messages of sizes (in turn, at most maxSize bytes) from a to b, the
// sender and the receiver each in a goroutine of its own, b keeping depth receives posted,
// and fails t if a message is lost, reordered or damaged or ctx ends first.
func stream(ctx context.Context, t *testing.T, a, b *side, maxSize, depth int, sizes []int, msgs int) {
	t.Helper()
	src := a.allocMR(t, maxSize, 0)
	bufs := make([]verbs.MR, depth)
	for i := range bufs {
		bufs[i] = b.allocMR(t, maxSize, verbs.LocalWrite)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Go(func() { errs <- streamSend(ctx, a, src, sizes, msgs) })
	wg.Go(func() { errs <- streamRecv(ctx, b, bufs, sizes, msgs) })
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func streamSend(ctx context.Context, s *side, src verbs.MR, sizes []int, msgs int) error {
	wcs := make([]verbs.WC, 16)
	for i := 0; i < msgs; i++ {
		n := sizes[i%len(sizes)]
		copy(src.Bytes(), pattern(n, byte(i)))
		wr := verbs.SendWR{WRID: uint64(i), Op: verbs.OpSend, Local: src.Bytes()[:n], LKey: src.LKey(), Flags: verbs.Signaled}
		if err := s.qp.PostSend(&wr); err != nil {
			return fmt.Errorf("send %d: %w", i, err)
		}
		// One message in flight at a time: src is reused. A Send completes once it is
		// all in the receiver's ring, which is what fills it.
		for done := false; !done; {
			k, err := s.cq.Poll(wcs)
			if err != nil {
				return err
			}
			for _, wc := range wcs[:k] {
				if wc.Status != verbs.Success {
					return fmt.Errorf("send %d: %v", wc.WRID, wc.Status)
				}
				done = done || wc.WRID == uint64(i)
			}
			if k == 0 {
				if err := s.cq.Wait(ctx); err != nil {
					return fmt.Errorf("send %d waits: %w", i, err)
				}
			}
		}
	}
	return nil
}

func streamRecv(ctx context.Context, s *side, bufs []verbs.MR, sizes []int, msgs int) error {
	wcs := make([]verbs.WC, 16)
	posted, got := 0, 0
	for got < msgs {
		// Repost in bursts, a few at a time, so the ring holds queued records at times.
		for posted < msgs && posted-got < len(bufs) && (posted-got < 4 || got%7 == 0) {
			buf := bufs[posted%len(bufs)]
			if err := s.qp.PostRecv(&verbs.RecvWR{WRID: uint64(posted), Local: buf.Bytes(), LKey: buf.LKey()}); err != nil {
				return err
			}
			posted++
		}
		k, err := s.cq.Poll(wcs)
		if err != nil {
			return err
		}
		if k == 0 {
			if err := s.cq.Wait(ctx); err != nil {
				return fmt.Errorf("receive %d waits: %w", got, err)
			}
			continue
		}
		for _, wc := range wcs[:k] {
			n := sizes[got%len(sizes)]
			if wc.Status != verbs.Success || wc.WRID != uint64(got) || int(wc.ByteLen) != n {
				return fmt.Errorf("receive %d: %+v, want wrid %d, %d bytes", got, wc, got, n)
			}
			if string(bufs[got%len(bufs)].Bytes()[:n]) != string(pattern(n, byte(got))) {
				return fmt.Errorf("receive %d: payload differs", got)
			}
			got++
		}
	}
	return nil
}
