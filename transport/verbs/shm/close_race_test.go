package shm

import (
	"errors"
	"sync"
	"testing"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// TestPollRacesDeviceClose: Poll takes no registration, so a Close may retire the arena
// while polls are reading its rings. Pollers spinning on a CQ (while the peer keeps
// sending) must end in ErrClosed, never a fault or a hang, whenever Close lands.
func TestPollRacesDeviceClose(t *testing.T) {
	for round := range 20 {
		a, b := pair(t, verbs.Config{}, verbs.QPAttr{})
		src := a.allocMR(t, 64, 0)
		dst := b.allocMR(t, 64*16, verbs.LocalWrite)
		for k := range 16 {
			b.recv(t, verbs.RecvWR{WRID: uint64(k), Local: dst.Bytes()[k*64 : (k+1)*64], LKey: dst.LKey()})
		}
		swr := verbs.SendWR{Op: verbs.OpSend, Local: src.Bytes(), LKey: src.LKey()}
		for range 8 {
			if err := a.qp.PostSend(&swr); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				wcs := make([]verbs.WC, 4)
				for {
					if _, err := b.cq.Poll(wcs); err != nil {
						if !errors.Is(err, verbs.ErrClosed) {
							errs <- err
						}
						return
					}
				}
			}()
		}
		for range round * 4 {
			a.qp.PostSend(&swr) // may find no credit: it then waits in the send queue
		}
		c := b.cq.(*cq)
		stale := c.qps.Load() // what a Poll that passed its closed check still iterates
		if err := b.dev.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		// Such a Poll now reads the rings of the closed device's QPs: inert memory, no
		// fault, and nothing delivered.
		c.qps.Store(stale)
		if _, n := c.progress(make([]verbs.WC, 4)); n != 0 {
			t.Errorf("round %d: a poll of the closed device delivered %d completions", round, n)
		}
		close(errs)
		for err := range errs {
			t.Errorf("round %d: Poll after Close: %v, want ErrClosed", round, err)
		}
	}
}
