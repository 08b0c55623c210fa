package tcp

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/transport/verbs"
	"github.com/gorma-hpc/gorma/transport/verbs/arena"
)

// Socket tuning: TCP_NODELAY for latency; keepalive and TCP_USER_TIMEOUT so that a cut
// link or a dead host is detected within a few seconds even when the connection is idle;
// the device's congestion control (Options.Congestion, resolved by congestionOf), if any.
const (
	keepAliveIdle     = 2 * time.Second
	keepAliveInterval = time.Second
	keepAliveCount    = 3
	userTimeout       = 5 * time.Second
)

func tuneConn(c *net.TCPConn, cc string) error {
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
		if serr == nil && cc != "" {
			serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc)
		}
	}); err != nil {
		return err
	}
	return serr
}

// congestionOf resolves Options.Congestion to the algorithm the device sets on its
// connections ("" for the kernel's default), checking on a socket of its own that the
// kernel accepts it. A choice the kernel refuses is an error, naming what it offers,
// except the default, which then gives way to the kernel's default.
func congestionOf(want string) (string, error) {
	explicit := want != ""
	switch want {
	case "":
		want = DefaultCongestion
	case CongestionSystem:
		return "", nil
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return "", wrapErr("open", 0, err, "a socket to check the congestion control")
	}
	defer unix.Close(fd)
	if err := unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, want); err != nil {
		if !explicit {
			return "", nil
		}
		allowed, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
		return "", newErr("open", 0, verbs.ErrUnsupported,
			"Options.Congestion %q: the kernel refuses it (%v); name one of those it allows (%s), or %q for the kernel's default",
			want, err, strings.TrimSpace(string(allowed)), CongestionSystem)
	}
	return want, nil
}

// Streams and slices. The frames of one direction belong to two streams: this side's
// requests (and credit frames) and its answers to the peer's requests (acks, read and
// atomic responses, the disconnect notice). Each stream keeps its order on the wire, but
// the two interleave. A read response longer than respSlice goes out as slices (frames of
// respSlice bytes with flagMore, the last without), and at every slice boundary a waiting
// request may go first. Without that, two ranks that exchange large messages by
// rendezvous (each reads from the other) serialize on a link. The read request of one
// waits behind the other's whole read response, so one direction of the link idles while
// the other carries its data, and the exchange takes twice its time. The kernel's socket
// buffer hides the same queue (it takes up to megabytes ahead of the request), so
// TCP_NOTSENT_LOWAT keeps about notsentLowat unsent bytes there and the rest waits in the
// txq, where requests can pass it. Bytes on the wire are not limited, so the window still
// covers the path. Both start the first time a request has to queue behind an answer on a
// connection (mixLocked), not before. A connection that only streams one way loses to
// them and gains nothing (on loopback the lowat's wake-ups cost a one-way stream a large
// part of its rate; `bin/verbsperf --provider tcp --test write_bw,read_bw` measures it).
//
// Why so short a queue: where links are fast and several streams share the cores (four
// network-namespace hosts on 2 cores, each host sending on three connections), the
// kernel's default lets each connection queue megabytes. A byte leaves the caches between
// the sender's copy and the receiver's. With 32 KiB unsent at most, four raw streams at
// once move more each than with 64 or 256 KiB, and a large Allreduce of 4 such hosts is
// faster. On shaped 1 Gbit/s links the requests waiting behind less data gain too.
// scripts/netns-allreduce.sh measures both (its "B busy" streams with and without LOWAT,
// and the Allreduce against the bandwidth bound; RATE shapes the links).
//
// Requests never overtake answers in ways that matter: the peer matches answers to its
// requests by stream order alone, and requests to it only by theirs. The exception is the
// cumulative ack that a request may carry (flagAck): it answers too, and must keep its
// place among the answers. A request that would pass queued answers (all of them for
// requests the ack covers: an answer takes the ack owed when it is made) leaves its ack
// behind them as an opAck frame. And an answer queued while a request still holds an ack
// (the answer is for a later request) first moves that ack ahead of itself, the same way.
const (
	streamReq  = 0
	streamResp = 1

	respSlice    = 256 << 10
	notsentLowat = 32 << 10
)

// streamOf classifies an encoded frame header.
func streamOf(hdr *[hdrSize]byte) int {
	if op := wireOp(hdr[1]); op.isRequest() || op == opCredit {
		return streamReq
	}
	return streamResp
}

// txFrame is a frame waiting to be written: its header by value, its payload by
// reference (the caller's send buffer, or pinned target memory for a read response). A
// frame is written as pieces: one (hdr and pay), or for a sliced read response one per
// slice, hdr then being the current slice's header.
type txFrame struct {
	hdr  [hdrSize]byte
	pay  []byte // the payload from the current piece on
	cut  int    // payload bytes in the current piece
	more bool   // slices follow the current piece
	done int    // bytes of the current piece (hdr and pay[:cut]) already written
	pin  uint64 // key to unpin once the payload is written or dropped; 0 for none
}

// set makes f the frame hdr+pay, sliced if slice is set and it is a long read response.
func (f *txFrame) set(hdr *[hdrSize]byte, pay []byte, pin uint64, slice bool) {
	f.hdr, f.pay, f.cut, f.more, f.done, f.pin = *hdr, pay, len(pay), false, 0, pin
	if slice && wireOp(hdr[1]) == opReadResp && len(pay) > respSlice {
		f.cut, f.more = respSlice, true
		f.hdr[2] |= flagMore
		binary.LittleEndian.PutUint32(f.hdr[4:], respSlice)
	}
}

// next moves f to its next slice; the header loses what rode on the first (a
// piggybacked ack, credits).
func (f *txFrame) next() {
	f.pay, f.done = f.pay[f.cut:], 0
	f.cut = min(len(f.pay), respSlice)
	f.more = len(f.pay) > respSlice
	f.hdr[2] &^= flagAck | flagMore
	if f.more {
		f.hdr[2] |= flagMore
	}
	le := binary.LittleEndian
	le.PutUint32(f.hdr[4:], uint32(f.cut))
	le.PutUint64(f.hdr[48:], 0)
	le.PutUint32(f.hdr[56:], 0)
}

// pieceLen is the length of f's current piece.
func (f *txFrame) pieceLen() int { return hdrSize + f.cut }

var errTxOverflow = errors.New("tcp: transmit queue overflow: the peer broke flow control")

// frameRing is a FIFO of frames.
type frameRing struct {
	ring    []txFrame
	head, n int
}

func (r *frameRing) front() *txFrame { return &r.ring[r.head] }

func (r *frameRing) push() *txFrame {
	if r.n == len(r.ring) {
		ring := make([]txFrame, max(8, 2*len(r.ring)))
		for i := 0; i < r.n; i++ {
			ring[i] = r.ring[(r.head+i)%len(r.ring)]
		}
		r.ring, r.head = ring, 0
	}
	f := &r.ring[(r.head+r.n)%len(r.ring)]
	r.n++
	return f
}

func (r *frameRing) pop() {
	r.ring[r.head] = txFrame{}
	r.head = (r.head + 1) % len(r.ring)
	r.n--
}

// txq writes frames to one connection without ever blocking its callers on the network.
//
// Fast path: when nothing is queued, send writes the frame with non-blocking writev calls
// straight from the caller's header and payload (no copy, no goroutine hop). If the socket
// takes only part of it, the rest is queued and the writer goroutine finishes it with
// blocking writes. Later frames of its stream queue behind it, and those of the other
// stream at the next slice boundary (see streamReq). The queue is bounded (limit frames).
// The protocol bounds how many frames can be pending (outstanding requests plus responses
// to the peer's outstanding requests plus credit updates and the acks they left behind),
// so reaching the limit means a broken peer and fails the connection.
//
// Concurrency: send may be called from any goroutine (callers serialize the order of
// frames that must stay ordered). The writer goroutine (run) stops when stop is closed;
// it then unpins every frame still queued and closes exited.
type txq struct {
	conn  *sock
	tab   *arena.Table
	limit int

	mu      sync.Mutex
	qs      [2]frameRing  // by stream
	n       int           // frames in qs; change it with addLocked
	queued  atomic.Bool   // n > 0, for readers without mu (quiet)
	last    int           // the stream whose piece was written last
	mixed   bool          // a request had to queue behind an answer: slice, and TCP_NOTSENT_LOWAT is set
	err     error         // sticky; set on the first write error or on stop
	drained chan struct{} // closed by the writer when the queue empties, if non-nil
	fast    txFrame       // fast-path frame, guarded by mu
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

func newTxq(c *sock, tab *arena.Table, limit int) *txq {
	t := &txq{conn: c, tab: tab, limit: limit,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), exited: make(chan struct{})}
	t.fFn = t.fastWritev
	t.sFn = t.slowWritev
	return t
}

// setIov points iov at the unwritten part of f's current piece.
func setIov(iov *[2]unix.Iovec, f *txFrame) int {
	done, pay := f.done, f.pay[:f.cut]
	n := 0
	if done < hdrSize {
		iov[0].Base = &f.hdr[done]
		iov[0].SetLen(hdrSize - done)
		n = 1
		done = 0
	} else {
		done -= hdrSize
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
	s := streamOf(hdr)
	if t.n == 0 {
		// Nothing queued, so nothing is being written: write at once, piece by piece,
		// while the socket takes whole pieces.
		f := &t.fast
		f.set(hdr, pay, pin, t.mixed)
		for {
			t.fCnt = setIov(&t.fIov, f)
			err := t.conn.Write(t.fFn)
			t.fIov = [2]unix.Iovec{}
			if err == nil && t.fErr != 0 && t.fErr != unix.EAGAIN {
				err = t.fErr
			}
			if err != nil {
				*f = txFrame{}
				t.failLocked(err)
				t.mu.Unlock()
				t.unpin(pin)
				return err
			}
			f.done += t.fN
			if f.done < f.pieceLen() {
				break
			}
			t.last = s
			if !f.more {
				*f = txFrame{}
				t.mu.Unlock()
				t.unpin(pin)
				return nil
			}
			f.next()
		}
		*t.qs[s].push() = *f
		*f = txFrame{}
		t.addLocked(1)
		t.mu.Unlock()
		t.kickWriter()
		return nil
	}
	if t.n+2 > t.limit {
		t.failLocked(errTxOverflow)
		t.mu.Unlock()
		t.unpin(pin)
		return errTxOverflow
	}
	if s == streamReq && t.qs[streamResp].n > 0 && !t.mixed {
		t.mixLocked()
	}
	if s == streamResp && t.qs[streamReq].n > 0 {
		t.unackLocked()
	}
	f := t.qs[s].push()
	f.set(hdr, pay, pin, t.mixed)
	t.addLocked(1)
	if s == streamReq && t.qs[streamResp].n > 0 {
		// The ack answers: it may not pass the answers queued before it.
		if ack, ok := f.takeAck(); ok {
			t.pushAckLocked(ack)
		}
	}
	t.mu.Unlock()
	t.kickWriter()
	return nil
}

// unackLocked moves the acks of queued requests not yet begun into an opAck frame at
// the end of the answers, before an answer to a later request is queued behind it. A
// request the writer is writing at the moment keeps its ack as well (the writer holds a
// copy), and the peer ignores the second, stale, one.
func (t *txq) unackLocked() {
	r := &t.qs[streamReq]
	var ack uint64
	found := false
	for i := range r.n {
		if f := &r.ring[(r.head+i)%len(r.ring)]; f.done == 0 {
			if a, ok := f.takeAck(); ok {
				ack, found = max(ack, a), true
			}
		}
	}
	if found {
		t.pushAckLocked(ack)
	}
}

// takeAck removes the piggybacked ack from f's header, if it carries one.
func (f *txFrame) takeAck() (uint64, bool) {
	if f.hdr[2]&flagAck == 0 {
		return 0, false
	}
	le := binary.LittleEndian
	ack := le.Uint64(f.hdr[48:])
	f.hdr[2] &^= flagAck
	le.PutUint64(f.hdr[48:], 0)
	return ack, true
}

// pushAckLocked queues an opAck frame for ack at the end of the answers.
func (t *txq) pushAckLocked(ack uint64) {
	var b [hdrSize]byte
	(&header{op: opAck, seq: ack}).put(&b)
	t.qs[streamResp].push().set(&b, nil, 0, false)
	t.addLocked(1)
}

// mixLocked switches the connection to mixed traffic, the first time a request queues
// behind an answer: from then on long read responses go in slices (those queued and not
// begun too). The kernel holds about notsentLowat unsent bytes (see streamReq).
func (t *txq) mixLocked() {
	t.mixed = true
	// Best effort: without the lowat (a kernel before 3.12) the slices still let
	// requests pass what waits in the txq, only not what the socket buffer took.
	_ = t.conn.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT, notsentLowat)
	})
	r := &t.qs[streamResp]
	for i := range r.n {
		if f := &r.ring[(r.head+i)%len(r.ring)]; f.done == 0 && !f.more {
			f.set(&f.hdr, f.pay, f.pin, true)
		}
	}
}

func (t *txq) kickWriter() {
	select {
	case t.kick <- struct{}{}:
	default:
	}
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
		for t.writePiece() {
		}
	}
}

// pickLocked chooses the stream whose head frame's piece goes next: one begun must be
// finished; otherwise the streams take turns.
func (t *txq) pickLocked() int {
	for s := range t.qs {
		if r := &t.qs[s]; r.n > 0 && r.front().done > 0 {
			return s
		}
	}
	if o := 1 - t.last; t.qs[o].n > 0 {
		return o
	}
	return t.last
}

// writePiece writes the current piece of a head frame to completion and reports whether
// to go on.
func (t *txq) writePiece() bool {
	t.mu.Lock()
	if t.err != nil || t.n == 0 {
		if t.drained != nil {
			close(t.drained)
			t.drained = nil
		}
		t.mu.Unlock()
		return false
	}
	s := t.pickLocked()
	t.cur = *t.qs[s].front()
	if s == streamReq && t.cur.done == 0 && t.qs[s].n-1 > ackBatch && wireOp(t.cur.hdr[1]) == opWrite && t.cur.hdr[2]&flagImm == 0 {
		t.cur.hdr[2] |= flagLater // see ackBatch
	}
	t.mu.Unlock()

	var err error
	for total := t.cur.pieceLen(); t.cur.done < total && err == nil; {
		t.sCnt = setIov(&t.sIov, &t.cur)
		err = t.conn.Write(t.sFn)
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
	t.last = s
	var pin uint64
	if f := t.qs[s].front(); err == nil && t.cur.more {
		f.done = t.cur.done
		f.next()
	} else {
		pin = f.pin
		t.qs[s].pop()
		t.addLocked(-1)
	}
	if err != nil {
		t.failLocked(err)
	}
	t.mu.Unlock()
	t.unpin(pin)
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
	for s := range t.qs {
		for r := &t.qs[s]; r.n > 0; r.pop() {
			t.unpin(r.front().pin)
		}
	}
	t.addLocked(-t.n)
	if t.drained != nil {
		close(t.drained)
		t.drained = nil
	}
}

// addLocked changes the count of queued frames by d.
func (t *txq) addLocked(d int) {
	t.n += d
	t.queued.Store(t.n > 0)
}

// quiet reports whether no frame waits for the writer goroutine or is being written by
// it, without taking mu: a leader spins only then (sock.spinRead).
func (t *txq) quiet() bool { return !t.queued.Load() }

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
