package sockets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// shmListener is the "shm" network's net.Listener. One goroutine accepts from the
// rendezvous socket; each accepted socket gets its own handshake goroutine, so a stalled
// or hostile client holds up nobody; good connections reach Accept through conns.
type shmListener struct {
	ul       *net.UnixListener
	laddr    net.Addr
	ringSize int // 0: the dialer's request or the default
	uid      uint32
	allow    []uint32

	conns  chan *Conn    // handshaken connections, unbuffered
	slots  chan struct{} // one per pending socket: in its handshake or unaccepted (pending.go)
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the accept loop and the handshake goroutines
	once   sync.Once

	shed atomic.Int64 // sockets shed: silent past helloTimeout, or the longest owing when full

	mu    sync.Mutex
	owing []owingSocket // pending sockets that owe the dialer's hello or ready, longest owing first
}

// euid returns the uid a listener admits besides ListenConfig.AllowUIDs (tests
// replace it to play another user).
var euid = os.Geteuid

// acceptHook, when set, replaces AcceptUnix in the accept loop (tests inject errors).
var acceptHook func(*net.UnixListener) (*net.UnixConn, error)

// listenSHM binds the abstract Unix socket "\x00"+abstractName and serves shm
// handshakes on it. laddr is what the listener's and its connections' addresses report
// (nil: Addr{"shm", name}).
func listenSHM(ctx context.Context, cfg *ListenConfig, abstractName string, laddr net.Addr) (*shmListener, error) {
	if laddr == nil {
		laddr = Addr{Net: netName, Name: abstractName[min(len(abstractName), len(abstractPrefix)):]}
	}
	if cfg == nil {
		cfg = &ListenConfig{}
	}
	if cfg.RingSize != 0 && !validRingSize(uint64(cfg.RingSize)) {
		return nil, opError("listen", nil, laddr, fmt.Errorf("ListenConfig.RingSize %d is not a power of two in [%d, %d]", cfg.RingSize, minRingSize, maxRingSize))
	}
	var lc net.ListenConfig
	nl, err := lc.Listen(ctx, "unix", "@"+abstractName)
	if err != nil {
		var again bool
		if err, again = heldErr(abstractName, err); again { // its holder just closed it
			if nl, err = lc.Listen(ctx, "unix", "@"+abstractName); err != nil {
				err, _ = heldErr(abstractName, err)
			}
		}
	}
	if err != nil {
		return nil, opError("listen", nil, laddr, err)
	}
	l := &shmListener{
		ul:       nl.(*net.UnixListener),
		laddr:    laddr,
		ringSize: cfg.RingSize,
		uid:      uint32(euid()),
		allow:    slices.Clone(cfg.AllowUIDs),
		conns:    make(chan *Conn),
		slots:    make(chan struct{}, maxPending),
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.wg.Add(1)
	go l.acceptLoop()
	return l, nil
}

// Accept returns the next handshaken connection.
func (l *shmListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		<-l.slots
		if l.ctx.Err() != nil { // Close raced with the hand-over
			c.close(false)
			break
		}
		return c, nil
	case <-l.ctx.Done():
	}
	return nil, opError("accept", nil, l.laddr, net.ErrClosed)
}

// Close stops the listener: Accept returns net.ErrClosed, handshakes in progress are
// cut, and connections not yet accepted are reset (their dialers' Reads fail with
// ECONNRESET, as with TCP). Accepted connections live on.
func (l *shmListener) Close() error {
	err := error(net.ErrClosed)
	l.once.Do(func() {
		l.cancel()
		err = l.ul.Close()
		l.wg.Wait()
	})
	if err != nil {
		return opError("close", nil, l.laddr, err)
	}
	return nil
}

// Addr returns the listener's address.
func (l *shmListener) Addr() net.Addr { return l.laddr }

func (l *shmListener) accept() (*net.UnixConn, error) {
	if acceptHook != nil {
		return acceptHook(l.ul)
	}
	return l.ul.AcceptUnix()
}

// serve runs one handshake and hands the connection to Accept. It gives its slot back
// unless Accept took the connection (Accept gives it back then).
func (l *shmListener) serve(uc *net.UnixConn) {
	defer l.wg.Done()
	stop := context.AfterFunc(l.ctx, func() { uc.SetDeadline(aLongTimeAgo) })
	mem, ringSize, err := l.handshake(uc)
	if !stop() && err == nil {
		unix.Munmap(mem)
		err = net.ErrClosed
	}
	if err != nil {
		if l.claim(uc) || !errors.Is(err, errShed) {
			uc.Close()
		}
		<-l.slots
		return
	}
	uc.SetDeadline(time.Time{})
	c := newConn(uc, mem, ringSize, false, l.laddr, l.laddr)
	select {
	case l.conns <- c:
	case <-l.ctx.Done():
		c.close(false)
		<-l.slots
	}
}

// handshake checks the peer's credentials (before reading anything, so that another
// user's process costs no wait), reads the hello within helloTimeout, creates the
// segment, sends the reply with the memfd and waits for the dialer's ready within
// handshakeTimeout. A refusal is answered with its status before the error returns. The
// socket is on the owing list (sheddable) while it waits for the hello and, once the
// reply is sent, for the ready; errShed means the accept loop shed it and closed it.
func (l *shmListener) handshake(uc *net.UnixConn) ([]byte, int, error) {
	refuse := func(status uint16, err error) ([]byte, int, error) {
		notify(uc, status)
		return nil, 0, err
	}
	uid, err := peerUID(uc)
	if err != nil {
		return nil, 0, err
	}
	if uid != l.uid && !slices.Contains(l.allow, uid) {
		if !l.claim(uc) {
			return nil, 0, errShed
		}
		return refuse(statusRefusedUID, fmt.Errorf("peer uid %d not allowed (ListenConfig.AllowUIDs)", uid))
	}
	if err := l.setDeadline(uc, helloTimeout); err != nil {
		return nil, 0, err
	}
	var b [messageSize]byte
	_, err = io.ReadFull(uc, b[:])
	if !l.claim(uc) {
		return nil, 0, errShed
	}
	if errors.Is(err, os.ErrDeadlineExceeded) && l.ctx.Err() == nil {
		l.shed.Add(1)
		return refuse(statusShed, fmt.Errorf("no hello within %v", helloTimeout))
	}
	if err != nil {
		return nil, 0, err
	}
	if err := l.setDeadline(uc, handshakeTimeout); err != nil {
		return nil, 0, err
	}
	hello, err := decodeHello(b[:])
	if err != nil {
		return refuse(statusBadHello, err)
	}
	if hello.version != protocolVersion {
		return refuse(statusBadVersion, fmt.Errorf("hello of version %d", hello.version))
	}
	ringSize := chooseRingSize(l.ringSize, hello.ringSize)
	fd, mem, err := createSegment(ringSize)
	if err != nil {
		return refuse(statusNoMemory, err)
	}
	defer unix.Close(fd)
	l.owe(uc, mem) // sheddable until its ready comes: the offer can be withdrawn
	r := message{version: protocolVersion, kind: kindReply, ringSize: uint32(ringSize)}.encode()
	n, _, err := uc.WriteMsgUnix(r[:], unix.UnixRights(fd), nil)
	if err == nil && n != len(r) {
		err = io.ErrShortWrite
	}
	if err == nil {
		_, err = io.ReadFull(uc, b[:])
	}
	if !l.claim(uc) {
		err = errShed
	} else if err == nil {
		err = decodeReady(b[:], ringSize)
	}
	if err != nil {
		unix.Munmap(mem)
		return nil, 0, err
	}
	return mem, ringSize, nil
}

// peerUID returns the effective uid of the process at the other end of uc.
func peerUID(uc *net.UnixConn) (uint32, error) {
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if cerr != nil {
		return 0, fmt.Errorf("SO_PEERCRED: %w", cerr)
	}
	return cred.Uid, nil
}
