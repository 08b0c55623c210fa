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
// kernel's backlog never fills with silent clients. A socket is pending from its accept
// until its handshake fails or Accept takes its connection; at most maxPending are. A
// pending socket is unproven until its hello is read (or it is refused): an unproven
// socket costs nothing to drop. When all slots are taken the accept loop sheds the
// oldest unproven socket that has no hello queued (else the oldest unproven one): it
// answers statusShed and closes it, and the dialer dials again. Only when every pending
// socket is proven (an application slow to call Accept) does the loop wait, and the
// kernel's backlog holds further dialers.
const (
	// maxPending bounds the sockets in a handshake or waiting for Accept.
	maxPending = 64
	// helloTimeout bounds the wait for a silent peer's hello. A dialer of this package
	// sends it right after connecting.
	helloTimeout = time.Second
)

// acceptLoop accepts rendezvous sockets until Close, on accept.Serve: an accept error
// (EMFILE, ENFILE, ENOBUFS, ...) never ends it, it backs off and retries. Each socket
// joins the unproven list and gets a handshake goroutine; gate bounds and sheds.
func (l *shmListener) acceptLoop() {
	defer l.wg.Done()
	accept.Serve(l.ctx, gate{l}, accept.Config{}, func(c net.Conn, _ func()) {
		uc := c.(*net.UnixConn)
		l.mu.Lock()
		l.unproven = append(l.unproven, uc)
		l.mu.Unlock()
		l.wg.Add(1)
		go l.serve(uc)
	})
}

// gate is the rendezvous socket as acceptLoop's accept.Serve sees it. Its Accept takes
// a slot, shedding an unproven socket when none is free, and then accepts; the slot goes
// back on an accept error, and otherwise when serve gives up the socket or Accept takes
// its connection. Close does nothing: shmListener.Close closes the socket.
type gate struct{ l *shmListener }

// Accept takes a slot, then accepts a socket; after Close it returns net.ErrClosed. Out
// of descriptors, it sheds an unproven socket and tries again at once.
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

// takeSlot takes a pending slot. When none is free it sheds an unproven socket, whose
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

// shedOne drops the oldest unproven socket that has no complete hello queued, or the
// oldest unproven one if all have: it answers statusShed and closes the socket. It
// reports whether there was one to shed.
func (l *shmListener) shedOne() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.unproven) == 0 {
		return false
	}
	i := max(0, slices.IndexFunc(l.unproven, func(uc *net.UnixConn) bool { return !helloQueued(uc) }))
	uc := l.unproven[i]
	l.unproven = slices.Delete(l.unproven, i, i+1)
	notify(uc, statusShed)
	uc.Close()
	l.shed.Add(1)
	return true
}

// claim takes uc off the unproven list, so that it can no longer be shed. It reports
// false if uc was not on it: shedOne took it (and closed it), or it was claimed before.
func (l *shmListener) claim(uc *net.UnixConn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := slices.Index(l.unproven, uc)
	if i < 0 {
		return false
	}
	l.unproven = slices.Delete(l.unproven, i, i+1)
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

// helloQueued reports whether a complete hello waits in uc's receive queue.
func helloQueued(uc *net.UnixConn) bool {
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
