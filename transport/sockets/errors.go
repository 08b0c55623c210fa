package sockets

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// netName is the network name of shared-memory connections (Addr.Net, OpError.Net).
const netName = "shm"

// Errors a Conn's operations wrap in a *net.OpError.
var (
	// errCorruptRing: the peer wrote counters into the shared header that no correct
	// peer writes. The connection is unusable afterwards.
	errCorruptRing = errors.New("shm ring header corrupted by the peer (head/tail out of range): protocol error, connection dropped")

	// errPeerGone: the liveness socket closed while the peer had not closed its write
	// side: the peer process exited or was killed without closing the connection.
	errPeerGone = &peerError{"peer process gone: it exited or was killed without closing the connection", syscall.ECONNRESET}

	// errPeerClosedRead: the peer closed its read side (Close or CloseRead).
	errPeerClosedRead = &peerError{"broken pipe: the peer closed the connection for reading", syscall.EPIPE}

	// errShed: the listener dropped the socket before its handshake (no hello in time,
	// or all its slots taken by silent clients). The dialer dials again.
	errShed = errors.New("listener shed the handshake: its pending slots are taken (by silent clients?) or the hello came late; dial again or give the dial a longer deadline")

	// errWriteClosed: this side called CloseWrite.
	errWriteClosed = &peerError{"broken pipe: write after CloseWrite", syscall.EPIPE}
)

// peerError is a connection-state error that also matches its errno with errors.Is.
type peerError struct {
	msg   string
	errno syscall.Errno
}

func (e *peerError) Error() string { return e.msg }
func (e *peerError) Unwrap() error { return e.errno }

// opError wraps err for operation op on a connection from src to dst.
func opError(op string, src, dst net.Addr, err error) error {
	return &net.OpError{Op: op, Net: netName, Source: src, Addr: dst, Err: err}
}

// unknownNetwork is Listen's and Dial's error for a network they do not serve.
func unknownNetwork(op, network, address string) error {
	return &net.OpError{Op: op, Net: network, Addr: Addr{Net: network, Name: address}, Err: net.UnknownNetworkError(network)}
}

// badName explains why a name is not a valid shm address.
func badName(name string) error {
	if len(name) == 0 || len(name) > maxNameLen {
		return fmt.Errorf("shm address %q must be 1 to %d bytes long", name, maxNameLen)
	}
	for i := 0; i < len(name); i++ {
		if !nameByte(name[i]) {
			return fmt.Errorf("shm address %q has byte %q at %d; use only A-Z a-z 0-9 . _ : / @ -", name, name[i], i)
		}
	}
	return nil
}

const maxNameLen = 100

func nameByte(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	switch b {
	case '.', '_', ':', '/', '@', '-':
		return true
	}
	return false
}
