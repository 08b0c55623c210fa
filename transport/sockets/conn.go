package sockets

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/internal/futex"
)

// Conn is one end of a shared-memory connection. It implements net.Conn, plus
// half-close (CloseWrite, CloseRead) and the io.ReaderFrom and io.WriterTo fast paths.
//
// One goroutine may read (Read, WriteTo) while another writes (Write, ReadFrom,
// WriteBuffers); further readers or writers queue behind the first. Close, the deadline
// setters and the address getters may be called from any goroutine at any time.
type Conn struct {
	uc           *net.UnixConn // the rendezvous socket, kept open as the liveness channel
	raw          syscall.RawConn
	mem          []byte // the whole mapped segment
	laddr, raddr net.Addr

	rmu sync.Mutex // serializes the read side; guards in.pos
	in  *ring      // the ring this side reads

	wmu sync.Mutex // serializes the write side; guards out.pos and out.published
	out *ring      // the ring this side writes

	readDeadline, writeDeadline atomic.Int64 // UnixNano; 0 means none

	// readKick and writeKick wake this side's reader and writer parked in sleepPoll.
	readKick, writeKick chan struct{}

	// users counts operations that touch the mapping, plus closedBit once Close ran; the
	// mapping is unmapped by whoever brings it to exactly closedBit.
	users    atomic.Int64
	unmapped atomic.Bool

	closing    atomic.Bool           // Close ran on this side
	peerGone   atomic.Bool           // the liveness socket saw EOF or an error
	broken     atomic.Pointer[error] // a protocol error that ended the connection
	readShut   atomic.Bool           // CloseRead or Close ran on this side
	writeShut  atomic.Bool           // CloseWrite or Close ran on this side
	livenessWG sync.WaitGroup
}

const closedBit = 1 << 62

// newConn builds a Conn over a mapped segment; dialer tells which ring is whose.
func newConn(uc *net.UnixConn, mem []byte, ringSize int, dialer bool, laddr, raddr net.Addr) *Conn {
	c := &Conn{uc: uc, mem: mem, laddr: laddr, raddr: raddr,
		readKick: make(chan struct{}, 1), writeKick: make(chan struct{}, 1)}
	c.raw, _ = uc.SyscallConn()
	r0, r1 := newRing(mem, 0, ringSize, c.kickPeer), newRing(mem, 1, ringSize, c.kickPeer)
	if dialer {
		c.out, c.in = r0, r1
	} else {
		c.in, c.out = r0, r1
	}
	c.livenessWG.Add(1)
	go c.watchPeer()
	return c
}

// watchPeer blocks on the liveness socket until the peer closes it (or dies, which
// closes it) or this side's Close does; then it wakes this side's sleepers. The peer
// sends only kick bytes, which wake this side's parked reader or writer; any other byte
// is a protocol error.
func (c *Conn) watchPeer() {
	defer c.livenessWG.Done()
	var b [64]byte
	for {
		n, err := c.uc.Read(b[:])
		for _, k := range b[:n] {
			if k != kickReader && k != kickWriter {
				c.fail(fmt.Errorf("peer sent byte %#x on the liveness socket: protocol error", k))
			}
		}
		if n > 0 {
			// Both waiters: a kick the peer could not send (full socket buffer) may have
			// been for either; a spurious wake costs one round of the wait loop.
			kickChan(c.readKick)
			kickChan(c.writeKick)
		}
		if err != nil {
			break
		}
	}
	c.peerGone.Store(true)
	c.wakeLocal()
}

// kickPeer sends kick byte k to the peer without blocking: if the socket buffer is full,
// the peer has kicks enough to read.
func (c *Conn) kickPeer(k byte) {
	if c.raw == nil {
		return
	}
	c.raw.Write(func(fd uintptr) bool {
		unix.Send(int(fd), []byte{k}, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
		return true
	})
}

// kickRead and kickWrite wake this side's parked reader and writer.
func (c *Conn) kickRead(struct{})  { kickChan(c.readKick) }
func (c *Conn) kickWrite(struct{}) { kickChan(c.writeKick) }

// acquire registers an operation on the mapping; it fails once Close ran.
func (c *Conn) acquire() bool {
	if c.users.Add(1)&closedBit != 0 {
		c.release()
		return false
	}
	return true
}

// release ends an operation registered by acquire; the last one after Close unmaps.
func (c *Conn) release() {
	if c.users.Add(-1) == closedBit {
		c.unmap()
	}
}

func (c *Conn) unmap() {
	if c.unmapped.CompareAndSwap(false, true) {
		unix.Munmap(c.mem)
	}
}

// wakeLocal wakes this side's sleepers (a reader waiting for data, a writer waiting for
// space), after a state change they must see: Close, a deadline, the peer's death.
func (c *Conn) wakeLocal() {
	if !c.acquire() {
		return
	}
	c.wakeLocalHeld()
	c.release()
}

// wakeLocalHeld is wakeLocal for a caller that holds the mapping (acquire).
func (c *Conn) wakeLocalHeld() {
	c.wakeReader()
	c.wakeWriter()
}

// wakeReader and wakeWriter wake this side's reader and writer after a local event.
// Besides clearing the sleep word they always kick the channel. The word may have been
// cleared by a peer whose kick byte will never arrive (it died, or this side closed its
// socket first), and a parked waiter must still see the local event.
func (c *Conn) wakeReader() {
	wake(c.in.readerSleeping, c.kickRead, struct{}{})
	kickChan(c.readKick)
}

func (c *Conn) wakeWriter() {
	wake(c.out.writerSleeping, c.kickWrite, struct{}{})
	kickChan(c.writeKick)
}

// fail records a protocol error (the first one wins) and wakes the local sleepers.
func (c *Conn) fail(err error) {
	c.broken.CompareAndSwap(nil, &err)
	c.wakeLocal()
}

func (c *Conn) brokenErr() error {
	if p := c.broken.Load(); p != nil {
		return *p
	}
	return nil
}

// wait blocks until ready reports true or an error: it spins first, then sleeps in
// FUTEX_WAIT on word for futexSpell if a futex sleeper's place is free, then parks on
// kick (see design.md). deadline is the side's deadline; the error is
// os.ErrDeadlineExceeded when it passes, or ready's error.
func (c *Conn) wait(word *atomic.Uint32, kick chan struct{}, deadline *atomic.Int64, ready func() (bool, error)) error {
	for round := 0; ; round++ {
		if ok, err := ready(); ok || err != nil {
			return err
		}
		if spin(round) {
			continue
		}
		spell := futexSpell
		if dl := deadline.Load(); dl != 0 {
			if spell = min(spell, time.Until(time.Unix(0, dl))); spell <= 0 {
				return os.ErrDeadlineExceeded
			}
		}
		if enterFutex() {
			word.Store(sleepFutex)
			if ok, err := ready(); ok || err != nil {
				word.Store(awake)
				leaveFutex()
				return err
			}
			futex.Wait(word, sleepFutex, spell)
			leaveFutex()
			if !word.CompareAndSwap(sleepFutex, sleepPoll) {
				continue // woken, or the word was overwritten: re-check
			}
		} else {
			word.Store(sleepPoll)
		}
		if ok, err := ready(); ok || err != nil {
			word.Store(awake)
			return err
		}
		park(kick, deadline)
	}
}

// park blocks the goroutine until a kick or the deadline.
func park(kick chan struct{}, deadline *atomic.Int64) {
	var timeout <-chan time.Time
	if dl := deadline.Load(); dl != 0 {
		t := time.NewTimer(time.Until(time.Unix(0, dl)))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-kick:
	case <-timeout:
	}
}

// deadlinePassed reports whether the deadline in d has passed.
func deadlinePassed(d *atomic.Int64) bool {
	dl := d.Load()
	return dl != 0 && time.Now().UnixNano() >= dl
}

// readState is what a reader finds: bytes to read (n > 0), or why there are none. An
// error found while Close runs is net.ErrClosed. Close raises closing before it shuts
// both sides and closes the liveness socket, so a check that began before Close can see
// their effects (io.EOF, the peer gone); an operation that Close ends reports the Close.
func (c *Conn) readState() (uint64, error) {
	n, err := c.readFound()
	if err != nil && c.closing.Load() {
		return 0, net.ErrClosed
	}
	return n, err
}

// readFound is readState without the translation of errors to net.ErrClosed.
func (c *Conn) readFound() (n uint64, err error) {
	switch {
	case c.closing.Load():
		return 0, net.ErrClosed
	case c.readShut.Load():
		return 0, io.EOF
	}
	if err := c.brokenErr(); err != nil {
		return 0, err
	}
	if deadlinePassed(&c.readDeadline) {
		return 0, os.ErrDeadlineExceeded
	}
	n, err = c.in.readable()
	if err != nil {
		c.fail(err)
		return 0, err
	}
	if n > 0 {
		return n, nil
	}
	if c.in.writeClosed.Load() != 0 {
		// Re-read tail: the writer publishes its last bytes before the flag.
		if n, err = c.in.readable(); n > 0 || err != nil {
			return n, err
		}
		return 0, io.EOF
	}
	if c.peerGone.Load() {
		return 0, errPeerGone
	}
	return 0, nil
}

// awaitReadable waits until bytes are readable and returns how many.
func (c *Conn) awaitReadable() (uint64, error) {
	var n uint64
	err := c.wait(c.in.readerSleeping, c.readKick, &c.readDeadline, func() (bool, error) {
		var err error
		n, err = c.readState()
		return n > 0, err
	})
	return n, err
}

// Read reads what is available, at least one byte, blocking until there is some. It
// returns io.EOF once the peer closed its write side and the ring is drained.
func (c *Conn) Read(p []byte) (int, error) {
	if !c.acquire() {
		return 0, c.readErr(net.ErrClosed)
	}
	defer c.release()
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if deadlinePassed(&c.readDeadline) {
		return 0, c.readErr(os.ErrDeadlineExceeded)
	}
	if len(p) == 0 {
		return 0, nil
	}
	n, err := c.awaitReadable()
	if err != nil {
		return 0, c.readErr(err)
	}
	return c.in.consume(p, n), nil
}

// WriteTo writes the connection's bytes to w straight from the ring until EOF or an
// error. It implements io.WriterTo; io.EOF ends it without an error.
func (c *Conn) WriteTo(w io.Writer) (int64, error) {
	if !c.acquire() {
		return 0, c.readErr(net.ErrClosed)
	}
	defer c.release()
	c.rmu.Lock()
	defer c.rmu.Unlock()
	var total int64
	for {
		n, err := c.awaitReadable()
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, c.readErr(err)
		}
		m, werr := w.Write(c.in.readSpan(n))
		if m < 0 || uint64(m) > n {
			m = 0
			werr = errors.New("sockets: invalid Write result")
		}
		c.in.pos += uint64(m)
		c.in.release()
		total += int64(m)
		if werr != nil {
			return total, werr
		}
	}
}

func (c *Conn) readErr(err error) error {
	if err == io.EOF {
		return io.EOF
	}
	return opError("read", c.laddr, c.raddr, err)
}
