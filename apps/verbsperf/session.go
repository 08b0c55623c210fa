package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// Queue depths of a session. The receive queue stays full: every receive completion is
// reposted at once.
const (
	cqDepth  = 1024
	numRecvs = 32
	atomLen  = 64
)

// session is one side's connected queue pair with its memory. Both processes build the
// same session; only the parent measures. A session is used by one goroutine.
type session struct {
	provider string
	dev      verbs.Device
	pd       verbs.PD
	cq       verbs.CQ
	qp       verbs.QP
	buf      verbs.MR // the peer's RDMA writes, reads and sends land here (or are read from here)
	src      verbs.MR // the local source of writes and sends, and sink of reads
	atom     verbs.MR // the peer's atomics target this

	remoteBuf, remoteAtom uint64 // the peer's rkeys of buf and atom

	wcs       []verbs.WC
	wr        verbs.SendWR
	recvWR    verbs.RecvWR
	posted    uint64 // send work requests posted (all signaled)
	completed uint64 // their completions polled
	recvs     uint64 // receive completions polled
}

// endpointInfo is what one side tells the other to connect.
type endpointInfo struct {
	Endpoint []byte
	BufKey   uint64
	AtomKey  uint64
}

// openSession opens a device of provider and builds an unconnected session whose buffers
// hold maxSize bytes.
func openSession(provider string, cfg verbs.Config, maxSize int) (s *session, err error) {
	s = &session{provider: provider, wcs: make([]verbs.WC, 64)}
	if s.dev, err = verbs.Open(provider, cfg); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.dev.Close()
		}
	}()
	if s.pd, err = s.dev.AllocPD(); err != nil {
		return nil, err
	}
	if s.cq, err = s.dev.CreateCQ(cqDepth); err != nil {
		return nil, err
	}
	attr := verbs.QPAttr{SendCQ: s.cq, RecvCQ: s.cq, MaxSendWR: verbs.DefaultMaxSendWR, MaxRecvWR: numRecvs}
	if s.qp, err = s.pd.CreateQP(attr); err != nil {
		return nil, err
	}
	if err = s.qp.ToInit(); err != nil {
		return nil, err
	}
	if s.buf, err = s.pd.AllocMR(maxSize, verbs.AccessAll); err != nil {
		return nil, fmt.Errorf("alloc %d-byte buffer: %w", maxSize, err)
	}
	if s.src, err = s.pd.AllocMR(maxSize, verbs.AccessAll); err != nil {
		return nil, fmt.Errorf("alloc %d-byte buffer: %w", maxSize, err)
	}
	if s.atom, err = s.pd.AllocMR(atomLen, verbs.AccessAll); err != nil {
		return nil, err
	}
	// Fill the buffers with a pattern, as an application's data would be: fresh arena
	// memory is zeros, and copying zeros runs about twice as fast as copying other data on
	// this machine kind, which would flatter every copy.
	fill(s.buf.Bytes(), 0x5a)
	fill(s.src.Bytes(), 0xa5)
	s.recvWR = verbs.RecvWR{WRID: 1, Local: s.buf.Bytes(), LKey: s.buf.LKey()}
	for range numRecvs {
		if err = s.qp.PostRecv(&s.recvWR); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// fill writes a pattern seeded by seed into b.
func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = byte(i) ^ seed
	}
}

// info returns what the peer needs to connect to s.
func (s *session) info() endpointInfo {
	return endpointInfo{Endpoint: s.qp.Endpoint(), BufKey: s.buf.RKey(), AtomKey: s.atom.RKey()}
}

// connect connects the session to the peer described by remote.
func (s *session) connect(ctx context.Context, remote endpointInfo) error {
	s.remoteBuf, s.remoteAtom = remote.BufKey, remote.AtomKey
	if err := verbs.Connect(ctx, s.qp, remote.Endpoint); err != nil {
		return fmt.Errorf("connect %s queue pair: %w", s.provider, err)
	}
	return nil
}

// close destroys the device and everything in it.
func (s *session) close() error {
	if s == nil || s.dev == nil {
		return nil
	}
	s.qp.Close()
	err := s.dev.Close()
	s.dev = nil
	return err
}

// progress polls the CQ once and accounts for what it finds; when the CQ is empty it
// waits (as --wait says) until it is not.
func (s *session) progress(ctx context.Context) error {
	n, err := s.cq.Poll(s.wcs)
	if err != nil {
		return err
	}
	if n == 0 {
		return s.cq.Wait(ctx)
	}
	for i := range s.wcs[:n] {
		wc := &s.wcs[i]
		if err := wc.Err(); err != nil {
			return err
		}
		switch wc.Op {
		case verbs.WCRecv, verbs.WCRecvRDMAWithImm:
			s.recvs++
			if err := s.qp.PostRecv(&s.recvWR); err != nil {
				return err
			}
		default:
			s.completed++
		}
	}
	return nil
}

// post posts s.wr, signaled, progressing while the send queue is full.
func (s *session) post(ctx context.Context) error {
	s.wr.Flags |= verbs.Signaled
	for {
		err := s.qp.PostSend(&s.wr)
		if err == nil {
			s.posted++
			return nil
		}
		if !errors.Is(err, verbs.ErrQueueFull) {
			return err
		}
		if err := s.progress(ctx); err != nil {
			return err
		}
	}
}

// waitSend progresses until target send completions have been polled.
func (s *session) waitSend(ctx context.Context, target uint64) error {
	for s.completed < target {
		if err := s.progress(ctx); err != nil {
			return err
		}
	}
	return nil
}

// waitRecv progresses until target receive completions have been polled.
func (s *session) waitRecv(ctx context.Context, target uint64) error {
	for s.recvs < target {
		if err := s.progress(ctx); err != nil {
			return err
		}
	}
	return nil
}

// reap keeps the send queue from filling in ping-pong loops, where completions are not
// waited for one by one.
func (s *session) reap(ctx context.Context) error {
	if s.posted-s.completed < verbs.DefaultMaxSendWR/2 {
		return nil
	}
	return s.waitSend(ctx, s.posted-verbs.DefaultMaxSendWR/4)
}

// drain waits for every posted send work request.
func (s *session) drain(ctx context.Context) error { return s.waitSend(ctx, s.posted) }

// setWrite prepares s.wr as an RDMA write of the first n bytes of src to the peer's buf.
func (s *session) setWrite(n int) {
	s.wr = verbs.SendWR{WRID: 2, Op: verbs.OpRDMAWrite, Local: s.src.Bytes()[:n], LKey: s.src.LKey(),
		Remote: verbs.RemoteAddr{RKey: s.remoteBuf}}
}

// setRead prepares s.wr as an RDMA read of the peer's first n bytes of buf into src.
func (s *session) setRead(n int) {
	s.wr = verbs.SendWR{WRID: 3, Op: verbs.OpRDMARead, Local: s.src.Bytes()[:n], LKey: s.src.LKey(),
		Remote: verbs.RemoteAddr{RKey: s.remoteBuf}}
}

// setSend prepares s.wr as a Send of the first n bytes of src.
func (s *session) setSend(n int) {
	s.wr = verbs.SendWR{WRID: 4, Op: verbs.OpSend, Local: s.src.Bytes()[:n], LKey: s.src.LKey()}
}

// setAtomic prepares s.wr as an atomic on the peer's atom word, with the result in src.
func (s *session) setAtomic(op verbs.Opcode) {
	s.wr = verbs.SendWR{WRID: 5, Op: op, Local: s.src.Bytes()[:8], LKey: s.src.LKey(),
		Remote: verbs.RemoteAddr{RKey: s.remoteAtom}, CompareAdd: 1, Swap: 1}
	if op == verbs.OpAtomicCmpSwap {
		s.wr.CompareAdd = 0 // alternates between failing and succeeding: same cost either way
	}
}

// word returns the aligned 8-byte word that ends a message of n bytes in b.
func word(b []byte, n int) *uint64 {
	return (*uint64)(unsafe.Pointer(&b[n-8]))
}

// spinUntil spins until *p == want and gives up when ctx is done. Ping-pong over memory
// has no blocking alternative: the peer's write is a copy into this process's memory that
// nothing signals. The spin yields the processor to other goroutines now and then, and to
// other threads less often: with the tcp provider the write is made by this process's
// progress goroutine, which needs a core that the two spinning processes may both hold.
func spinUntil(ctx context.Context, p *uint64, want uint64) error {
	for i := 1; ; i++ {
		if atomic.LoadUint64(p) == want {
			return nil
		}
		if i%spinGosched == 0 {
			runtime.Gosched()
			if i%spinOSYield == 0 {
				unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
			}
			if i%spinCheckCtx == 0 {
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("waiting for the peer's write: %w", err)
				}
			}
		}
	}
}

// Spin periods of spinUntil, in polls.
const (
	spinGosched  = 256
	spinOSYield  = 4096
	spinCheckCtx = 1 << 20
)

// stepTimeout bounds one exchange with the peer, so a lost message fails the run instead
// of hanging it.
const stepTimeout = 2 * time.Minute
