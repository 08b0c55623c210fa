package shm

import (
	"testing"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// BenchmarkSendLoopback8 is the software cost of one 8-byte Send: one goroutine posts it,
// polls the receive completion, reposts the receive (and polls every 32nd send's
// completion), so no cache line crosses cores. Unlike the ping-pongs, which mostly
// measure the machine's cross-core latency, it moves with every instruction and atomic
// the send and receive paths execute.
func BenchmarkSendLoopback8(b *testing.B) { benchSendLoopback(b, 1, 32) }

// BenchmarkSendLoopback8Posted32 is BenchmarkSendLoopback8 with 32 receives kept posted,
// as verbsperf's send_lat keeps them (and the runtime keeps one per slot of its peer): a
// receiver with receives to spare publishes its credits without a fence.
func BenchmarkSendLoopback8Posted32(b *testing.B) { benchSendLoopback(b, 32, 32) }

// BenchmarkSendLoopback8Signaled is BenchmarkSendLoopback8Posted32 with every Send
// signaled and its completion polled, as send_lat does: a completion's push and pop.
func BenchmarkSendLoopback8Signaled(b *testing.B) { benchSendLoopback(b, 32, 1) }

// benchSendLoopback keeps recvs receives posted and signals every signalEvery-th Send.
func benchSendLoopback(b *testing.B, recvs, signalEvery int) {
	x, y := pair(b, verbs.Config{}, verbs.QPAttr{})
	local := x.allocMR(b, 4096, verbs.LocalWrite)
	rb := y.allocMR(b, 64, verbs.LocalWrite)
	rwr := verbs.RecvWR{Local: rb.Bytes(), LKey: rb.LKey()}
	for range recvs {
		y.qp.PostRecv(&rwr)
	}
	swr := verbs.SendWR{Op: verbs.OpSend, Local: local.Bytes()[:8], LKey: local.LKey()}
	wcs := make([]verbs.WC, 4)
	i := 0
	for b.Loop() {
		i++
		swr.Flags = 0
		if i%signalEvery == 0 {
			swr.Flags = verbs.Signaled
		}
		x.qp.PostSend(&swr)
		pollOne(y.cq, wcs)
		y.qp.PostRecv(&rwr)
		if i%signalEvery == 0 {
			pollOne(x.cq, wcs)
		}
	}
}
