package tcp

import (
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/transport/verbs/arena"
)

// Socket tuning: TCP_NODELAY for latency; keepalive and TCP_USER_TIMEOUT so that a cut
// link or a dead host is detected within a few seconds even when the connection is idle.
const (
	keepAliveIdle     = 2 * time.Second
	keepAliveInterval = time.Second
	keepAliveCount    = 3
	userTimeout       = 5 * time.Second
)

func tuneConn(c *net.TCPConn) error {
	if err := c.SetNoDelay(true); err != nil {
		return err
	}
	if err := c.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: keepAliveIdle,
		Interval: keepAliveInterval, Count: keepAliveCount}); err != nil {
		return err
	}
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(userTimeout/time.Millisecond))
	}); err != nil {
		return err
	}
	return serr
}

// txFrame is a frame waiting to be written: its header by value, its payload by
// reference (the caller's send buffer, or pinned target memory for a read response).
type txFrame struct {
	hdr  [hdrSize]byte
	pay  []byte
	done int    // bytes of hdr+pay already written
	pin  uint64 // key to unpin once the payload is written or dropped; 0 for none
}

var errTxOverflow = errors.New("tcp: transmit queue overflow: the peer broke flow control")

// txq writes frames to one connection without ever blocking its callers on the network.
//
// Fast path: when nothing is queued, send writes the frame with one non-blocking writev
// straight from the caller's header and payload (no copy, no goroutine hop). If the socket
// takes only part of it, the rest is queued and the writer goroutine finishes it with
// blocking writes; later frames queue behind it until the queue drains. The queue is
// bounded (limit frames): the protocol bounds how many frames can be pending (outstanding
// requests plus responses to the peer's outstanding requests plus credit updates), so
// reaching the limit means a broken peer and fails the connection.
//
// Concurrency: send may be called from any goroutine (callers serialize the order of
// frames that must stay ordered). The writer goroutine (run) stops when stop is closed;
// it then unpins every frame still queued and closes exited.
type txq struct {
	conn  *net.TCPConn
	raw   syscall.RawConn
	tab   *arena.Table
	limit int

	mu      sync.Mutex
	ring    []txFrame
	head, n int
	err     error         // sticky; set on the first write error or on stop
	drained chan struct{} // closed by the writer when the queue empties, if non-nil
	fIov    [2]unix.Iovec // fast-path scratch, guarded by mu
	fCnt    int
	fN      int
	fErr    syscall.Errno
	fFn     func(fd uintptr) bool

	kick   chan struct{} // capacity 1: wakes the writer
	stop   chan struct{}
	exited chan struct{}

	// Writer goroutine only.
	cur  txFrame
	sIov [2]unix.Iovec
	sCnt int
	sN   int
	sErr syscall.Errno
	sFn  func(fd uintptr) bool
}

func newTxq(c *net.TCPConn, tab *arena.Table, limit int) (*txq, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	t := &txq{conn: c, raw: raw, tab: tab, limit: limit, ring: make([]txFrame, 8),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), exited: make(chan struct{})}
	t.fFn = t.fastWritev
	t.sFn = t.slowWritev
	return t, nil
}

func setIov(iov *[2]unix.Iovec, hdr []byte, pay []byte, done int) int {
	n := 0
	if done < len(hdr) {
		iov[0].Base = &hdr[done]
		iov[0].SetLen(len(hdr) - done)
		n = 1
		done = 0
	} else {
		done -= len(hdr)
	}
	if done < len(pay) {
		iov[n].Base = &pay[done]
		iov[n].SetLen(len(pay) - done)
		n++
	}
	return n
}

func writev(fd uintptr, iov *[2]unix.Iovec, cnt int) (int, syscall.Errno) {
	for {
		n, _, e := unix.Syscall(unix.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(cnt))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(n), 0
	}
}

// fastWritev makes one non-blocking attempt.
func (t *txq) fastWritev(fd uintptr) bool {
	t.fN, t.fErr = writev(fd, &t.fIov, t.fCnt)
	return true
}

// slowWritev asks the poller to wait for writability while the socket is full.
func (t *txq) slowWritev(fd uintptr) bool {
	t.sN, t.sErr = writev(fd, &t.sIov, t.sCnt)
	return t.sErr != unix.EAGAIN
}

// send writes (or queues) the frame hdr+pay. pin, if non-zero, is unpinned once pay has
// been written or dropped. An error means the connection is broken (and closed).
func (t *txq) send(hdr *[hdrSize]byte, pay []byte, pin uint64) error {
	t.mu.Lock()
	if t.err != nil {
		err := t.err
		t.mu.Unlock()
		t.unpin(pin)
		return err
	}
	done := 0
	if t.n == 0 {
		t.fCnt = setIov(&t.fIov, hdr[:], pay, 0)
		err := t.raw.Write(t.fFn)
		t.fIov = [2]unix.Iovec{}
		if err == nil && t.fErr != 0 && t.fErr != unix.EAGAIN {
			err = t.fErr
		}
		if err != nil {
			t.failLocked(err)
			t.mu.Unlock()
			t.unpin(pin)
			return err
		}
		if t.fN == hdrSize+len(pay) {
			t.mu.Unlock()
			t.unpin(pin)
			return nil
		}
		done = t.fN
	}
	if t.n == t.limit {
		t.failLocked(errTxOverflow)
		t.mu.Unlock()
		t.unpin(pin)
		return errTxOverflow
	}
	if t.n == len(t.ring) {
		t.grow()
	}
	f := &t.ring[(t.head+t.n)%len(t.ring)]
	f.hdr, f.pay, f.done, f.pin = *hdr, pay, done, pin
	t.n++
	t.mu.Unlock()
	select {
	case t.kick <- struct{}{}:
	default:
	}
	return nil
}

func (t *txq) grow() {
	ring := make([]txFrame, 2*len(t.ring))
	for i := 0; i < t.n; i++ {
		ring[i] = t.ring[(t.head+i)%len(t.ring)]
	}
	t.ring, t.head = ring, 0
}

func (t *txq) unpin(key uint64) {
	if key != 0 {
		t.tab.Unpin(key)
	}
}

// failLocked records the first error and closes the connection, which wakes the reader.
func (t *txq) failLocked(err error) {
	if t.err == nil {
		t.err = err
		t.conn.Close()
	}
}

// run is the writer goroutine. It stops when stop is closed.
func (t *txq) run() {
	defer close(t.exited)
	for {
		select {
		case <-t.kick:
		case <-t.stop:
			t.dropAll()
			return
		}
		for t.writeHead() {
		}
	}
}

// writeHead writes the queue's head frame to completion and reports whether to go on.
func (t *txq) writeHead() bool {
	t.mu.Lock()
	if t.err != nil || t.n == 0 {
		if t.drained != nil {
			close(t.drained)
			t.drained = nil
		}
		t.mu.Unlock()
		return false
	}
	t.cur = t.ring[t.head]
	t.mu.Unlock()

	var err error
	for total := hdrSize + len(t.cur.pay); t.cur.done < total && err == nil; {
		t.sCnt = setIov(&t.sIov, t.cur.hdr[:], t.cur.pay, t.cur.done)
		err = t.raw.Write(t.sFn)
		if err == nil && t.sErr != 0 {
			err = t.sErr
		} else if err == nil && t.sN == 0 {
			err = io.ErrShortWrite
		}
		t.cur.done += t.sN
		t.sN = 0
	}
	t.sIov = [2]unix.Iovec{}

	t.mu.Lock()
	t.ring[t.head] = txFrame{}
	t.head = (t.head + 1) % len(t.ring)
	t.n--
	if err != nil {
		t.failLocked(err)
	}
	t.mu.Unlock()
	t.unpin(t.cur.pin)
	t.cur = txFrame{}
	return err == nil
}

// dropAll unpins and forgets every queued frame; later sends fail at once.
func (t *txq) dropAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err == nil {
		t.err = net.ErrClosed
	}
	for ; t.n > 0; t.n-- {
		t.unpin(t.ring[t.head].pin)
		t.ring[t.head] = txFrame{}
		t.head = (t.head + 1) % len(t.ring)
	}
	if t.drained != nil {
		close(t.drained)
		t.drained = nil
	}
}

// idle reports whether no frame is queued or being written by the writer goroutine.
func (t *txq) idle() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n == 0
}

// drain waits up to d for the queued frames to be written (so that a last error answer
// reaches the peer before the connection closes).
func (t *txq) drain(d time.Duration) {
	t.mu.Lock()
	if t.err != nil || t.n == 0 {
		t.mu.Unlock()
		return
	}
	if t.drained == nil {
		t.drained = make(chan struct{})
	}
	ch := t.drained
	t.mu.Unlock()
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ch:
	case <-tm.C:
	case <-t.exited:
	}
}

// shutdown closes the connection, stops the writer and waits for it to exit. Called by
// the connection's reader goroutine as it exits.
func (t *txq) shutdown() {
	t.mu.Lock()
	t.failLocked(net.ErrClosed)
	t.mu.Unlock()
	close(t.stop)
	<-t.exited
}
