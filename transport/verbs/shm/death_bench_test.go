package shm

import (
	"context"
	"encoding/hex"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/futex"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// BenchmarkPeerDeath measures the window between a peer's death and the error that
// reports it. Each iteration starts a child process (TestChildProcess), connects a QP to
// it, and has a killer thread of its own SIGKILL the child, as another process or the
// kernel's OOM killer would:
//
//   - recv: this side sleeps in CQ.Wait on a posted receive, which the monitor flushes.
//   - write: this side spins on 8-byte RDMA writes and polls each one, as a Put+Flush
//     loop does, until one fails. The window is the time from the kill to the start of
//     the last write that still completed successfully (0 if none did): the span in
//     which the dead peer's completions lied. Its fail-us metrics are the time to the
//     first failed write; under load they add this side's own waits for a CPU.
//   - marked: a thread sleeps in FUTEX_WAIT on the child's liveness word (live.go),
//     which the kernel wakes as it marks the word: kill to mark, plus one wake-up.
//
// Each with the child watched through a pidfd, and polled (past the device's pidfd
// budget: within monitorFallbackPoll). Metrics: the median window, the 10th and 90th
// percentiles and the largest, in microseconds.
//
//	go test -run '^$' -bench PeerDeath -benchtime 20x ./transport/verbs/shm
func BenchmarkPeerDeath(b *testing.B) {
	for _, kind := range []struct {
		name   string
		window func(testing.TB) (window, fail time.Duration)
	}{{"recv", deathWindow}, {"write", writeDeathWindow}, {"marked", markedWindow}} {
		b.Run(kind.name+"/pidfd", func(b *testing.B) { peerDeath(b, kind.window) })
		b.Run(kind.name+"/polled", func(b *testing.B) {
			old := pidfdBudget
			pidfdBudget = 0
			defer func() { pidfdBudget = old }()
			peerDeath(b, kind.window)
		})
	}
}

func peerDeath(b *testing.B, window func(testing.TB) (window, fail time.Duration)) {
	var windows, fails []time.Duration
	for b.Loop() {
		b.StopTimer()
		w, f := window(b)
		windows, fails = append(windows, w), append(fails, f)
		b.StartTimer()
	}
	same := slices.Equal(windows, fails)
	report := func(prefix string, d []time.Duration) {
		slices.Sort(d)
		at := func(q float64) float64 { return float64(d[int(q*float64(len(d)-1))].Microseconds()) }
		b.ReportMetric(at(0.5), prefix+"us-median")
		b.ReportMetric(at(0.1), prefix+"us-p10")
		b.ReportMetric(at(0.9), prefix+"us-p90")
		b.ReportMetric(at(1), prefix+"us-max")
	}
	report("", windows)
	if !same {
		report("fail-", fails)
	}
	b.ReportMetric(0, "ns/op") // the iteration time is the child's start-up
}

// futexWaiters is FUTEX_WAITERS: a sleeper on a robust futex, whom the kernel wakes
// when it marks the word.
const futexWaiters = 0x80000000

// killer SIGKILLs c from a thread of its own once start is closed, and returns the
// kill's time in Unix nanoseconds (0 until then).
func killer(b testing.TB, c *childProc, start <-chan struct{}) *atomic.Int64 {
	var at atomic.Int64
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		<-start
		time.Sleep(time.Millisecond) // the measuring side is at work
		at.Store(time.Now().UnixNano())
		if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			b.Error(err)
		}
	}()
	return &at
}

// writeDeathWindow connects to a fresh child and spins on signaled RDMA writes into its
// arena while a killer thread kills it. It returns the time from the kill to the start
// of the last write that completed successfully, and to the first that failed.
func writeDeathWindow(b testing.TB) (window, fail time.Duration) {
	c, me, key := connectChild(b)
	defer me.dev.Close()
	src := make([]byte, 8)
	wr := verbs.SendWR{Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: src, Remote: verbs.RemoteAddr{RKey: key}}
	var wc [1]verbs.WC
	start := make(chan struct{})
	killed := killer(b, c, start)
	close(start)
	deadline := time.Now().Add(testbudget.Scale(10 * time.Second))
	for {
		t := time.Now().UnixNano()
		if err := me.qp.PostSend(&wr); err != nil {
			b.Fatal(err)
		}
		n, err := me.cq.Poll(wc[:])
		if err != nil || n != 1 {
			b.Fatalf("poll after a write: %d completions, %v", n, err)
		}
		k := killed.Load()
		if wc[0].Status != verbs.Success {
			if k == 0 {
				b.Fatalf("a write to the child failed before the kill: %v", wc[0].Status)
			}
			return window, time.Duration(time.Now().UnixNano() - k)
		}
		if k != 0 && t > k {
			window = time.Duration(t - k)
		}
		if time.Now().After(deadline) {
			b.Fatal("writes to a SIGKILLed child still succeed")
		}
	}
}

// markedWindow connects to a fresh child, sleeps in FUTEX_WAIT on its liveness word
// with FUTEX_WAITERS set, and returns the time from the kill to the kernel's wake-up
// (the robust-list walk wakes a word's waiters as it marks it).
func markedWindow(b testing.TB) (window, fail time.Duration) {
	c, me, _ := connectChild(b)
	defer me.dev.Close()
	w := me.qp.(*qp).peer.live
	if w == &me.qp.(*qp).peer.own {
		b.Fatal("the child's endpoint names no liveness word")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := make(chan struct{})
	killed := killer(b, c, start)
	close(start)
	deadline := time.Now().Add(testbudget.Scale(10 * time.Second))
	for {
		v := w.Load()
		if v&ownerDied != 0 {
			d := time.Duration(time.Now().UnixNano() - killed.Load())
			return d, d
		}
		if time.Now().After(deadline) {
			b.Fatal("the SIGKILLed child's liveness word is not marked")
		}
		if v&futexWaiters == 0 && !w.CompareAndSwap(v, v|futexWaiters) {
			continue
		}
		futex.Wait(w, v|futexWaiters, time.Second)
	}
}

// deathWindow connects to a fresh child, kills it while this side waits for a receive,
// and returns the time from the kill to the flushed completion.
func deathWindow(b testing.TB) (window, fail time.Duration) {
	c := startChild(b)
	f := c.expect(b, "HELLO")
	childEP, err := hex.DecodeString(f[0])
	if err != nil {
		b.Fatal(err)
	}
	me := openSide(b, verbs.Config{Wait: verbs.WaitBlock}, verbs.QPAttr{})
	defer me.dev.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := verbs.Connect(ctx, me.qp, childEP); err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(c.in, "EP %x\n", me.qp.Endpoint())
	c.expect(b, "CONNECTED")
	rb := me.allocMR(b, 64, verbs.LocalWrite)
	me.recv(b, verbs.RecvWR{WRID: 1, Local: rb.Bytes(), LKey: rb.LKey()})
	done := make(chan time.Time, 1)
	go func() {
		me.cq.Wait(ctx)
		done <- time.Now()
	}()
	time.Sleep(5 * time.Millisecond) // asleep in Wait
	t0 := time.Now()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		b.Fatal(err)
	}
	t1 := <-done
	wantWC(b, me.next(b), 1, verbs.WRFlushErr, verbs.WCRecv)
	return t1.Sub(t0), t1.Sub(t0)
}
