package verbstest

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// atomicScenario is one atomic operation on a word holding init.
type atomicScenario struct {
	name       string
	op         verbs.Opcode
	init       uint64
	compareAdd uint64
	swap       uint64
	after      uint64 // the word's value afterwards; the result is always init
}

var atomicScenarios = []atomicScenario{
	{"FetchAdd", verbs.OpAtomicFetchAdd, 5, 7, 0, 12},
	{"FetchAddWraps", verbs.OpAtomicFetchAdd, math.MaxUint64 - 1, 3, 0, 1},
	{"CmpSwapHit", verbs.OpAtomicCmpSwap, 5, 5, 9, 9},
	{"CmpSwapMiss", verbs.OpAtomicCmpSwap, 5, 6, 9, 5},
}

// testAtomicOps runs fetch-add and compare-swap on words at the start, inside and at the
// end of an MR, in arena and user memory, with the result landing in arena, user and
// unregistered memory. Neighbouring bytes must stay untouched.
func testAtomicOps(t *testing.T, f Factory) {
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	needCaps(t, verbs.CapAtomic, a, b)
	const mrLen = 4096
	for _, sc := range atomicScenarios {
		t.Run(sc.name, func(t *testing.T) {
			for _, remote := range []memKind{arenaMem, userMem} {
				for _, local := range []memKind{arenaMem, userMem, unregMem} {
					for _, off := range []int{0, 8, mrLen - 8} {
						name := fmt.Sprintf("%s-to-%s@%d", local, remote, off)
						t.Run(name, func(t *testing.T) { atomicOnce(t, e, a, b, sc, local, remote, off, mrLen) })
					}
				}
			}
		})
	}
}

func atomicOnce(t *testing.T, e *env, a, b *node, sc atomicScenario, local, remote memKind, off, mrLen int) {
	if remote == userMem {
		needCaps(t, verbs.CapUserMemAtomic, a, b)
	}
	x, _ := e.link(t, a, b, qpOpts{})
	rem := b.alloc(t, remote, mrLen, verbs.LocalWrite|verbs.RemoteAtomic)
	fill(rem.b, 21)
	put64(rem.b[off:], sc.init)
	before := clone(rem.b)
	loc := a.alloc(t, local, 64, verbs.LocalWrite)
	fill(loc.b, 22)
	locBefore := clone(loc.b)
	post(t, x, verbs.SendWR{WRID: 4, Op: sc.op, Flags: verbs.Signaled, Local: loc.b[8:16], LKey: loc.lkey(),
		Remote: verbs.RemoteAddr{RKey: rem.rkey(), Offset: uint64(off)}, CompareAdd: sc.compareAdd, Swap: sc.swap})
	wc := e.waitOne(t, x.cq)
	checkWC(t, sc.name, wc, verbs.WC{WRID: 4, Op: verbs.WCOpcodeOf(sc.op), QPN: x.qp.Num()}, fBasic)
	if got := get64(loc.b[8:]); got != sc.init {
		t.Errorf("result %#x, want the old value %#x", got, sc.init)
	}
	wantLoc := clone(locBefore)
	put64(wantLoc[8:], sc.init)
	checkBytes(t, "local buffer around the 8-byte result", loc.b, wantLoc)
	if got := get64(rem.b[off:]); got != sc.after {
		t.Errorf("target word %#x, want %#x", got, sc.after)
	}
	want := clone(before)
	put64(want[off:], sc.after)
	checkBytes(t, "target MR", rem.b, want)
}

// faWorker runs n fetch-adds of 1 on (rkey, off) through x, keeping up to window requests
// outstanding and polling only x's CQ, and returns the values fetched.
func faWorker(x *end, rkey, off uint64, n, window int) ([]uint64, error) {
	res, err := x.node.pd.AllocMR(8*window, verbs.LocalWrite)
	if err != nil {
		return nil, fmt.Errorf("AllocMR: %w", err)
	}
	defer res.Dereg()
	olds := make([]uint64, 0, n)
	free := make([]int, window) // result slots not in use
	for i := range free {
		free[i] = i
	}
	wcs := make([]verbs.WC, window)
	posted := 0
	deadline := time.Now().Add(3 * waitTimeout)
	for len(olds) < n {
		for posted < n && len(free) > 0 {
			slot := free[len(free)-1]
			wr := verbs.SendWR{WRID: uint64(slot), Op: verbs.OpAtomicFetchAdd, Flags: verbs.Signaled,
				Local: res.Bytes()[8*slot : 8*slot+8], LKey: res.LKey(),
				Remote: verbs.RemoteAddr{RKey: rkey, Offset: off}, CompareAdd: 1}
			if err := x.qp.PostSend(&wr); err != nil {
				return olds, fmt.Errorf("post fetch-add %d: %w", posted, err)
			}
			free = free[:len(free)-1]
			posted++
		}
		k, err := x.cq.cq.Poll(wcs)
		if err != nil {
			return olds, fmt.Errorf("poll: %w", err)
		}
		for _, wc := range wcs[:k] {
			if wc.Status != verbs.Success {
				return olds, fmt.Errorf("fetch-add completed with %s", fmtWC(wc))
			}
			olds = append(olds, get64(res.Bytes()[8*wc.WRID:]))
			free = append(free, int(wc.WRID))
		}
		if k == 0 {
			if time.Now().After(deadline) {
				return olds, fmt.Errorf("%d of %d fetch-adds done after %v", len(olds), n, 3*waitTimeout)
			}
			runtime.Gosched()
		}
	}
	return olds, nil
}

// checkPermutation checks that olds holds each of 0..len(olds)-1 exactly once, as the
// values fetched by fetch-adds of 1 on a word starting at 0 must.
func checkPermutation(t testing.TB, olds []uint64) {
	t.Helper()
	s := slices.Clone(olds)
	slices.Sort(s)
	for i, v := range s {
		if v != uint64(i) {
			t.Errorf("fetched values are not 0..%d each once: sorted position %d holds %d (lost or duplicated update)",
				len(s)-1, i, v)
			return
		}
	}
}

// testConcurrentAtomics has four initiator devices do fetch-adds on one word concurrently.
// The final value and the set of fetched values must be exact.
func testConcurrentAtomics(t *testing.T, f Factory) {
	e := newEnv(f)
	target := e.open(t, "target")
	needCaps(t, verbs.CapAtomic, target)
	const initiators, n = 4, 500
	word := target.alloc(t, arenaMem, 64, verbs.LocalWrite|verbs.RemoteAtomic)
	clear(word.b)
	ends := make([]*end, initiators)
	for i := range ends {
		ini := e.open(t, fmt.Sprint("initiator", i))
		ends[i], _ = e.link(t, ini, target, qpOpts{sendWR: 32})
	}
	var (
		mu   sync.Mutex
		olds []uint64
		errs []error
		wg   sync.WaitGroup
	)
	for i, x := range ends {
		wg.Go(func() {
			got, err := faWorker(x, word.rkey(), 8, n, 8)
			mu.Lock()
			defer mu.Unlock()
			olds = append(olds, got...)
			if err != nil {
				errs = append(errs, fmt.Errorf("initiator %d: %w", i, err))
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if got := get64(word.b[8:]); got != initiators*n {
		t.Errorf("word after %d concurrent fetch-adds of 1: %d", initiators*n, got)
	}
	checkPermutation(t, olds)
}

// testCmpSwapMutex builds a spin lock from compare-swap and uses it to protect a counter
// updated with a plain RDMA read and write. Lost updates mean the lock failed.
func testCmpSwapMutex(t *testing.T, f Factory) {
	e := newEnv(f)
	target := e.open(t, "target")
	needCaps(t, verbs.CapAtomic|verbs.CapRDMARead|verbs.CapRDMAWrite, target)
	const initiators, iters = 4, 50
	mem := target.alloc(t, arenaMem, 128, verbs.AccessAll)
	clear(mem.b) // lock word at 0, counter at 64
	ends := make([]*end, initiators)
	for i := range ends {
		ini := e.open(t, fmt.Sprint("initiator", i))
		ends[i], _ = e.link(t, ini, target, qpOpts{})
	}
	var wg sync.WaitGroup
	errs := make([]error, initiators)
	for i, x := range ends {
		wg.Go(func() { errs[i] = lockedIncrements(x, mem.rkey(), uint64(i+1), iters) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if got := get64(mem.b[64:]); got != initiators*iters {
		t.Errorf("counter after %d locked increments: %d", initiators*iters, got)
	}
	if got := get64(mem.b); got != 0 {
		t.Errorf("lock word after all releases: %d, want 0", got)
	}
}

// lockedIncrements takes the lock at offset 0 with owner id, increments the counter at
// offset 64 by RDMA read and write, and releases the lock, iters times.
func lockedIncrements(x *end, rkey, id uint64, iters int) error {
	loc, err := x.node.pd.AllocMR(16, verbs.LocalWrite)
	if err != nil {
		return err
	}
	defer loc.Dereg()
	buf := loc.Bytes()
	do := func(wr verbs.SendWR) error {
		wr.Flags, wr.LKey, wr.Remote.RKey = verbs.Signaled, loc.LKey(), rkey
		if err := x.qp.PostSend(&wr); err != nil {
			return fmt.Errorf("post %v: %w", wr.Op, err)
		}
		wcs, err := collectOnly(x.cq, 1)
		if err != nil {
			return fmt.Errorf("%v: %w", wr.Op, err)
		}
		if wcs[0].Status != verbs.Success {
			return fmt.Errorf("%v completed with %s", wr.Op, fmtWC(wcs[0]))
		}
		return nil
	}
	for range iters {
		for tries := 0; ; tries++ {
			if err := do(verbs.SendWR{Op: verbs.OpAtomicCmpSwap, Local: buf[:8], CompareAdd: 0, Swap: id}); err != nil {
				return err
			}
			if get64(buf) == 0 {
				break
			}
			if tries > 1e6 {
				return fmt.Errorf("lock not acquired after %d tries (held by %d)", tries, get64(buf))
			}
			runtime.Gosched()
		}
		if err := do(verbs.SendWR{Op: verbs.OpRDMARead, Local: buf[8:16], Remote: verbs.RemoteAddr{Offset: 64}}); err != nil {
			return err
		}
		put64(buf[8:], get64(buf[8:])+1)
		if err := do(verbs.SendWR{Op: verbs.OpRDMAWrite, Local: buf[8:16], Remote: verbs.RemoteAddr{Offset: 64}}); err != nil {
			return err
		}
		if err := do(verbs.SendWR{Op: verbs.OpAtomicCmpSwap, Local: buf[:8], CompareAdd: id, Swap: 0}); err != nil {
			return err
		}
		if got := get64(buf); got != id {
			return fmt.Errorf("released a lock held by %d, not by me (%d)", got, id)
		}
	}
	return nil
}

// collectOnly polls only c for n completions, for worker goroutines (no testing.TB).
func collectOnly(c *cqBuf, n int) ([]verbs.WC, error) {
	var e env
	return e.collect(c, n, false, waitTimeout)
}
