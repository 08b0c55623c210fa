package runtime

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/gorma-hpc/gorma/transport/sockets"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// Byte streams between ranks. A rank listener (World.Listen) has a name. Between ranks
// that share memory, World.Dial connects to the rank listener's shm listener (package
// transport/sockets: rings in a memfd, no system call while both sides are busy), named
// after the job secret's digest, the rank and the name, which only the job's own user
// may reach (SO_PEERCRED). Otherwise it asks the rank's connection listener (cm.go) for
// a stream to the rank listener, with the same handshake as a queue pair's (kind
// cmKindSocket: both ranks prove the job secret), and the connection that carried the
// handshake becomes the stream: the kernel's TCP, authenticated, not encrypted. So any Go
// code that speaks net.Conn (net/rpc, gRPC, net/http) runs between ranks, on one host or
// several, without a port of its own.

// rankListener is a World.Listen listener.
type rankListener struct {
	links *links
	addr  RankAddr
	shm   net.Listener // the shm side, for ranks that share memory with this one; nil if none
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// RankAddr is the address of a rank listener: the job rank and the listener's name.
type RankAddr struct {
	Rank int
	Name string
}

// Network is "gorma".
func (a RankAddr) Network() string { return "gorma" }

func (a RankAddr) String() string { return fmt.Sprintf("rank %d/%s", a.Rank, a.Name) }

const maxListenerName = 64

func checkListenerName(name string) error {
	if name == "" || len(name) > maxListenerName {
		return invalidf("listener name of %d bytes: want 1 to %d", len(name), maxListenerName)
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._:@-", c) >= 0) {
			return invalidf("listener name %q: want letters, digits and . _ : @ -", name)
		}
	}
	return nil
}

// shmStreamName is the shm address of rank's listener name in this job.
func (l *links) shmStreamName(rank int, name string) string {
	d := sha256.Sum256(l.cm.secret)
	return fmt.Sprintf("gorma-rank/%x/%d/%s", d[:8], rank, name)
}

// sharesMemory reports whether this rank reaches rank r through shared memory: a
// provider that maps the peer's memory (verbs.CapMap).
func (l *links) sharesMemory(r int) bool {
	c, err := l.capsBetween(l.rank, r)
	return err == nil && c.Has(verbs.CapMap)
}

// Listen returns a listener for byte streams that the job's ranks open to this rank with
// Dial and name, accepted as net.Conns. One listener per name; Finalize closes it.
func (w *World) Listen(name string) (net.Listener, error) {
	if err := checkListenerName(name); err != nil {
		return nil, withOp("listen", err)
	}
	e := w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkLocked(); err != nil {
		return nil, withOp("listen", err)
	}
	if e.links.cm.ln == nil {
		return nil, withOp("listen", invalidf("a world of one rank has no peers to accept from"))
	}
	if e.links.cm.named == nil {
		e.links.cm.named = map[string]*rankListener{}
	}
	if _, ok := e.links.cm.named[name]; ok {
		return nil, withOp("listen", invalidf("this rank already listens on %q (Close that listener first)", name))
	}
	l := &rankListener{links: &e.links, addr: RankAddr{Rank: e.rank, Name: name}, conns: make(chan net.Conn), done: make(chan struct{})}
	if hostShared(e.localSize, e.cfg.transport) {
		shm, err := sockets.Listen("shm", e.links.shmStreamName(e.rank, name))
		if err != nil {
			return nil, withOp("listen", fmt.Errorf("%w: %w", ErrTransport, err))
		}
		l.shm = shm
		go l.forward()
	}
	e.links.cm.named[name] = l
	return l, nil
}

// forward hands the shm side's connections to Accept until the listener closes.
func (l *rankListener) forward() {
	for {
		c, err := l.shm.Accept()
		if err != nil {
			return // closed (Close), or never again
		}
		select {
		case l.conns <- c:
		case <-l.done:
			c.Close()
			return
		}
	}
}

func (l *rankListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, &net.OpError{Op: "accept", Net: "gorma", Addr: l.addr, Err: net.ErrClosed}
	}
}

func (l *rankListener) Close() error {
	l.once.Do(func() {
		l.links.mu.Lock()
		if l.links.cm.named[l.addr.Name] == l {
			delete(l.links.cm.named, l.addr.Name)
		}
		l.links.mu.Unlock()
		l.stop()
	})
	return nil
}

// stop ends Accept and the shm side.
func (l *rankListener) stop() {
	close(l.done)
	if l.shm != nil {
		l.shm.Close()
	}
}

func (l *rankListener) Addr() net.Addr { return l.addr }

// closeListenersLocked closes every rank listener (Finalize, shutdown).
func (l *links) closeListenersLocked() {
	for name, rl := range l.cm.named {
		delete(l.cm.named, name)
		rl.once.Do(rl.stop)
	}
}

// serveSocket answers rank from's request for a stream to the rank listener name, and
// reports whether that listener took c.
func (l *links) serveSocket(ctx context.Context, c net.Conn, from int, name string, transcript []byte) bool {
	l.mu.Lock()
	rl := l.cm.named[name]
	l.mu.Unlock()
	if rl == nil {
		l.cm.reply(c, cmNotYet, nil, transcript)
		return false
	}
	if err := l.cm.reply(c, cmAccept, nil, transcript); err != nil {
		return false
	}
	c.SetDeadline(time.Time{})
	select {
	case rl.conns <- c:
		return true
	case <-rl.done:
	case <-ctx.Done():
	}
	return false
}

// Dial opens a byte stream to the listener that rank (of w) opened with Listen(name),
// waiting (until ctx ends) for that rank to open it. The stream is a net.Conn with
// deadlines and half-close (CloseWrite on its *net.TCPConn).
func (w *World) Dial(ctx context.Context, rank int, name string) (net.Conn, error) {
	if err := checkListenerName(name); err != nil {
		return nil, withOp("dial", err)
	}
	jr, ok := jobRank(w, rank)
	if !ok {
		return nil, withOp("dial", w.k.rankErr(w, rank))
	}
	e := w.e
	e.mu.Lock()
	err := e.checkLocked()
	e.mu.Unlock()
	if err != nil {
		return nil, withOp("dial", err)
	}
	if jr == e.rank {
		return nil, withOp("dial", invalidf("rank %d dialing itself: use a net.Pipe", rank))
	}
	if e.links.sharesMemory(jr) {
		return e.links.dialSHMStream(ctx, rank, jr, name)
	}
	c, err := e.links.cardOf(ctx, jr)
	if err != nil {
		return nil, e.links.dialErr(jr, fmt.Errorf("%w: read rank %d's card: %w", ErrTransport, rank, err))
	}
	backoff := time.Millisecond
	for {
		if err := e.links.peerGone(jr); err != nil {
			return nil, withOp("dial", err)
		}
		conn, status, body, err := e.links.cm.handshake(ctx, cmKindSocket, jr, c.cm, []byte(name))
		switch {
		case err != nil:
			return nil, e.links.dialErr(jr, fmt.Errorf("%w: stream to rank %d's listener %q (listener %s): %w", ErrTransport, rank, name, c.cm, err))
		case status == cmAccept:
			return conn, nil
		case status == cmNotYet:
			conn.Close()
		default:
			conn.Close()
			return nil, withOp("dial", fmt.Errorf("%w: rank %d refuses a stream to %q: %s", ErrTransport, rank, name, body))
		}
		select {
		case <-ctx.Done():
			return nil, withOp("dial", fmt.Errorf("rank %d has no listener named %q (does it call Listen?): %w", rank, name, ctx.Err()))
		case <-time.After(backoff):
			backoff = min(2*backoff, 50*time.Millisecond)
		}
	}
}

// dialSHMStream connects to the shm side of rank's (job rank jr's) listener name, asking
// again until it exists or ctx ends.
func (l *links) dialSHMStream(ctx context.Context, rank, jr int, name string) (net.Conn, error) {
	addr := l.shmStreamName(jr, name)
	backoff := time.Millisecond
	for {
		c, err := sockets.DialContext(ctx, "shm", addr)
		if err == nil {
			return c, nil
		}
		if err := l.peerGone(jr); err != nil {
			return nil, withOp("dial", err)
		}
		select {
		case <-ctx.Done():
			return nil, withOp("dial", fmt.Errorf("rank %d has no listener named %q (does it call Listen?): %w (last attempt: %v)", rank, name, ctx.Err(), err))
		case <-time.After(backoff):
			backoff = min(2*backoff, 50*time.Millisecond)
		}
	}
}

// peerGone returns the failure of job rank jr's peer, if this rank knows it failed.
func (l *links) peerGone(jr int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p := l.peers[jr]; p != nil && p.failed != nil {
		return p.failed
	}
	return nil
}

// dialErr is the error of a Dial to job rank jr that failed with err: a *ProcError that
// names the rank, its host and "its process exited" when err says so (transportWhy),
// with err in its chain; err itself otherwise.
func (l *links) dialErr(jr int, err error) error {
	if why := transportWhy(err); why != "" {
		l.mu.Lock()
		host := l.table().hosts[jr]
		l.mu.Unlock()
		return withOp("dial", &ProcError{Rank: jr, Host: host, Err: ErrProcFailed, Why: why, Cause: err})
	}
	return withOp("dial", err)
}
