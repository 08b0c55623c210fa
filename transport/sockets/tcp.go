package sockets

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"time"
)

// Transparent upgrade of "tcp". A TCP listener made by this package also offers shared
// memory to dialers of this package on the same host and in the same network namespace.
// It binds, beside its TCP port, an shm listener on the abstract Unix socket named after
// its TCP address (upgradeName). A Dialer asked for "tcp" tries that socket first when
// the address is one of this host's, and falls back to TCP by itself when there is none,
// or it refuses (another user), or the address is remote. Plain TCP clients are served as
// usual. So a program changes its listener and dialer, and nothing else.

// upgradePrefix begins the abstract socket name of a TCP listener's shm offer.
const upgradePrefix = "gorma/tcp/"

// upgradeName is the abstract socket name of the shm offer of a TCP listener bound to
// ip:port; a listener on every address (0.0.0.0 or ::) is named with "*".
func upgradeName(ip net.IP, port int) string {
	host := "*"
	if ip != nil && !ip.IsUnspecified() {
		host = ip.String()
	}
	return upgradePrefix + net.JoinHostPort(host, strconv.Itoa(port))
}

// upgradeListener serves a TCP listener and its shm offer through one Accept. Two
// goroutines accept, one per side, and hand connections (or a TCP Accept error, which
// net/http's server backs off on) to Accept; Close stops both.
type upgradeListener struct {
	tcp  net.Listener
	shm  *shmListener
	out  chan acceptResult
	done chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

type acceptResult struct {
	c   net.Conn
	err error
}

// listenTCP listens on network ("tcp", "tcp4" or "tcp6") at address, with the shm offer.
func (lc *ListenConfig) listenTCP(ctx context.Context, network, address string) (net.Listener, error) {
	var nlc net.ListenConfig
	ln, err := nlc.Listen(ctx, network, address)
	if err != nil {
		return nil, err
	}
	ta := ln.Addr().(*net.TCPAddr)
	shm, err := listenSHM(ctx, lc, upgradeName(ta.IP, ta.Port), ta)
	if held := (*NameHeldError)(nil); errors.As(err, &held) && !held.trustedHolder() {
		// This user's dialers refuse the holder and fall back to TCP: serve TCP alone.
		lc.logf("sockets: %s listener %s serves plain TCP without the shm upgrade: %v", network, ta, held)
		return ln, nil
	}
	if err != nil {
		ln.Close()
		var oe *net.OpError
		if errors.As(err, &oe) {
			err = oe.Err
		}
		return nil, &net.OpError{Op: "listen", Net: network, Addr: ta, Err: err}
	}
	l := &upgradeListener{tcp: ln, shm: shm, out: make(chan acceptResult), done: make(chan struct{})}
	l.wg.Add(2)
	go l.serve(ln.Accept)
	go l.serve(shm.Accept)
	return l, nil
}

// serve hands what accept returns to Accept until the listener closes.
func (l *upgradeListener) serve(accept func() (net.Conn, error)) {
	defer l.wg.Done()
	for {
		c, err := accept()
		if err != nil && errors.Is(err, net.ErrClosed) {
			return
		}
		select {
		case l.out <- acceptResult{c, err}:
		case <-l.done:
			if c != nil {
				c.Close()
			}
			return
		}
		if err != nil {
			select { // a kernel error (out of descriptors): let it pass before the next try
			case <-time.After(5 * time.Millisecond):
			case <-l.done:
				return
			}
		}
	}
}

// Accept returns the next connection: a *net.TCPConn from a TCP client, or a *Conn from
// a dialer of this package on this host.
func (l *upgradeListener) Accept() (net.Conn, error) {
	select {
	case r := <-l.out:
		return r.c, r.err
	case <-l.done:
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.tcp.Addr(), Err: net.ErrClosed}
	}
}

// Close stops both listeners; connections already accepted stay open.
func (l *upgradeListener) Close() error {
	err := net.ErrClosed
	l.once.Do(func() {
		close(l.done)
		err = l.tcp.Close()
		l.shm.Close()
		l.wg.Wait()
	})
	return err
}

// Addr is the TCP address.
func (l *upgradeListener) Addr() net.Addr { return l.tcp.Addr() }

// dialTCP dials address over shm if a listener of this package serves it on this host,
// else over TCP.
func (d *Dialer) dialTCP(ctx context.Context, network, address string) (net.Conn, error) {
	if !d.NoUpgrade {
		if c := tryUpgrade(ctx, network, address); c != nil {
			return c, nil
		}
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, address)
}

// tryUpgrade returns an shm connection to the TCP listener at address, or nil when none
// of this package's listens on this host for it.
func tryUpgrade(ctx context.Context, network, address string) *Conn {
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port <= 0 || port > 65535 {
		return nil // a service name: leave it to the TCP dialer
	}
	var ips []net.IP
	switch ip := net.ParseIP(host); {
	case host == "":
		ips = []net.IP{net.IPv4(127, 0, 0, 1)}
	case ip != nil:
		ips = []net.IP{ip}
	default:
		addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
		if err != nil {
			return nil
		}
		for _, a := range addrs {
			ips = append(ips, a.IP)
		}
	}
	for _, ip := range ips {
		if network == "tcp4" && ip.To4() == nil || network == "tcp6" && ip.To4() != nil || !localIP(ip) {
			continue
		}
		raddr := &net.TCPAddr{IP: ip, Port: port}
		for _, name := range []string{upgradeName(ip, port), upgradeName(nil, port)} {
			if c, err := dialSHM(ctx, name, raddr, false); err == nil {
				return c
			}
			if ctx.Err() != nil {
				return nil
			}
		}
	}
	return nil
}

// localIP reports whether ip is this host's: loopback, unspecified, or an address of
// one of its interfaces (in this network namespace).
func localIP(ip net.IP) bool {
	if ip.IsLoopback() || ip.IsUnspecified() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.Equal(ip) {
			return true
		}
	}
	return false
}
