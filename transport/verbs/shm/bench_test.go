package shm

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// pollOne polls until one completion arrives and returns it.
func pollOne(c verbs.CQ, wcs []verbs.WC) verbs.WC {
	for {
		if n, _ := c.Poll(wcs[:1]); n == 1 {
			return wcs[0]
		}
	}
}

func rmaWR(op verbs.Opcode, local []byte, rkey uint64) verbs.SendWR {
	return verbs.SendWR{Op: op, Flags: verbs.Signaled, Local: local, Remote: verbs.RemoteAddr{RKey: rkey, Offset: 64}}
}

func TestZeroAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts are checked without -short")
	}
	a, b := pair(t, verbs.Config{}, verbs.QPAttr{})
	target := b.allocMR(t, 4096, verbs.AccessAll)
	local := a.allocMR(t, 4096, verbs.LocalWrite)
	wcs := make([]verbs.WC, 4)
	for _, op := range []verbs.Opcode{verbs.OpRDMAWrite, verbs.OpRDMARead, verbs.OpAtomicFetchAdd} {
		wr := rmaWR(op, local.Bytes()[:8], target.RKey())
		wr.LKey = local.LKey()
		allocs := testing.AllocsPerRun(1000, func() {
			if err := a.qp.PostSend(&wr); err != nil {
				t.Fatal(err)
			}
			if wc := pollOne(a.cq, wcs); wc.Status != verbs.Success {
				t.Fatal(wc.Status)
			}
		})
		if allocs != 0 {
			t.Errorf("%v 8 B PostSend+Poll: %v allocations, want 0", op, allocs)
		}
	}
	// Send, receive and repost.
	rb := b.allocMR(t, 64, verbs.LocalWrite)
	rwr := verbs.RecvWR{Local: rb.Bytes(), LKey: rb.LKey()}
	b.qp.PostRecv(&rwr)
	swr := verbs.SendWR{Op: verbs.OpSend, Flags: verbs.Signaled, Local: local.Bytes()[:8], LKey: local.LKey()}
	allocs := testing.AllocsPerRun(1000, func() {
		a.qp.PostSend(&swr)
		pollOne(b.cq, wcs)
		b.qp.PostRecv(&rwr)
		pollOne(a.cq, wcs)
	})
	if allocs != 0 {
		t.Errorf("8 B send/recv: %v allocations, want 0", allocs)
	}
}

func benchRMA(b *testing.B, op verbs.Opcode, size int) {
	x, y := pair(b, verbs.Config{}, verbs.QPAttr{})
	target := y.allocMR(b, size+64, verbs.AccessAll)
	local := x.allocMR(b, size, verbs.LocalWrite)
	wr := rmaWR(op, local.Bytes(), target.RKey())
	wr.LKey = local.LKey()
	wcs := make([]verbs.WC, 1)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		if err := x.qp.PostSend(&wr); err != nil {
			b.Fatal(err)
		}
		if wc := pollOne(x.cq, wcs); wc.Status != verbs.Success {
			b.Fatal(wc.Status)
		}
	}
}

// BenchmarkWrite8 is an 8-byte RDMA write posted and polled to completion.
func BenchmarkWrite8(b *testing.B) { benchRMA(b, verbs.OpRDMAWrite, 8) }

// BenchmarkRead8 is an 8-byte RDMA read posted and polled to completion.
func BenchmarkRead8(b *testing.B) { benchRMA(b, verbs.OpRDMARead, 8) }

// BenchmarkFetchAdd is an atomic fetch-and-add posted and polled to completion.
func BenchmarkFetchAdd(b *testing.B) { benchRMA(b, verbs.OpAtomicFetchAdd, 8) }

// BenchmarkWrite1M is a 1 MiB RDMA write (bandwidth).
func BenchmarkWrite1M(b *testing.B) { benchRMA(b, verbs.OpRDMAWrite, 1<<20) }

// BenchmarkSendRecv8 is a ping-pong of 8-byte Sends between two goroutines (standing for
// two processes), one round trip per iteration; halfRTT-ns is the one-way latency to
// compare with BenchmarkFlagPingPong.
func BenchmarkSendRecv8(b *testing.B) { benchPingPong(b, 8) }

// BenchmarkSendRecv4K is the same with 4 KiB messages.
func BenchmarkSendRecv4K(b *testing.B) { benchPingPong(b, 4096) }

func benchPingPong(b *testing.B, size int) {
	if runtime.GOMAXPROCS(0) < 2 {
		b.Skip("needs two processors")
	}
	x, y := pair(b, verbs.Config{}, verbs.QPAttr{MaxSendWR: 128, MaxRecvWR: 128})
	type end struct {
		s      *side
		src, r verbs.MR
	}
	ends := [2]end{{s: x}, {s: y}}
	for i := range ends {
		e := &ends[i]
		e.src = e.s.allocMR(b, size, 0)
		e.r = e.s.allocMR(b, 64*size, verbs.LocalWrite)
		for k := range 64 {
			e.s.recv(b, verbs.RecvWR{WRID: uint64(k), Local: e.r.Bytes()[k*size : (k+1)*size], LKey: e.r.LKey()})
		}
	}
	n := b.N
	rtts := make([]time.Duration, 0, n)
	// play runs one side: send (if first) and then, n times, wait for a message and answer.
	play := func(e *end, first bool) {
		wcs := make([]verbs.WC, 16)
		swr := verbs.SendWR{Op: verbs.OpSend, Local: e.src.Bytes(), LKey: e.src.LKey()}
		sent := 0
		send := func() {
			sent++
			swr.Flags = 0
			if sent%32 == 0 {
				swr.Flags = verbs.Signaled // release send queue slots now and then
			}
			if err := e.s.qp.PostSend(&swr); err != nil {
				panic(err)
			}
		}
		start := time.Now()
		if first {
			send()
		}
		for got := 0; got < n; {
			k, _ := e.s.cq.Poll(wcs)
			for _, wc := range wcs[:k] {
				if wc.Status != verbs.Success {
					panic(wc.Status.String())
				}
				if wc.Op != verbs.WCRecv {
					continue
				}
				got++
				if first {
					now := time.Now()
					rtts = append(rtts, now.Sub(start))
					start = now
				}
				rwr := verbs.RecvWR{WRID: wc.WRID, Local: e.r.Bytes()[int(wc.WRID)*size : (int(wc.WRID)+1)*size], LKey: e.r.LKey()}
				e.s.qp.PostRecv(&rwr)
				if got < n || !first {
					send()
				}
			}
		}
	}
	b.ResetTimer()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); play(&ends[1], false) }()
	play(&ends[0], true)
	wg.Wait()
	reportHalfRTT(b, rtts)
}

// reportHalfRTT reports the mean and the median one-way latency. On a machine shared with
// other work the mean is dominated by the rare round trips during which a spinning side
// lost its processor; the median shows the cost of the protocol itself.
func reportHalfRTT(b *testing.B, rtts []time.Duration) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "halfRTT-ns")
	if len(rtts) > 0 {
		slices.Sort(rtts)
		b.ReportMetric(float64(rtts[len(rtts)/2].Nanoseconds())/2, "p50-halfRTT-ns")
	}
}

// BenchmarkFlagPingPong is the floor for BenchmarkSendRecv8: two goroutines bouncing a
// counter through two flag words on separate cache lines.
func BenchmarkFlagPingPong(b *testing.B) {
	if runtime.GOMAXPROCS(0) < 2 {
		b.Skip("needs two processors")
	}
	var flags struct {
		ping atomic.Uint64
		_    [56]byte
		pong atomic.Uint64
	}
	n := uint64(b.N)
	rtts := make([]time.Duration, 0, n)
	b.ResetTimer()
	done := make(chan struct{})
	go func() {
		for i := uint64(1); i <= n; i++ {
			for flags.ping.Load() != i {
			}
			publish(&flags.pong, i) // a release store, as the rings publish (an atomic Store is XCHG)
		}
		close(done)
	}()
	start := time.Now()
	for i := uint64(1); i <= n; i++ {
		publish(&flags.ping, i)
		for flags.pong.Load() != i {
		}
		now := time.Now()
		rtts = append(rtts, now.Sub(start))
		start = now
	}
	<-done
	reportHalfRTT(b, rtts)
}
