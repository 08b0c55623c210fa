package shm

import (
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/gorma-hpc/gorma/internal/testbudget"
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

// TestRetiredArenaUnmappedOnceUnreachable: Device.Close leaves the arena's range mapped
// (inert) for racing polls, and a cleanup unmaps it once the device is unreachable, so
// closing devices leaks no address space.
func TestRetiredArenaUnmappedOnceUnreachable(t *testing.T) {
	dev, err := verbs.Open(Name, testCfg)
	if err != nil {
		t.Fatal(err)
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(dev.(*device).arena.Segment().Bytes())))
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	dev = nil
	if !mapped(t, base) {
		t.Fatal("the retired arena's range is not mapped right after Close")
	}
	for deadline := time.Now().Add(testbudget.Scale(5 * time.Second)); mapped(t, base); {
		if time.Now().After(deadline) {
			t.Fatal("the retired arena's range is still mapped after the device became unreachable")
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// mapped reports whether addr lies in a mapping of this process (/proc/self/maps).
func mapped(t *testing.T, addr uintptr) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		r, _, _ := strings.Cut(l, " ")
		lo, hi, ok := strings.Cut(r, "-")
		if !ok {
			continue
		}
		a, err1 := strconv.ParseUint(lo, 16, 64)
		z, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil && uint64(addr) >= a && uint64(addr) < z {
			return true
		}
	}
	return false
}
