package launcher

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
)

// An agent's control connections in their handshake. A stranger may connect from a
// submitter's own address and never speak; a submitter speaks at once, and its hello
// proves the key. Under a flood the hello is in the socket before the agent accepts the
// connection, so the accept loop reads what is there without waiting (readNow) and
// checks it. The pending handshakes are therefore of two kinds:
//
//   - unproven: no hello yet. Each has helloTimeout from its accept to send one.
//   - proven: its hello proved the key. The handshake goes on under handshakeTimeout.
//
// At most maxHandshakes are pending (shedPolicy). A connection accepted while the table
// is full sheds the oldest unproven one, the one silent the longest; when every pending
// handshake is proven, the newcomer is shed instead. A shed connection is closed without
// a word; its submitter, if it was one, tries again (dialControl). Strangers thus take
// no slot from a submitter, whatever their address.

// maxHandshakes bounds an agent's control connections in their handshake.
const maxHandshakes = 64

// helloTimeout bounds the wait for an unproven connection's hello (a variable for tests).
var helloTimeout = 2 * time.Second

// shedAction is what shedPolicy decides for a connection just accepted.
type shedAction uint8

const (
	admitFree    shedAction = iota // the table has room: admit it
	admitEvict                     // the table is full: shed the oldest unproven, admit it
	shedNewcomer                   // the table is full of proven handshakes: shed it
)

// shedPolicy decides for a connection accepted while unproven and proven handshakes
// are pending, of at most limit.
func shedPolicy(unproven, proven, limit int) shedAction {
	switch {
	case unproven+proven < limit:
		return admitFree
	case unproven > 0:
		return admitEvict
	}
	return shedNewcomer
}

// pendingTable is the bookkeeping of the pending handshakes under shedPolicy. It does
// no I/O: the caller closes what admit sheds. It is not safe for concurrent use.
type pendingTable[T comparable] struct {
	limit    int
	unproven []T // in accept order, oldest first
	proven   map[T]struct{}
}

func newPendingTable[T comparable](limit int) *pendingTable[T] {
	return &pendingTable[T]{limit: limit, proven: make(map[T]struct{})}
}

// admit enters c, proven or not, and returns the action and the connection it shed
// (the oldest unproven, or c itself), valid unless the action is admitFree.
func (t *pendingTable[T]) admit(c T, proven bool) (shedAction, T) {
	act := shedPolicy(len(t.unproven), len(t.proven), t.limit)
	var shed T
	switch act {
	case shedNewcomer:
		return act, c
	case admitEvict:
		shed, t.unproven = t.unproven[0], t.unproven[1:]
	}
	if proven {
		t.proven[c] = struct{}{}
	} else {
		t.unproven = append(t.unproven, c)
	}
	return act, shed
}

// prove moves c from the unproven to the proven; false when c is not unproven (it was
// shed).
func (t *pendingTable[T]) prove(c T) bool {
	if !t.dropUnproven(c) {
		return false
	}
	t.proven[c] = struct{}{}
	return true
}

// remove takes c out of the table; false when it was not there (it was shed).
func (t *pendingTable[T]) remove(c T) bool {
	if _, ok := t.proven[c]; ok {
		delete(t.proven, c)
		return true
	}
	return t.dropUnproven(c)
}

func (t *pendingTable[T]) dropUnproven(c T) bool {
	for i, u := range t.unproven {
		if u == c {
			t.unproven = append(t.unproven[:i], t.unproven[i+1:]...)
			return true
		}
	}
	return false
}

// maxNonces bounds the nonces an agent remembers. Past it the oldest is forgotten: a
// replay of it within helloSkew is then taken for a fresh hello, which still cannot
// complete the handshake without the key.
const maxNonces = 1 << 14

type nonceEntry struct {
	nonce [macOff - nonceOff]byte
	at    time.Time
}

// nonceCache remembers the nonces of the hellos that proved the key, for 2*helloSkew
// after their arrival: a hello is taken within helloSkew of its time, so a replay of one
// seen is always caught. It is not safe for concurrent use.
type nonceCache struct {
	seen  map[[macOff - nonceOff]byte]struct{}
	order []nonceEntry // arrival order
}

// fresh records hello's nonce at now and reports whether it was not seen before.
func (n *nonceCache) fresh(hello []byte, now time.Time) bool {
	if n.seen == nil {
		n.seen = make(map[[macOff - nonceOff]byte]struct{})
	}
	for len(n.order) > 0 && (now.Sub(n.order[0].at) > 2*helloSkew || len(n.order) >= maxNonces) {
		delete(n.seen, n.order[0].nonce)
		n.order = n.order[1:]
	}
	var k [macOff - nonceOff]byte
	copy(k[:], hello[nonceOff:macOff])
	if _, ok := n.seen[k]; ok {
		return false
	}
	n.seen[k] = struct{}{}
	n.order = append(n.order, nonceEntry{k, now})
	return true
}

// readNow reads into b what c's socket holds, without waiting; closed reports that the
// peer closed or reset the connection.
func readNow(c net.Conn, b []byte) (n int, closed bool) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	rc.Read(func(fd uintptr) bool {
		for n < len(b) {
			m, err := syscall.Read(int(fd), b[n:])
			if m > 0 {
				n += m
				continue
			}
			closed = err == nil || err != syscall.EAGAIN && err != syscall.EINTR
			break
		}
		return true // never wait
	})
	return n, closed
}

// admit takes a connection from the accept loop, without blocking: it reads the hello
// that has arrived, refuses a forged or replayed one, enters the connection in the
// table (shedding one when it is full) and starts its handshake.
func (a *Agent) admit(c net.Conn) {
	accepted := time.Now()
	hello := make([]byte, helloSize)
	n, closed := readNow(c, hello)
	v := helloForged
	switch {
	case n == helloSize:
		if v = checkHello(a.ckey, hello, accepted); v == helloForged {
			a.refuse(c, fmt.Errorf("%w: hello without a valid key proof", errAuth))
			return
		}
	case closed:
		a.refuse(c, fmt.Errorf("%w: closed before its hello", errAuth))
		return
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		c.Close()
		return
	}
	if v == helloProven && !a.nonces.fresh(hello, accepted) {
		a.mu.Unlock()
		a.refuse(c, fmt.Errorf("%w: replayed hello", errAuth))
		return
	}
	act, shed := a.pending.admit(c, n == helloSize)
	if act != admitFree {
		delete(a.conns, shed)
	}
	if act != shedNewcomer {
		a.conns[c] = struct{}{}
		a.wg.Add(1)
	}
	a.mu.Unlock()
	switch act {
	case admitEvict:
		a.noteShed(shed, "silent, shed for a newer connection")
	case shedNewcomer:
		a.noteShed(c, "every pending handshake proved the key")
		return
	}
	go a.serveConn(c, hello[:n], v, accepted)
}

// noteShed closes a shed connection and logs it.
func (a *Agent) noteShed(c net.Conn, why string) {
	c.Close()
	a.shed.Add(1)
	a.strangers.note(logShed, fmt.Sprintf("from %s: %s (%d handshakes pending)", c.RemoteAddr(), why, maxHandshakes))
}

// refuse closes a connection whose handshake failed and logs it.
func (a *Agent) refuse(c net.Conn, err error) {
	c.Close()
	a.rejected.Add(1)
	a.strangers.note(logRefused, fmt.Sprintf("from %s: %v", c.RemoteAddr(), err))
}

// serveConn completes the handshake of an admitted connection, whose first n bytes of
// hello (verdict v when whole) admit read, and runs the job it submits. Nothing is read
// from an unauthenticated peer but its hello, and nothing is written to it.
func (a *Agent) serveConn(c net.Conn, got []byte, v helloVerdict, accepted time.Time) {
	defer a.wg.Done()
	hello := make([]byte, helloSize)
	copy(hello, got)
	if len(got) < helloSize {
		c.SetReadDeadline(accepted.Add(helloTimeout))
		if _, err := io.ReadFull(c, hello[len(got):]); err != nil {
			if isTimeout(err) {
				err = fmt.Errorf("no hello within %v", helloTimeout)
			}
			a.endPending(c, fmt.Errorf("%w: %v", errAuth, err))
			return
		}
		if v = checkHello(a.ckey, hello, time.Now()); v == helloForged {
			a.endPending(c, fmt.Errorf("%w: hello without a valid key proof", errAuth))
			return
		}
		a.mu.Lock()
		replay := v == helloProven && !a.nonces.fresh(hello, time.Now())
		proven := !replay && a.pending.prove(c)
		a.mu.Unlock()
		if replay {
			a.endPending(c, fmt.Errorf("%w: replayed hello", errAuth))
			return
		}
		if !proven {
			return // shed meanwhile: closed and logged
		}
	}
	c.SetDeadline(time.Now().Add(handshakeTimeout))
	cc, err := finishHandshake(c, a.ckey, hello, v)
	if a.endPending(c, err) {
		c.SetDeadline(time.Time{})
		a.runJob(cc)
	}
}

// endPending takes c out of the pending handshakes; after an error (err not nil) or
// while the agent shuts down it refuses c and returns false. A connection shed
// meanwhile is closed and logged already.
func (a *Agent) endPending(c net.Conn, err error) bool {
	a.mu.Lock()
	there := a.pending.remove(c)
	delete(a.conns, c)
	closed := a.closed
	a.mu.Unlock()
	if !there {
		c.Close()
		return false
	}
	if err == nil && closed {
		err = errors.New("the agent is shutting down")
	}
	if err != nil {
		a.refuse(c, err)
		return false
	}
	return true
}
