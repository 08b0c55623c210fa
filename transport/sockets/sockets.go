package sockets

import (
	"context"
	"log"
	"net"
	"time"
)

// Addr is a shared-memory address: the network ("shm") and the listener's name.
type Addr struct{ Net, Name string }

// Network returns a.Net.
func (a Addr) Network() string { return a.Net }

// String returns a.Name.
func (a Addr) String() string { return a.Name }

// abstractPrefix is prepended to a name to make the listener's abstract Unix socket
// name (without its leading NUL).
const abstractPrefix = "gorma/shm/"

// Listen listens on network "shm" at address, a name of 1 to 100 bytes of
// [A-Za-z0-9._:/@-], or on "tcp" (tcp4, tcp6) at a TCP address, offering shm to this
// package's dialers on the same host as well (tcp.go), with the default ListenConfig.
func Listen(network, address string) (net.Listener, error) {
	var lc ListenConfig
	return lc.Listen(context.Background(), network, address)
}

// Dial connects to the listener named address on network "shm", or to a TCP address on
// "tcp" (tcp4, tcp6): over shm when a listener of this package serves it on this host,
// else over TCP.
func Dial(network, address string) (net.Conn, error) {
	var d Dialer
	return d.DialContext(context.Background(), network, address)
}

// DialContext is Dial with a context that bounds the connection's set-up.
func DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	var d Dialer
	return d.DialContext(ctx, network, address)
}

// Dialer holds options for dialing. The zero value dials with no timeout but the
// context's.
type Dialer struct {
	// Timeout bounds the whole set-up (rendezvous and handshake); 0 means none.
	Timeout time.Duration
	// NoUpgrade makes "tcp" always dial TCP, never this host's shm offer (tcp.go).
	NoUpgrade bool
}

// DialContext connects to address on network; its signature fits
// http.Transport.DialContext and grpc.WithContextDialer.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	if d.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.Timeout)
		defer cancel()
	}
	switch network {
	case netName:
		addr := Addr{Net: netName, Name: address}
		if err := badName(address); err != nil {
			return nil, opError("dial", nil, addr, err)
		}
		c, err := dialSHM(ctx, abstractPrefix+address, addr, true)
		if err != nil {
			return nil, err
		}
		return c, nil
	case "tcp", "tcp4", "tcp6":
		return d.dialTCP(ctx, network, address)
	}
	return nil, unknownNetwork("dial", network, address)
}

// ListenConfig holds options for listening. The zero value admits only processes of the
// listener's own uid and uses rings of 1 MiB per direction.
type ListenConfig struct {
	// AllowUIDs are users besides the listener's own uid that may connect (checked with
	// SO_PEERCRED on the rendezvous socket).
	AllowUIDs []uint32
	// RingSize is the size in bytes of each direction's ring: a power of two from 4 KiB
	// to 256 MiB; 0 means 1 MiB. A connection maps twice this, its pages allocated as the
	// rings are first used. A larger ring lets long writes overlap more; a smaller one
	// costs many long-lived connections less memory.
	RingSize int
	// ErrorLog receives what a listener cannot return as an error: a "tcp" listener that
	// serves plain TCP because another user holds its shm name says so here. If nil, the
	// log package's standard logger is used.
	ErrorLog *log.Logger
}

// logf logs to lc.ErrorLog, or to the standard logger.
func (lc *ListenConfig) logf(format string, args ...any) {
	if lc.ErrorLog != nil {
		lc.ErrorLog.Printf(format, args...)
		return
	}
	log.Printf(format, args...)
}

// Listen listens on network "shm" at address; ctx bounds only the set-up, as with
// net.ListenConfig.
func (lc *ListenConfig) Listen(ctx context.Context, network, address string) (net.Listener, error) {
	switch network {
	case netName:
		addr := Addr{Net: netName, Name: address}
		if err := badName(address); err != nil {
			return nil, opError("listen", nil, addr, err)
		}
		l, err := listenSHM(ctx, lc, abstractPrefix+address, addr)
		if err != nil {
			return nil, err
		}
		return l, nil
	case "tcp", "tcp4", "tcp6":
		return lc.listenTCP(ctx, network, address)
	}
	return nil, unknownNetwork("listen", network, address)
}
