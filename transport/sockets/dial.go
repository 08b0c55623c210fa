package sockets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// handshakeTimeout bounds a handshake whose context has no deadline, on both sides.
const handshakeTimeout = 10 * time.Second

// aLongTimeAgo is a deadline that has passed: setting it unblocks pending I/O.
var aLongTimeAgo = time.Unix(1, 0)

// The dialer's back-off between tries of a shed or refused-for-backlog dial: dialRetryMin
// after the first, doubling up to dialRetryMax.
const (
	dialRetryMin = time.Millisecond
	dialRetryMax = 100 * time.Millisecond
)

// dialSHM connects to the listener bound at the abstract Unix socket "\x00"+abstractName
// and returns the connection over the segment it sends. raddr is what LocalAddr and
// RemoteAddr report (nil: Addr{"shm", name}). With retry, a dial that the listener shed
// or whose backlog was full is tried again after a back-off, until ctx ends or, when ctx
// has no deadline, for handshakeTimeout.
func dialSHM(ctx context.Context, abstractName string, raddr net.Addr, retry bool) (*Conn, error) {
	if raddr == nil {
		raddr = Addr{Net: netName, Name: strings.TrimPrefix(abstractName, abstractPrefix)}
	}
	if _, ok := ctx.Deadline(); retry && !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, handshakeTimeout)
		defer cancel()
	}
	var backoff time.Duration
	for {
		c, err := dialSHMOnce(ctx, abstractName)
		if err == nil {
			return newConn(c.uc, c.mem, c.ringSize, true, raddr, raddr), nil
		}
		if !retry || !errors.Is(err, errShed) && !errors.Is(err, syscall.EAGAIN) {
			return nil, opError("dial", nil, raddr, err)
		}
		backoff = min(max(2*backoff, dialRetryMin), dialRetryMax)
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, opError("dial", nil, raddr, err)
		}
	}
}

// dialed is a handshaken rendezvous socket and the segment it brought.
type dialed struct {
	uc       *net.UnixConn
	mem      []byte
	ringSize int
}

// dialSHMOnce connects to the rendezvous socket and runs the handshake once.
func dialSHMOnce(ctx context.Context, abstractName string) (dialed, error) {
	var nd net.Dialer
	nc, err := nd.DialContext(ctx, "unix", "@"+abstractName)
	if err != nil {
		return dialed{}, dialErr(ctx, strings.TrimPrefix(abstractName, abstractPrefix), err)
	}
	uc := nc.(*net.UnixConn)
	if err := checkListenerUID(uc); err != nil {
		uc.Close()
		return dialed{}, err
	}
	mem, ringSize, err := handshakeDial(ctx, uc)
	if err != nil {
		uc.Close()
		return dialed{}, err
	}
	return dialed{uc, mem, ringSize}, nil
}

// trustListener reports whether a dialer connects to a listener run by uid: this
// process's uid or root (a variable for tests).
var trustListener = func(uid uint32) bool { return uid == uint32(os.Geteuid()) || uid == 0 }

// checkListenerUID refuses a listener run by another user than this process's (or
// root): abstract sockets have no permissions. So a name could be bound first by a
// process that means to read what its clients send (for "tcp", a TCP client's traffic).
func checkListenerUID(uc *net.UnixConn) error {
	uid, err := peerUID(uc)
	if err != nil {
		return fmt.Errorf("read the listener's credentials: %w", err)
	}
	if !trustListener(uid) {
		return fmt.Errorf("the listener runs as uid %d, not as this process's uid %d or root: refused", uid, os.Geteuid())
	}
	return nil
}

// dialErr explains a failed connect to the rendezvous socket.
func dialErr(ctx context.Context, name string, err error) error {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ENOENT):
		return fmt.Errorf("no listener named %q in this network namespace (is the server running?)", name)
	case errors.Is(err, syscall.EAGAIN):
		return fmt.Errorf("listener %q has a full backlog (it is not accepting): %w", name, err)
	case ctx.Err() != nil:
		return ctx.Err()
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return oe.Err
	}
	return err
}

// handshakeDial sends the hello, reads the reply, maps the segment it carries and takes
// its offer (errShed: the listener withdrew it). The handshake is bounded by ctx, or by
// handshakeTimeout when ctx has no deadline. On success uc has no deadline left.
func handshakeDial(ctx context.Context, uc *net.UnixConn) ([]byte, int, error) {
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(handshakeTimeout)
	}
	uc.SetDeadline(dl)
	stop := context.AfterFunc(ctx, func() { uc.SetDeadline(aLongTimeAgo) })
	defer stop()
	ioErr := func(what string, err error) error {
		switch {
		case errors.Is(ctx.Err(), context.Canceled):
			return ctx.Err()
		case errors.Is(err, os.ErrDeadlineExceeded), ctx.Err() != nil:
			return fmt.Errorf("listener did not answer the handshake in time (%s): %w", what, os.ErrDeadlineExceeded)
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return fmt.Errorf("listener closed the connection during the handshake (%s)", what)
		}
		return fmt.Errorf("handshake %s: %w", what, err)
	}
	hello := message{version: protocolVersion, kind: kindHello}.encode()
	// A listener that refuses this uid answers without reading the hello and may have
	// closed before it is sent: a failed write is reported only if no reply is there.
	_, werr := uc.Write(hello[:])
	var b [messageSize]byte
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, flags, _, err := uc.ReadMsgUnix(b[:], oob)
	fds := parseRights(oob[:oobn])
	closeAll := func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	if err == nil && n < messageSize {
		_, err = io.ReadFull(uc, b[n:])
	}
	if err != nil {
		closeAll()
		if werr != nil {
			return nil, 0, ioErr("sending hello", werr)
		}
		return nil, 0, ioErr("reading reply", err)
	}
	reply, err := decodeReply(b[:], os.Geteuid())
	switch {
	case err != nil:
	case flags&unix.MSG_CTRUNC != 0 || len(fds) != 1:
		err = fmt.Errorf("listener's reply carries %d descriptors, want 1", len(fds))
	}
	if err != nil {
		closeAll()
		return nil, 0, err
	}
	mem, err := mapSegment(fds[0], int(reply.ringSize))
	closeAll()
	if err != nil {
		return nil, 0, err
	}
	if !takeOffer(mem) { // the listener shed this socket while the reply was on its way
		unix.Munmap(mem)
		return nil, 0, errShed
	}
	ready := message{version: protocolVersion, kind: kindReady, ringSize: reply.ringSize}.encode()
	if _, err := uc.Write(ready[:]); err != nil {
		unix.Munmap(mem)
		return nil, 0, ioErr("sending ready", err)
	}
	if stop(); ctx.Err() != nil {
		unix.Munmap(mem)
		return nil, 0, ctx.Err()
	}
	uc.SetDeadline(time.Time{})
	return mem, int(reply.ringSize), nil
}

// parseRights returns every descriptor passed in the control messages of oob, so that
// the caller can close the ones it does not use.
func parseRights(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if got, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, got...)
		}
	}
	return fds
}
