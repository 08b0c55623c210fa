package shm

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// BenchmarkPeerDeath measures the window between a peer's death and the error that
// reports it: a child process (TestChildProcess) connects a QP, this side posts a
// receive and sleeps in CQ.Wait, and each iteration SIGKILLs the child and times kill to
// the flushed completion. With the child watched through a pidfd, and polled (past the
// device's pidfd budget: within monitorFallbackPoll). Metrics: the median and the
// largest window.
//
//	go test -run '^$' -bench PeerDeath -benchtime 20x ./transport/verbs/shm
func BenchmarkPeerDeath(b *testing.B) {
	b.Run("pidfd", peerDeath)
	b.Run("polled", func(b *testing.B) {
		old := pidfdBudget
		pidfdBudget = 0
		defer func() { pidfdBudget = old }()
		peerDeath(b)
	})
}

func peerDeath(b *testing.B) {
	var windows []time.Duration
	for b.Loop() {
		b.StopTimer()
		windows = append(windows, deathWindow(b))
		b.StartTimer()
	}
	slices.Sort(windows)
	b.ReportMetric(float64(windows[len(windows)/2].Microseconds()), "us-median")
	b.ReportMetric(float64(windows[len(windows)-1].Microseconds()), "us-max")
	b.ReportMetric(0, "ns/op") // the iteration time is the child's start-up
}

// deathWindow connects to a fresh child, kills it while this side waits for a receive,
// and returns the time from the kill to the flushed completion.
func deathWindow(b *testing.B) time.Duration {
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
