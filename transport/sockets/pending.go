package sockets

import (
	"errors"
	"net"
	"slices"
	"syscall"
	"time"

	"github.com/gorma-hpc/gorma/internal/accept"
	"golang.org/x/sys/unix"
)

// The listener's bound on pending sockets. Every socket is accepted at once, so the
// kernel's backlog never fills with stalled clients. A socket is pending from its accept
// until its handshake fails or Accept takes its connection; at most maxPending are. While
// a pending socket owes the dialer's next message (its hello, or its ready once the reply
// offered a segment) it is sheddable. When all slots are taken the accept loop sheds the
// socket that has owed its message longest with none queued; its offer, if any, is
// withdrawn first. Only when no such socket is left does it shed one whose hello is
// queued. It answers statusShed and closes the socket, and the dialer dials again. When
// nothing is sheddable (an application slow to call Accept) the loop waits, and the
// kernel's backlog holds further dialers.
const (
	// maxPending bounds the sockets in a handshake or waiting for Accept.
	maxPending = 64
	// helloTimeout bounds the wait for a silent peer's hello. A dialer of this package
	// sends it right after connecting.
	helloTimeout = time.Second
)

// owingSocket is a pending socket that owes the dialer's next message: its hello (mem
// nil), or its ready (mem the segment the reply offered).
type owingSocket struct {
	uc  *net.UnixConn
	mem []byte
}

// acceptLoop accepts rendezvous sockets until Close, on accept.Serve: an accept error
// (EMFILE, ENFILE, ENOBUFS, ...) never ends it, it backs off and retries. Each socket
// joins the owing list and gets a handshake goroutine; gate bounds and sheds.
func (l *shmListener) acceptLoop() {
	defer l.wg.Done()
	accept.Serve(l.ctx, gate{l}, accept.Config{}, func(c net.Conn, _ func()) {
		uc := c.(*net.UnixConn)
		l.owe(uc, nil)
		l.wg.Add(1)
		go l.serve(uc)
	})
}

// gate is the rendezvous socket as acceptLoop's accept.Serve sees it. Its Accept takes
// a slot, shedding an owing socket when none is free, and then accepts; the slot goes
// back on an accept error, and otherwise when serve gives up the socket or Accept takes
// its connection. Close does nothing: shmListener.Close closes the socket.
type gate struct{ l *shmListener }

// Accept takes a slot, then accepts a socket; after Close it returns net.ErrClosed. Out
// of descriptors, it sheds an owing socket and tries again at once.
func (g gate) Accept() (net.Conn, error) {
	l := g.l
	for {
		if !l.takeSlot() {
			return nil, net.ErrClosed
		}
		uc, err := l.accept()
		if err == nil {
			return uc, nil
		}
		<-l.slots
		if !errors.Is(err, syscall.EMFILE) && !errors.Is(err, syscall.ENFILE) || !l.shedOne() {
			return nil, err
		}
	}
}

// Close does nothing: the listener's Close cancels its context and closes the socket.
func (g gate) Close() error { return nil }

// Addr returns the rendezvous socket's address.
func (g gate) Addr() net.Addr { return g.l.ul.Addr() }

// takeSlot takes a pending slot. When none is free it sheds an owing socket, whose
// handshake goroutine gives its slot back, and waits. It returns false after Close.
func (l *shmListener) takeSlot() bool {
	select {
	case l.slots <- struct{}{}:
		return true
	default:
	}
	l.shedOne()
	select {
	case l.slots <- struct{}{}:
		return true
	case <-l.ctx.Done():
		return false
	}
}

// shedOne drops the socket that has owed its message longest with none queued (a ready
// only once its offer is withdrawn), else the oldest that owes a hello: it answers
// statusShed and closes the socket. It reports whether there was one to shed. A socket
// whose dialer took its offer is never shed: that dialer holds a connection.
func (l *shmListener) shedOne() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := slices.IndexFunc(l.owing, func(o owingSocket) bool { // withdraws only the chosen offer
		return !messageQueued(o.uc) && (o.mem == nil || withdrawOffer(o.mem))
	})
	if i < 0 {
		i = slices.IndexFunc(l.owing, func(o owingSocket) bool { return o.mem == nil })
	}
	if i < 0 {
		return false
	}
	uc := l.owing[i].uc
	l.owing = slices.Delete(l.owing, i, i+1)
	notify(uc, statusShed)
	uc.Close()
	l.shed.Add(1)
	return true
}

// owe puts uc at the end of the owing list: it owes its hello (mem nil) or, mem offered
// in the reply, its ready.
func (l *shmListener) owe(uc *net.UnixConn, mem []byte) {
	l.mu.Lock()
	l.owing = append(l.owing, owingSocket{uc, mem})
	l.mu.Unlock()
}

// claim takes uc off the owing list, so that it can no longer be shed. It reports false
// if uc was not on it: shedOne took it (and closed it), or it was claimed before.
func (l *shmListener) claim(uc *net.UnixConn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := slices.IndexFunc(l.owing, func(o owingSocket) bool { return o.uc == uc })
	if i < 0 {
		return false
	}
	l.owing = slices.Delete(l.owing, i, i+1)
	return true
}

// setDeadline bounds uc's I/O by d from now. After Close it returns net.ErrClosed, so
// that it never overrides the past deadline that Close set.
func (l *shmListener) setDeadline(uc *net.UnixConn, d time.Duration) error {
	uc.SetDeadline(time.Now().Add(d))
	if l.ctx.Err() != nil {
		return net.ErrClosed
	}
	return nil
}

// messageQueued reports whether a complete handshake message (a hello or a ready) waits
// in uc's receive queue.
func messageQueued(uc *net.UnixConn) bool {
	raw, err := uc.SyscallConn()
	if err != nil {
		return false
	}
	n := 0
	raw.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ) })
	return n >= messageSize
}

// notify sends a reply carrying status without blocking: a fresh socket's buffer has
// room for it, and a peer that filled it gets nothing.
func notify(uc *net.UnixConn, status uint16) {
	raw, err := uc.SyscallConn()
	if err != nil {
		return
	}
	r := message{version: protocolVersion, kind: kindReply, status: status}.encode()
	raw.Control(func(fd uintptr) { unix.Send(int(fd), r[:], unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL) })
}
