package shm

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// BenchmarkPeerDeath measures the window between a peer's death and the error that
// reports it. Each iteration starts a child process (TestChildProcess), connects a QP to
// it, SIGKILLs it, and times kill to the first failed completion:
//
//   - recv: this side sleeps in CQ.Wait on a posted receive, which the monitor flushes;
//   - write: this side spins on 8-byte RDMA writes and polls each one, as a Put+Flush
//     loop does, until one fails; the liveness word (live.go) fails it.
//
// Each with the child watched through a pidfd, and polled (past the device's pidfd
// budget: within monitorFallbackPoll). Metrics: the median window, the 10th and 90th
// percentiles and the largest, in microseconds.
//
//	go test -run '^$' -bench PeerDeath -benchtime 20x ./transport/verbs/shm
func BenchmarkPeerDeath(b *testing.B) {
	for _, kind := range []struct {
		name   string
		window func(testing.TB) time.Duration
	}{{"recv", deathWindow}, {"write", writeDeathWindow}} {
		b.Run(kind.name+"/pidfd", func(b *testing.B) { peerDeath(b, kind.window) })
		b.Run(kind.name+"/polled", func(b *testing.B) {
			old := pidfdBudget
			pidfdBudget = 0
			defer func() { pidfdBudget = old }()
			peerDeath(b, kind.window)
		})
	}
}

func peerDeath(b *testing.B, window func(testing.TB) time.Duration) {
	var windows []time.Duration
	for b.Loop() {
		b.StopTimer()
		windows = append(windows, window(b))
		b.StartTimer()
	}
	slices.Sort(windows)
	at := func(q float64) float64 { return float64(windows[int(q*float64(len(windows)-1))].Microseconds()) }
	b.ReportMetric(at(0.5), "us-median")
	b.ReportMetric(at(0.1), "us-p10")
	b.ReportMetric(at(0.9), "us-p90")
	b.ReportMetric(at(1), "us-max")
	b.ReportMetric(0, "ns/op") // the iteration time is the child's start-up
}

// writeDeathWindow connects to a fresh child, kills it while this side spins on signaled
// RDMA writes into its arena, and returns the time from the kill to the first write that
// completes with an error.
func writeDeathWindow(b testing.TB) time.Duration {
	c, me, key := connectChild(b)
	defer me.dev.Close()
	src := make([]byte, 8)
	wr := verbs.SendWR{Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: src, Remote: verbs.RemoteAddr{RKey: key}}
	var wc [1]verbs.WC
	t0 := time.Now()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		b.Fatal(err)
	}
	for {
		if err := me.qp.PostSend(&wr); err != nil {
			b.Fatal(err)
		}
		n, err := me.cq.Poll(wc[:])
		if err != nil || n != 1 {
			b.Fatalf("poll after a write: %d completions, %v", n, err)
		}
		if wc[0].Status != verbs.Success {
			return time.Since(t0)
		}
		if time.Since(t0) > testbudget.Scale(10*time.Second) {
			b.Fatal("writes to a SIGKILLed child still succeed")
		}
	}
}

// deathWindow connects to a fresh child, kills it while this side waits for a receive,
// and returns the time from the kill to the flushed completion.
func deathWindow(b testing.TB) time.Duration {
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
	return t1.Sub(t0)
}
