package tcp

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// The benchmarks run both ends in this process over loopback. Compare the RDMA figures
// with the raw TCP ones of the same run (BenchmarkRawTCP*): the machine's speed drifts.

// tcpPair returns a connected loopback pair with TCP_NODELAY.
func tcpPair(b testing.TB) (client, server *net.TCPConn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	done := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		done <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	s := <-done
	client, server = c.(*net.TCPConn), s.(*net.TCPConn)
	client.SetNoDelay(true)
	server.SetNoDelay(true)
	b.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// BenchmarkRawTCPPingPong8 is the baseline round trip: 8 bytes there and back between two
// goroutines over loopback TCP, blocking reads.
func BenchmarkRawTCPPingPong8(b *testing.B) {
	c, s := tcpPair(b)
	go func() {
		buf := make([]byte, 8)
		for {
			if _, err := io.ReadFull(s, buf); err != nil {
				return
			}
			if _, err := s.Write(buf); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 8)
	b.ResetTimer()
	for range b.N {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawTCPStream1M is the baseline bandwidth: 1 MiB writes streamed to a reader.
func BenchmarkRawTCPStream1M(b *testing.B) {
	c, s := tcpPair(b)
	const n = 1 << 20
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, n)
		for {
			if _, err := io.ReadFull(s, buf); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, n)
	b.SetBytes(n)
	b.ResetTimer()
	for range b.N {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	c.Close()
	<-done
}

func benchPair(b *testing.B, mode verbs.WaitMode) (a, t *side) {
	cfg := testCfg()
	cfg.Wait = mode
	return pair(b, cfg, verbs.QPAttr{MaxSendWR: 256, MaxRecvWR: 256})
}

// roundTrips posts wr, waits for its completion and polls it, b.N times.
func roundTrips(b *testing.B, a *side, wr verbs.SendWR) {
	ctx := context.Background()
	var wcs [4]verbs.WC
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := a.qp.PostSend(&wr); err != nil {
			b.Fatal(err)
		}
		for {
			n, err := a.cq.Poll(wcs[:])
			if err != nil {
				b.Fatal(err)
			}
			if n > 0 {
				if wcs[0].Status != verbs.Success {
					b.Fatalf("completion %+v", wcs[0])
				}
				break
			}
			if err := a.cq.Wait(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func benchRDMA(b *testing.B, op verbs.Opcode, n int, mode verbs.WaitMode) {
	a, t := benchPair(b, mode)
	loc := allocMR(b, a, max(n, 8))
	rem := allocMR(b, t, max(n, 8))
	roundTrips(b, a, verbs.SendWR{Op: op, Flags: verbs.Signaled, Local: loc.Bytes()[:n], LKey: loc.LKey(),
		Remote: verbs.RemoteAddr{RKey: rem.RKey()}})
}

// The latency benchmarks block in CQ.Wait (WaitBlock): a tcp completion always arrives
// through a reader goroutine, and on a 2-core machine spinning only takes the core that
// goroutine needs; the default WaitHybrid therefore blocks at once in this provider
// (BenchmarkRead8Hybrid checks that it costs no more than WaitBlock).

// BenchmarkRead8 is the latency of an 8-byte RDMA read (post, wait, poll).
func BenchmarkRead8(b *testing.B) { benchRDMA(b, verbs.OpRDMARead, 8, verbs.WaitBlock) }

// BenchmarkRead8Hybrid is BenchmarkRead8 with the default WaitHybrid.
func BenchmarkRead8Hybrid(b *testing.B) { benchRDMA(b, verbs.OpRDMARead, 8, verbs.WaitHybrid) }

// BenchmarkWrite8 is the latency of an 8-byte RDMA write until the target acknowledged it.
func BenchmarkWrite8(b *testing.B) { benchRDMA(b, verbs.OpRDMAWrite, 8, verbs.WaitBlock) }

// BenchmarkFetchAdd is the latency of a remote fetch-and-add.
func BenchmarkFetchAdd(b *testing.B) { benchRDMA(b, verbs.OpAtomicFetchAdd, 8, verbs.WaitBlock) }

// BenchmarkWrite1M is the bandwidth of 1 MiB RDMA writes with up to 16 in flight.
func BenchmarkWrite1M(b *testing.B) { benchStream(b, verbs.OpRDMAWrite, 1<<20, 16) }

// BenchmarkRead1M is the bandwidth of 1 MiB RDMA reads with up to 16 in flight.
func BenchmarkRead1M(b *testing.B) { benchStream(b, verbs.OpRDMARead, 1<<20, 16) }

func benchStream(b *testing.B, op verbs.Opcode, n, window int) {
	a, t := benchPair(b, verbs.WaitBlock)
	loc := allocMR(b, a, n)
	rem := allocMR(b, t, n)
	wr := verbs.SendWR{Op: op, Flags: verbs.Signaled, Local: loc.Bytes(), LKey: loc.LKey(),
		Remote: verbs.RemoteAddr{RKey: rem.RKey()}}
	ctx := context.Background()
	var wcs [16]verbs.WC
	b.SetBytes(int64(n))
	b.ReportAllocs()
	b.ResetTimer()
	posted, done := 0, 0
	for done < b.N {
		for posted < b.N && posted-done < window {
			if err := a.qp.PostSend(&wr); err != nil {
				b.Fatal(err)
			}
			posted++
		}
		k, err := a.cq.Poll(wcs[:])
		if err != nil {
			b.Fatal(err)
		}
		for _, wc := range wcs[:k] {
			if wc.Status != verbs.Success {
				b.Fatalf("completion %+v", wc)
			}
		}
		done += k
		if k == 0 {
			if err := a.cq.Wait(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkSendRecv8 is the round trip of an 8-byte Send answered by an 8-byte Send.
func BenchmarkSendRecv8(b *testing.B) {
	a, t := benchPair(b, verbs.WaitBlock)
	am, tm := allocMR(b, a, 128), allocMR(b, t, 64)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range 64 / 8 {
		postRecv(b, t.qp, verbs.RecvWR{WRID: uint64(i), Local: tm.Bytes()[i*8 : i*8+8], LKey: tm.LKey()})
		postRecv(b, a.qp, verbs.RecvWR{WRID: uint64(i), Local: am.Bytes()[i*8 : i*8+8], LKey: am.LKey()})
	}
	echoed := make(chan struct{})
	go func() { // echo: every receive is answered by a Send and reposted
		defer close(echoed)
		var wcs [4]verbs.WC
		var swr verbs.SendWR
		var rwr verbs.RecvWR
		for ctx.Err() == nil {
			n, _ := t.cq.Poll(wcs[:])
			for _, wc := range wcs[:n] {
				if wc.Op != verbs.WCRecv {
					continue
				}
				buf := tm.Bytes()[wc.WRID*8 : wc.WRID*8+8]
				swr = verbs.SendWR{Op: verbs.OpSend, Local: buf, LKey: tm.LKey(), Flags: verbs.Signaled}
				t.qp.PostSend(&swr)
				rwr = verbs.RecvWR{WRID: wc.WRID, Local: buf, LKey: tm.LKey()}
				t.qp.PostRecv(&rwr)
			}
			if n == 0 {
				t.cq.Wait(ctx)
			}
		}
	}()
	var wcs [4]verbs.WC
	swr := verbs.SendWR{Op: verbs.OpSend, Local: am.Bytes()[64:72], LKey: am.LKey(), Flags: verbs.Signaled}
	var rwr verbs.RecvWR
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := a.qp.PostSend(&swr); err != nil {
			b.Fatal(err)
		}
		for got := false; !got; {
			n, err := a.cq.Poll(wcs[:])
			if err != nil {
				b.Fatal(err)
			}
			for _, wc := range wcs[:n] {
				if wc.Status != verbs.Success {
					b.Fatalf("completion %+v", wc)
				}
				if wc.Op == verbs.WCRecv {
					got = true
					rwr = verbs.RecvWR{WRID: wc.WRID, Local: am.Bytes()[wc.WRID*8 : wc.WRID*8+8], LKey: am.LKey()}
					a.qp.PostRecv(&rwr)
				}
			}
			if n == 0 {
				a.cq.Wait(ctx)
			}
		}
	}
	b.StopTimer()
	cancel()
	<-echoed
}
