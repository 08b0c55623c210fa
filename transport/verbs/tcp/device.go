package tcp

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorma-hpc/gorma/transport/verbs"
	"github.com/gorma-hpc/gorma/transport/verbs/arena"
)

// device is an opened tcp provider instance: one arena, one listener, the QPs, CQs and
// PDs created from it.
//
// Goroutines: the accept loop (stops when Close closes the listener) and one handshake
// goroutine per inbound connection (stops when its handshake ends; the handshake has a
// deadline, and Close closes its connection). QPs own their connections' goroutines.
type device struct {
	cfg      verbs.Config
	secret   []byte        // written once, before secretOK closes; read after it closed
	secretMu sync.Mutex    // serialises SetSecret
	secretOK chan struct{} // closed once the secret is set
	closing  chan struct{} // closed by Close
	id       uint64        // random, identifies this device in endpoints and handshakes
	arena    *arena.Arena
	tab      *arena.Table
	seg      []byte // the arena's whole mapping, resolving KindArena targets
	ln       *net.TCPListener
	addr     string // advertised listen address
	cc       string // TCP_CONGESTION of every connection ("" leaves the kernel's default)
	rejected atomic.Int64
	watch    *watch // the idle-role watch (watch.go), or nil

	mrMu sync.RWMutex
	mrs  map[uint64]*mr // live MRs by key: LKey checks and KindUser targets

	mu      sync.Mutex
	closed  bool
	nextQPN uint32
	qps     map[uint32]*qp
	pds     map[*pd]struct{}
	cqs     map[*cq]struct{}
	inbound map[*net.TCPConn]struct{} // connections in their handshake

	wg sync.WaitGroup // accept loop and handshake goroutines
}

func openDevice(cfg verbs.Config) (d *device, err error) {
	opts, err := optionsOf(cfg)
	if err != nil {
		return nil, err
	}
	watchTaken := false // the device owns opts.IdleWatch's files: newWatch takes them
	defer func() {
		if iw := opts.IdleWatch; iw != nil && !watchTaken {
			for _, f := range []*os.File{iw.Page, iw.Bell} {
				if f != nil {
					f.Close()
				}
			}
		}
	}()
	if opts.DeferSecret && len(opts.Secret) > 0 {
		return nil, newErr("open", 0, verbs.ErrInvalid,
			"tcp.Options has both a Secret and DeferSecret; pass the secret either at Open or later through SetSecret")
	}
	if !opts.DeferSecret && len(opts.Secret) < MinSecretLen {
		return nil, newErr("open", 0, verbs.ErrInvalid,
			"tcp.Options.Secret is %d bytes; the tcp provider authenticates every connection with it and needs at least %d random bytes shared by the job (the launcher distributes one)",
			len(opts.Secret), MinSecretLen)
	}
	if cfg.MaxMRs < 0 || cfg.ArenaSize < 0 {
		return nil, newErr("open", 0, verbs.ErrInvalid, "negative MaxMRs (%d) or ArenaSize (%d)", cfg.MaxMRs, cfg.ArenaSize)
	}
	cc, err := congestionOf(opts.Congestion)
	if err != nil {
		return nil, err
	}
	var idb [8]byte
	var id uint64
	for id == 0 {
		if _, err := rand.Read(idb[:]); err != nil {
			return nil, wrapErr("open", 0, err, "random device id")
		}
		id = binary.LittleEndian.Uint64(idb[:])
	}
	name := cfg.Name
	if name == "" {
		name = "tcp"
	}
	a, err := arena.New(arena.Config{Name: name, Size: cfg.ArenaSize, HighWater: cfg.HighWater, MaxMRs: cfg.MaxMRs})
	if err != nil {
		return nil, wrapErr("open", 0, err, "create the device arena; lower Config.ArenaSize or MaxMRs")
	}
	var w *watch
	if opts.IdleWatch != nil {
		watchTaken = true
		if w, err = newWatch(opts.IdleWatch, name); err != nil {
			a.Close()
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		if w != nil {
			w.close()
		}
		a.Close()
		return nil, wrapErr("open", 0, fmt.Errorf("%w: %w", verbs.ErrInvalid, err),
			"listen on tcp.Options.Addr "+opts.Addr+"; use host:0 for a free port")
	}
	d = &device{
		cfg: cfg, id: id, secretOK: make(chan struct{}), closing: make(chan struct{}),
		arena: a, tab: a.Table(), seg: a.Segment().Bytes(),
		ln: ln.(*net.TCPListener), addr: AdvertiseAddr(ln.Addr()), cc: cc,
		mrs: make(map[uint64]*mr), qps: make(map[uint32]*qp), pds: make(map[*pd]struct{}),
		cqs: make(map[*cq]struct{}), inbound: make(map[*net.TCPConn]struct{}), watch: w,
	}
	if !opts.DeferSecret {
		d.secret = append([]byte(nil), opts.Secret...)
		close(d.secretOK)
	}
	d.wg.Add(1)
	go d.acceptLoop()
	return d, nil
}

func (d *device) Provider() string        { return providerName }
func (d *device) Caps() verbs.Caps        { return providerCaps }
func (d *device) Stats() verbs.ArenaStats { return d.arena.Stats() }

func (d *device) errClosed(op string) error {
	return newErr(op, 0, verbs.ErrClosed, "the device is closed")
}

// AllocPD allocates a protection domain.
func (d *device) AllocPD() (verbs.PD, error) {
	p := &pd{d: d, mrs: make(map[*mr]struct{}), qps: make(map[*qp]struct{})}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, d.errClosed("alloc pd")
	}
	d.pds[p] = struct{}{}
	return p, nil
}

// CreateCQ creates a completion queue of depth entries.
func (d *device) CreateCQ(depth int) (verbs.CQ, error) {
	if depth <= 0 || depth > maxCQDepth {
		return nil, newErr("create cq", 0, verbs.ErrInvalid, "depth %d outside 1..%d", depth, maxCQDepth)
	}
	c := newCQ(d, depth)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, d.errClosed("create cq")
	}
	d.cqs[c] = struct{}{}
	return c, nil
}

// Close closes the listener and every inbound handshake, closes every QP (flushing its
// work with WRFlushErr and stopping its goroutines), waits for the device's goroutines,
// closes the CQs and releases the arena.
func (d *device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	close(d.closing)
	qps := make([]*qp, 0, len(d.qps))
	for _, q := range d.qps {
		qps = append(qps, q)
	}
	for c := range d.inbound {
		c.Close()
	}
	d.mu.Unlock()

	d.ln.Close()
	for _, q := range qps {
		q.Close()
	}
	d.wg.Wait()
	if d.watch != nil {
		d.watch.close() // every reader has exited and released its slot
	}

	d.mu.Lock()
	cqs := make([]*cq, 0, len(d.cqs))
	for c := range d.cqs {
		cqs = append(cqs, c)
	}
	for p := range d.pds {
		p.markClosed()
	}
	d.mu.Unlock()
	for _, c := range cqs {
		c.Close()
	}
	return d.arena.Close()
}

func (d *device) isClosed() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.closed
}

func (d *device) forgetCQ(c *cq) {
	d.mu.Lock()
	delete(d.cqs, c)
	d.mu.Unlock()
}

func (d *device) forgetQP(q *qp) {
	d.mu.Lock()
	if d.qps[q.num] == q {
		delete(d.qps, q.num)
	}
	d.mu.Unlock()
}

func (d *device) forgetPD(p *pd) {
	d.mu.Lock()
	delete(d.pds, p)
	d.mu.Unlock()
}

// addQP numbers q and makes it reachable by inbound connections.
func (d *device) addQP(q *qp) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return d.errClosed("create qp")
	}
	for {
		d.nextQPN++
		if d.nextQPN != 0 && d.qps[d.nextQPN] == nil {
			break
		}
	}
	q.num = d.nextQPN
	d.qps[q.num] = q
	return nil
}

func (d *device) lookupMR(key uint64) *mr {
	d.mrMu.RLock()
	m := d.mrs[key]
	d.mrMu.RUnlock()
	return m
}

// acceptLoop accepts inbound connections until the listener is closed.
func (d *device) acceptLoop() {
	defer d.wg.Done()
	for {
		c, err := d.ln.AcceptTCP()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || d.isClosed() {
				return
			}
			time.Sleep(10 * time.Millisecond) // out of descriptors, say: back off, retry
			continue
		}
		d.mu.Lock()
		if d.closed || len(d.inbound) >= maxInbound {
			d.mu.Unlock()
			c.Close()
			d.rejected.Add(1)
			continue
		}
		d.inbound[c] = struct{}{}
		d.wg.Add(1)
		d.mu.Unlock()
		go d.serveInbound(c)
	}
}

// serveInbound runs the listener's side of the handshake on c and hands c to its QP.
// Until the handshake succeeds nothing is read from c but handshake messages; on any
// failure c is closed and counted in rejected.
func (d *device) serveInbound(c *net.TCPConn) {
	defer d.wg.Done()
	kept := false
	defer func() {
		d.mu.Lock()
		delete(d.inbound, c)
		d.mu.Unlock()
		if !kept {
			c.Close()
			d.rejected.Add(1)
		}
	}()
	deadline := time.Now().Add(handshakeTimeout)
	if tuneConn(c, d.cc) != nil || c.SetDeadline(deadline) != nil || !d.awaitSecret(deadline) {
		return
	}
	var q *qp
	_, err := serverHandshake(c, d.secret, d.id, func(ch *clientHello) (hsStatus, uint32) {
		st, maxSend, admitted := d.admit(c, ch)
		q = admitted
		return st, maxSend
	})
	if err != nil {
		if q != nil {
			q.promote(c, false)
		}
		return
	}
	if c.SetDeadline(time.Time{}) != nil {
		q.promote(c, false)
		return
	}
	kept = q.promote(c, true)
}

// admit binds an authenticated inbound connection to the QP it asks for.
func (d *device) admit(c *net.TCPConn, ch *clientHello) (hsStatus, uint32, *qp) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return hsClosed, 0, nil
	}
	q := d.qps[ch.toQPN]
	d.mu.Unlock()
	if q == nil {
		return hsNoQP, 0, nil
	}
	st, maxSend := q.admit(c, ch)
	if st != hsOK {
		return st, 0, nil
	}
	return hsOK, maxSend, q
}

// aLongTimeAgo is a deadline in the past, to abort blocked I/O.
var aLongTimeAgo = time.Unix(1, 0)

// dial connects q to the peer ep and runs the dialer's side of the handshake, honouring
// ctx and handshakeTimeout.
func (d *device) dial(ctx context.Context, q *qp, ep endpoint) (*net.TCPConn, peerInfo, error) {
	var nd net.Dialer
	nc, err := nd.DialContext(ctx, "tcp", ep.addr)
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		} else {
			err = fmt.Errorf("%w: %w", verbs.ErrPeer, err)
		}
		return nil, peerInfo{}, wrapErr("to rtr", q.num, err,
			fmt.Sprintf("dial peer qp %d at %s; is the peer's device open and reachable?", ep.qpn, ep.addr))
	}
	c := nc.(*net.TCPConn)
	deadline := time.Now().Add(handshakeTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	if err := tuneConn(c, d.cc); err != nil || c.SetDeadline(deadline) != nil {
		c.Close()
		return nil, peerInfo{}, wrapErr("to rtr", q.num, fmt.Errorf("%w: %v", verbs.ErrPeer, err), "configure the socket")
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(aLongTimeAgo) })
	peer, err := clientHandshake(c, d.secret, peerInfo{devID: d.id, qpn: q.num, maxSend: uint32(q.maxSend)}, ep)
	if !stop() && err == nil {
		err = wrapErr("to rtr", q.num, ctx.Err(), "context ended during the handshake")
	}
	if err == nil {
		err = c.SetDeadline(time.Time{})
	}
	if err != nil {
		c.Close()
		if ctx.Err() != nil {
			err = wrapErr("to rtr", q.num, ctx.Err(), fmt.Sprintf("handshake with peer qp %d at %s", ep.qpn, ep.addr))
		}
		return nil, peerInfo{}, err
	}
	return c, peer, nil
}
