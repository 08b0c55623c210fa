package runtime

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorma-hpc/gorma/internal/accept"
	"github.com/gorma-hpc/gorma/pmi"
	"github.com/gorma-hpc/gorma/transport/verbs"
	"github.com/gorma-hpc/gorma/transport/verbs/tcp"
)

// Connection management. Init opens the devices but connects no queue pair: a rank's
// connection to a peer is made on first contact, in either direction, so that a job's
// start-up costs one fence and no connections, and a rank that talks to a few peers
// (a stencil's neighbours, a collective's O(log N) partners) holds only those.
//
//   - The origin, the first of the pair to need the connection (a send, an Attach, a
//     receive naming the peer), makes a placeholder peer at once (peerLocked): sends to it
//     wait in its out queue as opSend. A goroutine (dialPeer) reads the peer's card (from
//     the cards Init read under golaunch, or with one PMI get under a foreign process
//     manager). It makes the queue pair and the fast box on the device the pair's
//     transport needs (makeQPLocked). It sends its card and endpoint to the peer's
//     connection listener, whose address the card carries (cm_wire.go: authenticated with
//     the job secret).
//   - The target's listener goroutine (serveCM) answers without the target's
//     application: it makes its queue pair, moves it to RTR (and on shm to RTS, mapping
//     the origin's fast box) and replies with its endpoint. Both then finish the pair
//     (tcp's ToRTS waits for the provider's own connection) and mark the peer ready
//     (peerReadyLocked), which posts what waited in its out queue, in order.
//   - Two ranks that ask each other at once agree through cmDecide: the lower rank's
//     request wins, and both use the queue pair each side made first.
//
// A failed set-up (the peer's listener unreachable, a refused or timed-out handshake)
// fails the peer as a dead connection would (peerFailedLocked), naming the rank and what
// went wrong. The listener runs on accept.Serve: it survives any Accept error (backing
// off), and it bounds the connections not yet authenticated (cmMaxPending), closing any
// past the bound at once. A stranger's connection, shed or refused, costs a count in
// cm.rejected, never a log line.

// cmConnectTime bounds the set-up of one connection, from the first contact to ready.
const cmConnectTime = 60 * time.Second

// cmHandshakeTime bounds the unauthenticated part of a handshake on a listener's socket
// (a stranger holds a goroutine no longer), with room for a busy, oversubscribed host.
const cmHandshakeTime = 30 * time.Second

// cmBusyWrite bounds the write of a busy frame to a shed connection (a fresh socket's
// buffer takes it at once).
const cmBusyWrite = 10 * time.Millisecond

// cmStrangers is how many connections beyond two per other rank of the job may be
// pending on a listener at once: accepted, and neither authenticated (the request's
// proof of the job secret checked) nor closed; those waiting for Init count.
const cmStrangers = 64

// cmMaxPending bounds a listener's pending connections in a job of size ranks: every
// other rank may be asking at once for its queue pair and for a stream (World.Dial),
// before this rank's Init is done, without being shed. A shed origin fails as it would
// on a refused handshake: it does not ask again.
func cmMaxPending(size int) int { return 2*(size-1) + cmStrangers }

// cmServer is a rank's connection listener and the handshake of both sides: it proves
// the job secret and hands an authentic request to answer (links.answerCM), which links
// sets at Init. links owns it; its goroutines take no lock of their own, and answer takes
// engine.mu.
type cmServer struct {
	rank, size int
	stop       context.Context // ends at Finalize: stops the listener and cuts handshakes short
	secret     []byte          // the job secret; set once, before opened is closed
	answer     func(ctx context.Context, c net.Conn, kind uint8, from int, body, transcript []byte) (kept, ok bool)

	ln       *net.TCPListener
	addr     string        // advertised in the card
	opened   chan struct{} // closed once Init has set the secret and opened the devices
	wg       sync.WaitGroup
	rejected atomic.Int64             // connections shed, or closed before or during the handshake
	shed     atomic.Int64             // of those, the ones closed at once past cmMaxPending
	retried  atomic.Int64             // Accept errors the listener backed off from
	named    map[string]*rankListener // World.Listen's listeners by name; guarded by engine.mu
}

// listenCM opens the connection listener on host (empty: loopback) and starts serving
// it. Requests wait until Init has opened the devices (openCM).
func (s *cmServer) listenCM(host string) error {
	if host == "" {
		host = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return fmt.Errorf("%w: open the connection listener on %s: %w", ErrTransport, host, err)
	}
	s.ln = ln.(*net.TCPListener)
	s.addr = tcp.AdvertiseAddr(ln.Addr())
	s.wg.Add(1)
	go s.acceptCM()
	return nil
}

// openCM lets the listener answer requests: Init has set the job secret and opened the
// devices.
func (s *cmServer) openCM() { close(s.opened) }

// closeCM closes the listener and waits for every set-up under way, which l.stop (ended
// first) cuts short.
func (s *cmServer) closeCM() {
	if s.ln != nil {
		s.ln.Close()
	}
	s.wg.Wait()
}

// acceptCM serves the listener until it is closed or l.stop ends. An Accept error (out
// of descriptors, say) never ends it: it backs off and tries again. A connection
// accepted while cmMaxPending are pending gets a busy frame instead of a challenge, is
// closed at once and counted as rejected; an origin of the job tries again (handshake).
func (s *cmServer) acceptCM() {
	defer s.wg.Done()
	cfg := accept.Config{
		MaxPending: cmMaxPending(s.size),
		Shed: func(c net.Conn) {
			s.shed.Add(1)
			s.rejected.Add(1)
			// A rank of the job comes back later (handshake): tell it so.
			c.SetWriteDeadline(time.Now().Add(cmBusyWrite))
			c.Write(encodeCMBusy())
		},
		Retry: func(error, time.Duration) { s.retried.Add(1) },
	}
	accept.Serve(s.stop, s.ln, cfg, func(c net.Conn, release func()) {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer release()
			if !s.serveCM(c, release) {
				s.rejected.Add(1)
			}
		}()
	})
}

// serveCM answers one connection request on c, and reports whether it was well formed
// and authentic. It calls release once the request has proven the job secret; it closes
// c, unless a rank listener took it.
func (s *cmServer) serveCM(c net.Conn, release func()) bool {
	kept := false
	defer func() {
		if !kept {
			c.Close()
		}
	}()
	// A peer that finished Init may ask before this rank has: wait for Init, which the
	// origin's own bound (cmConnectTime) covers, then bound the exchange.
	select {
	case <-s.opened:
	case <-s.stop.Done():
		return false
	}
	c.SetDeadline(time.Now().Add(cmHandshakeTime))
	hb := make([]byte, cmHelloSize)
	if _, err := io.ReadFull(c, hb); err != nil {
		return false
	}
	hello, err := decodeCMHello(hb)
	if err != nil || hello.to != s.rank || hello.from >= maxJobRanks || hello.from == s.rank {
		return false
	}
	var nonce [cmNonceSize]byte
	rand.Read(nonce[:])
	chall := encodeCMChallenge(&nonce)
	if _, err := c.Write(chall); err != nil {
		return false
	}
	transcript := append(hb, chall...)
	raw := make([]byte, cmHeadSize)
	if _, err := io.ReadFull(c, raw); err != nil {
		return false
	}
	head, err := decodeCMHead(raw, cmReqMagic)
	if err != nil {
		return false
	}
	body := make([]byte, head.n)
	if _, err := io.ReadFull(c, body); err != nil {
		return false
	}
	if !checkCMMAC(&head, raw, body, s.secret, cmReqLabel, transcript) {
		return false
	}
	release() // a rank of the job: no longer a stranger
	ctx, cancel := context.WithTimeout(s.stop, cmConnectTime)
	defer cancel()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl) // a rank of the job: the set-up's own bound applies
	}
	kept, ok := s.answer(ctx, c, hello.kind, hello.from, body, transcript)
	return ok
}

// answerCM answers rank from's authentic request of kind (body, after the transcript of
// the handshake) on c: the listener's answer (cmServer.answer). It reports whether a rank
// listener took c, and whether the request was well formed.
func (l *links) answerCM(ctx context.Context, c net.Conn, kind uint8, from int, body, transcript []byte) (kept, ok bool) {
	if kind == cmKindSocket {
		return l.serveSocket(ctx, c, from, string(body), transcript), true
	}
	cardBytes, ep, err := decodeCMRequestBody(body)
	if err != nil {
		return false, false
	}
	pc, err := decodeCard(cardBytes)
	if err != nil {
		l.cm.reply(c, cmRefuse, []byte(fmt.Sprintf("rank %d cannot read rank %d's card: %v", l.rank, from, err)), transcript)
		return false, true
	}
	status, out, finish := l.acceptPeer(ctx, from, pc, ep)
	if err := l.cm.reply(c, status, out, transcript); err != nil {
		if status == cmAccept {
			// The origin gives its side up without the reply: so does this one, ready
			// or not.
			l.mu.Lock()
			if p := l.peers[from]; p != nil {
				l.hooks.failed(p, fmt.Errorf("%w: reply to rank %d's connection request: %w", ErrTransport, from, err))
			}
			l.mu.Unlock()
		}
		return false, true
	}
	if finish != nil {
		finish(ctx)
	}
	return false, true
}

// reply writes a reply of status with body.
func (s *cmServer) reply(c net.Conn, status uint8, body, transcript []byte) error {
	_, err := c.Write(encodeCMMessage(cmReplyMagic, status, body, s.secret, cmReplyLabel, transcript))
	return err
}

// stateLocked is what this rank knows of its connection to rank r (cmDecide).
func (l *links) stateLocked(r int) cmState {
	p := l.peers[r]
	switch {
	case p == nil:
		return cmNone
	case p.failed != nil:
		return cmFailed
	case p.ready:
		return cmReady
	case p.accepting:
		return cmAccepting
	case p.dialing:
		return cmDialing
	}
	return cmNone
}

// acceptPeer answers rank from's request (its card pc, its endpoint ep) as the target.
// On acceptance it makes (or takes, if this rank's own request made it) the queue pair,
// moves it to RTR, and returns this rank's endpoint; finish, when not nil, completes the
// pair after the reply is written.
func (l *links) acceptPeer(ctx context.Context, from int, pc card, ep []byte) (uint8, []byte, func(context.Context)) {
	l.mu.Lock()
	l.growLocked(from + 1) // a rank spawned since this rank last heard of the job's size
	st := l.stateLocked(from)
	switch cmDecide(l.rank, from, st) {
	case cmYield:
		l.mu.Unlock()
		return cmYield, nil, nil
	case cmRefuse:
		l.mu.Unlock()
		why := "it is connecting already"
		if st == cmFailed {
			why = "it has failed, for this rank"
		}
		return cmRefuse, []byte(fmt.Sprintf("rank %d refuses rank %d's connection request: %s", l.rank, from, why)), nil
	}
	if err, aborting := l.hooks.refusal(); err != nil {
		l.mu.Unlock()
		if aborting {
			// The abort reaches the origin through its process manager; failing the
			// peer here would race it with a lesser error.
			return cmAborting, []byte(err.Error()), nil
		}
		return cmRefuse, []byte(fmt.Sprintf("rank %d refuses rank %d's connection request: %v", l.rank, from, err)), nil
	}
	l.learnCardLocked(from, pc)
	p := l.peers[from]
	if p == nil {
		p = l.placeholderLocked(from)
	}
	p.accepting = true
	mine := p.myEP
	if p.qp == nil {
		var err error
		if mine, err = l.makeQPLocked(p, pc); err != nil {
			l.hooks.failed(p, err)
			l.mu.Unlock()
			return cmRefuse, []byte(err.Error()), nil
		}
	}
	l.mu.Unlock()
	fbKey, err := l.finishRTR(ctx, p, ep)
	if err != nil {
		l.connectFailed(from, err)
		return cmRefuse, []byte(fmt.Sprintf("rank %d: %v", l.rank, err)), nil
	}
	if p.dev.caps.Has(verbs.CapLocalRTS) {
		// The peer may write into its queue pair and fast box as soon as it has the
		// reply: both are ready before it goes. Without CapLocalRTS, ToRTS waits for
		// the peer's connection, which follows the reply.
		if err := l.finishRTS(ctx, p, fbKey); err != nil {
			l.connectFailed(from, err)
			return cmRefuse, []byte(fmt.Sprintf("rank %d: %v", l.rank, err)), nil
		}
		return cmAccept, mine, nil
	}
	return cmAccept, mine, func(ctx context.Context) {
		if err := l.finishRTS(ctx, p, fbKey); err != nil {
			l.connectFailed(from, err)
		}
	}
}

// finishRTR moves p's queue pair to RTR with the peer's endpoint value ep (encodeEP),
// and returns the key of the peer's fast box for this rank's messages.
func (l *links) finishRTR(ctx context.Context, p *peer, ep []byte) (uint64, error) {
	qpEP, fbKey, err := decodeEP(ep)
	if err == nil {
		err = p.qp.ToRTR(ctx, qpEP)
	}
	if err != nil {
		return 0, fmt.Errorf("connect to rank %d (%s, host %s): %w", p.rank, p.dev.name, p.host, err)
	}
	return fbKey, nil
}

// finishRTS moves p's queue pair to RTS, maps the peer's fast box (fbKey) and marks p
// ready.
func (l *links) finishRTS(ctx context.Context, p *peer, fbKey uint64) error {
	err := p.qp.ToRTS(ctx)
	if err == nil {
		err = mapFastboxOut(p, fbKey)
	}
	if err != nil {
		return fmt.Errorf("connect to rank %d (%s, host %s): %w", p.rank, p.dev.name, p.host, err)
	}
	l.mu.Lock()
	l.peerReadyLocked(p)
	l.mu.Unlock()
	return nil
}

// connectFailed fails rank r's peer, unless it became ready meanwhile.
func (l *links) connectFailed(r int, err error) {
	if !errors.Is(err, ErrTransport) {
		err = fmt.Errorf("%w: %w", ErrTransport, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if p := l.peers[r]; p != nil && !p.ready {
		l.hooks.failed(p, err)
	}
}

// peerLocked returns rank r's peer, making a placeholder and starting its connection if
// there is none.
func (l *links) peerLocked(r int) *peer {
	if p := l.peers[r]; p != nil {
		return p
	}
	p := l.placeholderLocked(r)
	p.dialing = true
	l.cm.wg.Add(1)
	go l.dialPeer(p)
	return p
}

// placeholderLocked makes and records rank r's peer before its connection exists.
func (l *links) placeholderLocked(r int) *peer {
	t := l.table()
	p := &peer{rank: r, host: t.hosts[r], peerSetup: peerSetup{readyCh: make(chan struct{})}}
	if t.cardOK[r] {
		p.card = t.cards[r]
	}
	l.peers[r] = p
	return p
}

// awaitPeerLocked returns rank r's peer once it is connected, connecting it first if
// needed; it releases mu while it waits. It fails with the peer's failure, or when ctx
// ends.
func (l *links) awaitPeerLocked(ctx context.Context, r int) (*peer, error) {
	p := l.peerLocked(r)
	for !p.ready && p.failed == nil {
		ch := p.readyCh
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
		l.mu.Lock()
		if err := ctx.Err(); err != nil && !p.ready && p.failed == nil {
			return nil, fmt.Errorf("connect to rank %d: %w", r, err)
		}
	}
	if p.failed != nil {
		return nil, p.failed
	}
	return p, nil
}

// dialPeer connects placeholder p as the origin, and fails it if that fails.
func (l *links) dialPeer(p *peer) {
	defer l.cm.wg.Done()
	ctx, cancel := context.WithTimeout(l.stop, cmConnectTime)
	defer cancel()
	if err := l.dial(ctx, p); err != nil {
		l.connectFailed(p.rank, err)
	}
}

func (l *links) dial(ctx context.Context, p *peer) error {
	c, err := l.cardOf(ctx, p.rank)
	if err != nil {
		return fmt.Errorf("%w: connect to rank %d: read its card: %w", ErrTransport, p.rank, err)
	}
	l.mu.Lock()
	if p.ready || p.failed != nil || p.accepting {
		l.mu.Unlock()
		return nil // the listener's side connects it, or has
	}
	mine := p.myEP
	if p.qp == nil {
		if mine, err = l.makeQPLocked(p, c); err != nil {
			l.mu.Unlock()
			return err
		}
	}
	me := l.table().cards[l.rank].encode()
	l.mu.Unlock()
	status, body, err := l.cm.request(ctx, cmKindQP, p.rank, c.cm, encodeCMRequestBody(me, mine))
	if err != nil {
		return fmt.Errorf("%w: connect to rank %d (host %s, listener %s): %w", ErrTransport, p.rank, c.host, c.cm, err)
	}
	switch status {
	case cmAccept:
		fbKey, err := l.finishRTR(ctx, p, body)
		if err != nil {
			return err
		}
		return l.finishRTS(ctx, p, fbKey)
	case cmYield:
		select {
		case <-p.readyCh:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("%w: connect to rank %d: its own request to this rank never completed: %w", ErrTransport, p.rank, ctx.Err())
		}
	case cmAborting:
		<-ctx.Done() // the abort fails what waits for the peer, or ends the process
		return fmt.Errorf("%w: connect to rank %d: it is aborting the job (%s)", ErrTransport, p.rank, body)
	}
	return fmt.Errorf("%w: connect to rank %d: %s", ErrTransport, p.rank, body)
}

// request runs the origin's side of a handshake of kind with rank to's listener at
// addr, and returns the reply.
func (s *cmServer) request(ctx context.Context, kind uint8, to int, addr string, body []byte) (uint8, []byte, error) {
	c, status, out, err := s.handshake(ctx, kind, to, addr, body)
	if c != nil {
		c.Close()
	}
	return status, out, err
}

// handshake runs the origin's side of a handshake and returns the reply with the
// connection, still open (nil on error). A listener that shed the connection (a busy
// frame, or a reset before any byte: it closed with the hello unread) is asked again
// after a back-off, until ctx ends: strangers flooding a rank's listener delay its
// peers, they do not fail them. So is a dial this process had no descriptor for
// (EMFILE, ENFILE): descriptors freed elsewhere in the process let it through.
func (s *cmServer) handshake(ctx context.Context, kind uint8, to int, addr string, body []byte) (net.Conn, uint8, []byte, error) {
	backoff := accept.MinBackoff
	for {
		c, status, out, err := s.handshakeOnce(ctx, kind, to, addr, body)
		if !errors.Is(err, errCMBusy) && !noDescriptor(err) {
			return c, status, out, err
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			if noDescriptor(err) {
				return nil, 0, nil, fmt.Errorf("this process stayed out of file descriptors (raise its limit, ulimit -n): %w: %w", ctx.Err(), err)
			}
			return nil, 0, nil, fmt.Errorf("rank %d's listener stayed busy: %w", to, ctx.Err())
		}
		backoff = min(2*backoff, accept.MaxBackoff)
	}
}

// errCMBusy marks a handshake the listener shed (handshake tries again).
var errCMBusy = errors.New("the listener is busy with other handshakes")

// noDescriptor reports whether err is this process's or the system's descriptor table
// being full, which descriptors freed elsewhere cure.
func noDescriptor(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// handshakeOnce is one attempt of handshake.
func (s *cmServer) handshakeOnce(ctx context.Context, kind uint8, to int, addr string, body []byte) (_ net.Conn, status uint8, out []byte, err error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if noDescriptor(err) {
		return nil, 0, nil, err
	}
	if err != nil {
		return nil, 0, nil, fmt.Errorf("%w (has rank %d exited?)", err, to)
	}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl) // the target answers once its own Init is done
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	h := cmHello{kind: kind, from: s.rank, to: to}
	rand.Read(h.nonce[:])
	hb := h.encode()
	if _, err := c.Write(hb); err != nil {
		return nil, 0, nil, err
	}
	cb := make([]byte, cmChallSize)
	if n, err := io.ReadFull(c, cb); err != nil {
		if n == 0 && errors.Is(err, syscall.ECONNRESET) {
			return nil, 0, nil, fmt.Errorf("%w: read the challenge: %w", errCMBusy, err)
		}
		return nil, 0, nil, fmt.Errorf("read the challenge: %w (a listener of another job, or a wrong rank?)", err)
	}
	if isCMBusy(cb) {
		return nil, 0, nil, errCMBusy
	}
	if _, err := decodeCMChallenge(cb); err != nil {
		return nil, 0, nil, err
	}
	transcript := append(hb, cb...)
	if _, err := c.Write(encodeCMMessage(cmReqMagic, 0, body, s.secret, cmReqLabel, transcript)); err != nil {
		return nil, 0, nil, err
	}
	raw := make([]byte, cmHeadSize)
	if _, err := io.ReadFull(c, raw); err != nil {
		return nil, 0, nil, fmt.Errorf("read the reply: %w (a listener of another job, whose secret differs?)", err)
	}
	head, err := decodeCMHead(raw, cmReplyMagic)
	if err != nil {
		return nil, 0, nil, err
	}
	out = make([]byte, head.n)
	if _, err := io.ReadFull(c, out); err != nil {
		return nil, 0, nil, fmt.Errorf("read the reply: %w", err)
	}
	if !checkCMMAC(&head, raw, out, s.secret, cmReplyLabel, transcript) {
		return nil, 0, nil, fmt.Errorf("%w: the reply's proof of the job secret is wrong (a listener of another job?)", errCMFrame)
	}
	if !stop() {
		return nil, 0, nil, ctx.Err()
	}
	c.SetDeadline(time.Time{})
	return c, head.status, out, nil
}

// makeQPLocked gives placeholder p (rank p.rank, card c) its queue pair, receive slots
// and fast box on the device of the pair's transport, and returns this rank's endpoint
// value for it (encodeEP). p sends nothing until peerReadyLocked.
func (l *links) makeQPLocked(p *peer, c card) ([]byte, error) {
	prov, err := l.between(l.rank, p.rank)
	if err != nil {
		return nil, err
	}
	t := l.table()
	if hostOnly(providerCaps(prov)) && !sameHost(&t.cards[l.rank], &c) {
		return nil, fmt.Errorf("%w: rank %d should share memory with this rank, but its card says it runs on host %q (%s), this rank on %q (%s)",
			ErrTransport, p.rank, c.host, c.id.short(), t.hosts[l.rank], t.cards[l.rank].id.short())
	}
	var d *device
	for _, x := range l.devs {
		if x.name == prov && !x.closed {
			d = x
		}
	}
	if d == nil {
		// A peer spawned after Init, on a host that needs a transport this rank did not open.
		if d, err = openLateLocked(l, prov); err != nil { // grow.go
			return nil, fmt.Errorf("rank %d needs the %s transport, which this rank could not open: %w", p.rank, prov, err)
		}
	}
	mine, theirs := d.eagerLimits(l.cfg, &c)
	p.card, p.host = c, c.host
	if err := initPeer(p, d, mine, theirs, l.slots); err != nil {
		return nil, err
	}
	p.sqFree = 0 // until ready
	p.cma = d.caps.Has(verbs.CapCMA) && cmaPossible(&c)
	fbKey, err := newFastboxIn(d, p)
	if err != nil {
		return nil, err
	}
	p.myEP = encodeEP(p.qp.Endpoint(), fbKey)
	return p.myEP, nil
}

// peerReadyLocked marks p connected and tells the engine (hooks.ready), which gives its
// fast box to the poller and posts what waited in its out queue.
func (l *links) peerReadyLocked(p *peer) {
	if p.ready || p.failed != nil {
		return
	}
	p.ready, p.dialing, p.accepting = true, false, false
	p.sqFree = p.maxSend
	p.wakeLocked()
	l.hooks.ready(p)
}

// cardOf returns rank r's card, reading it from the process manager the first time.
func (l *links) cardOf(ctx context.Context, r int) (card, error) {
	l.mu.Lock()
	if t := l.table(); t.cardOK[r] {
		c := t.cards[r]
		l.mu.Unlock()
		return c, nil
	}
	l.mu.Unlock()
	c, err := l.fetchCard(ctx, r)
	if err != nil {
		return c, err
	}
	l.mu.Lock()
	l.learnCardLocked(r, c)
	l.mu.Unlock()
	return c, nil
}

// fetchCard reads rank r's card from the process manager: under a foreign one, from
// the value the rank put under keyWire1.
func (l *links) fetchCard(ctx context.Context, r int) (card, error) {
	if _, ok := l.pm.(foreignPM); ok {
		b, err := l.pm.Get(ctx, r, keyWire1)
		if err != nil {
			return card{}, fmt.Errorf("PMI get %s of rank %d: %w", keyWire1, r, err)
		}
		w, err := decodeWire(b)
		if err != nil {
			return card{}, fmt.Errorf("%w: rank %d's value under PMI key %s: %w", pmi.ErrProtocol, r, keyWire1, err)
		}
		c, err := decodeCard(w.card)
		if err != nil {
			return card{}, fmt.Errorf("%w: card of rank %d (PMI key %s): %w", pmi.ErrProtocol, r, keyWire1, err)
		}
		return c, nil
	}
	b, err := l.pm.Get(ctx, r, keyCard)
	if err == nil {
		var c card
		if c, err = decodeCard(b); err == nil {
			return c, nil
		}
	}
	return card{}, fmt.Errorf("card of rank %d: %w", r, err)
}

// learnCardLocked records rank r's card, unless it is known: a known card is read
// without mu (between), so it is never written again. Nor is a known host name (a node
// map's, set at Init).
func (l *links) learnCardLocked(r int, c card) {
	t := l.table()
	if t.cardOK[r] {
		return
	}
	t.cards[r], t.cardOK[r] = c, true
	if t.hosts[r] == "" {
		t.hosts[r] = c.host
	}
}
