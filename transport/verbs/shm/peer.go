package shm

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/transport/verbs/arena"
)

// Peers. A device maps each remote device's arena once, on the first connection to it,
// and keeps the mapping while QPs use it (and afterwards, while the peer lives: lazy
// unmapping). The cache is keyed by (pid, fd, path, nonce): the nonce is random per
// device, so a reused pid or fd never aliases an old mapping.
//
// Liveness: for the first pidfdBudget peers in other processes the device holds a pidfd.
// One monitor goroutine per device polls them; when one becomes readable the peer has
// exited, and every QP connected to it fails (its first waiting request with RetryExcErr,
// the rest with WRFlushErr) and the device's sleepers are woken. Peers beyond the budget
// are checked every monitorFallbackPoll instead (exited: a pidfd opened and closed for
// the check, or kill(pid, 0) where pidfd_open is unavailable), so that a rank's
// descriptors stay bounded however many peers it maps. The pidfd opened at attach and
// closed once the arena is mapped still proves that the pid named the segment's owner.
// The monitor starts with the first remote peer and stops in Device.Close (an eventfd
// wakes its poll).

const monitorFallbackPoll = 100 * time.Millisecond

// pidfdBudget bounds the pidfds a device holds (one per watched peer): with teams in
// the collectives and lazy connections, most ranks of a large job connect to fewer
// peers than this, and the rest are polled. A variable for tests, which set it to 0.
var pidfdBudget = 16

type peerKey struct {
	pid   int32
	fd    int32
	path  string
	nonce uint64
}

// peer is a mapped remote device.
type peer struct {
	key    peerKey
	remote *arena.Remote
	mem    []byte
	tab    *arena.Table
	bell   doorbell
	pidfd  int            // -1 if not monitored through a pidfd
	local  bool           // in this process: never dies on its own
	live   *atomic.Uint32 // its liveness word (live.go) in our mapping, else own
	own    atomic.Uint32  // the liveness word of a peer whose endpoint named none
	dead   atomic.Bool    // its death was handled (died)

	refs int              // connected QPs (peerCache.mu)
	qps  map[*qp]struct{} // connected QPs (peerCache.mu)
}

type peerCache struct {
	dev *device

	mu     sync.Mutex
	closed bool
	m      map[peerKey]*peer
	mon    *monitor
	pidfds int // peers holding a pidfd
}

type monitor struct {
	wakefd int
	stop   atomic.Bool
	done   chan struct{}
}

func (c *peerCache) init(d *device) {
	c.dev = d
	c.m = make(map[peerKey]*peer)
}

// acquire returns the mapped peer of ep and counts q as connected to it.
func (c *peerCache) acquire(ep *endpoint, q *qp) (*peer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errors.New("the device was closed")
	}
	key := peerKey{pid: ep.desc.PID, fd: ep.desc.FD, path: ep.desc.Path, nonce: ep.nonce}
	p := c.m[key]
	if p == nil {
		var err error
		if p, err = c.attach(key, ep); err != nil {
			return nil, err
		}
		c.m[key] = p
		if !p.local {
			c.startMonitorLocked()
		}
	}
	if p.gone() {
		return nil, fmt.Errorf("peer process %d has exited: %w", key.pid, unix.ESRCH)
	}
	p.refs++
	p.qps[q] = struct{}{}
	return p, nil
}

// attach opens the peer's pidfd (first, so that a successful mapping proves the pidfd
// names the process that owns the segment) and maps its arena.
func (c *peerCache) attach(key peerKey, ep *endpoint) (*peer, error) {
	p := &peer{key: key, pidfd: -1, local: key.pid == c.dev.pid, qps: make(map[*qp]struct{})}
	if !p.local {
		fd, err := unix.PidfdOpen(int(key.pid), 0)
		switch {
		case err == nil:
			p.pidfd = fd
		case err == unix.ESRCH:
			return nil, fmt.Errorf("peer process %d does not exist: %w", key.pid, unix.ESRCH)
		}
		// Other errors (ENOSYS on old kernels): fall back to kill(pid, 0) polling.
	}
	r, err := arena.Attach(ep.desc)
	if err != nil {
		if p.pidfd >= 0 {
			unix.Close(p.pidfd)
		}
		return nil, fmt.Errorf("map the arena of process %d: %w", key.pid, err)
	}
	if p.pidfd >= 0 {
		if c.pidfds < pidfdBudget {
			c.pidfds++
		} else {
			unix.Close(p.pidfd) // over budget: polled
			p.pidfd = -1
		}
	}
	p.remote, p.mem, p.tab = r, r.Bytes(), r.Table()
	if p.live = peerWord(p.mem, ep.liveOff); p.live == nil {
		p.live = &p.own
	}
	p.bell.seq, p.bell.waiters = r.Doorbell()
	return p, nil
}

// gone reports whether the peer process is known to have died: the kernel marked its
// liveness word, or the monitor did (died). One atomic load; no system call.
func (p *peer) gone() bool { return p.live.Load()&ownerDied != 0 }

// ring returns the view of the inbound ring ep names, after checking that it is there
// and belongs to the QP ep describes.
func (p *peer) ring(ep *endpoint) (ring, error) {
	size := uint64(len(p.mem))
	data := uint64(ep.slots) * slotSize
	if ep.hdrOff+ringHdrSize > size || ep.dataOff+data > size {
		return ring{}, fmt.Errorf("ring of QP %d lies outside the peer's %d-byte arena", ep.qpn, size)
	}
	r := newRing(p.mem[ep.hdrOff:ep.hdrOff+ringHdrSize], p.mem[ep.dataOff:ep.dataOff+data])
	if r.magic.Load() != ringMagic {
		return ring{}, fmt.Errorf("no ring of QP %d at the endpoint's offsets (stale endpoint bytes?)", ep.qpn)
	}
	if nonce, qpn := r.owner(); nonce != ep.nonce || qpn != ep.qpn {
		return ring{}, fmt.Errorf("the ring at the endpoint's offsets belongs to another QP (stale endpoint bytes?)")
	}
	return r, nil
}

// release drops q's reference to p; a dead peer nobody uses is unmapped.
func (c *peerCache) release(p *peer, q *qp) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(p.qps, q)
	p.refs--
	if p.refs == 0 && p.dead.Load() && !c.closed {
		delete(c.m, p.key)
		if p.pidfd >= 0 {
			c.pidfds--
		}
		p.unmap()
	}
}

func (p *peer) unmap() {
	p.remote.Close()
	if p.pidfd >= 0 {
		unix.Close(p.pidfd)
		p.pidfd = -1
	}
}

// died fails every QP connected to p and wakes the device's sleepers.
func (c *peerCache) died(p *peer) {
	if p.dead.Swap(true) {
		return
	}
	p.live.Or(ownerDied) // the process is gone: the word in its memory tells every peer
	c.mu.Lock()
	qps := keys(p.qps)
	c.mu.Unlock()
	for _, q := range qps {
		q.peerLost()
	}
	c.dev.bell.seq.Add(1)
	c.dev.bell.ring()
}

// close stops the monitor and unmaps every peer. QPs are closed by then.
func (c *peerCache) close() {
	c.mu.Lock()
	c.closed = true
	m := c.mon
	peers := make([]*peer, 0, len(c.m))
	for _, p := range c.m {
		peers = append(peers, p)
	}
	c.m = nil
	c.mu.Unlock()
	if m != nil {
		m.stop.Store(true)
		m.kick()
		<-m.done
		unix.Close(m.wakefd)
	}
	for _, p := range peers {
		p.unmap()
	}
}

func (c *peerCache) startMonitorLocked() {
	if c.mon != nil {
		c.mon.kick() // a new pidfd to watch
		return
	}
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return // no monitor; QP waits still end (bounded sleeps) but deaths go unnoticed
	}
	c.mon = &monitor{wakefd: fd, done: make(chan struct{})}
	go c.watch(c.mon)
}

// exited reports whether process pid has exited (a zombie not yet reaped included):
// through a pidfd opened for the check where pidfd_open works, else kill(pid, 0).
func exited(pid int32) bool {
	fd, err := unix.PidfdOpen(int(pid), 0)
	if err != nil {
		return err == unix.ESRCH || unix.Kill(int(pid), 0) == unix.ESRCH
	}
	defer unix.Close(fd)
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(pfd, 0)
	return err == nil && n > 0 && pfd[0].Revents != 0
}

// noticeDeath has the monitor handle the death of p, which a request found in its
// liveness word: the other QPs connected to p fail and sleepers wake without waiting for
// the pidfd. A system call, on the path of a request to a dead peer only.
func (c *peerCache) noticeDeath(p *peer) {
	if p.dead.Load() {
		return
	}
	c.mu.Lock()
	m := c.mon
	c.mu.Unlock()
	if m != nil {
		m.kick()
	}
}

func (m *monitor) kick() {
	var one = [8]byte{1}
	unix.Write(m.wakefd, one[:])
}

// watch is the monitor goroutine. It returns when m.stop is set (by close, with a kick).
func (c *peerCache) watch(m *monitor) {
	defer close(m.done)
	var fds []unix.PollFd
	var watched, polled []*peer
	for !m.stop.Load() {
		fds = append(fds[:0], unix.PollFd{Fd: int32(m.wakefd), Events: unix.POLLIN})
		watched, polled = watched[:0], polled[:0]
		c.mu.Lock()
		for _, p := range c.m {
			switch {
			case p.local || p.dead.Load():
			case p.pidfd >= 0:
				fds = append(fds, unix.PollFd{Fd: int32(p.pidfd), Events: unix.POLLIN})
				watched = append(watched, p)
			default:
				polled = append(polled, p)
			}
		}
		c.mu.Unlock()
		timeout := -1
		if len(polled) > 0 {
			timeout = int(monitorFallbackPoll / time.Millisecond)
		}
		if _, err := unix.Poll(fds, timeout); err != nil && err != unix.EINTR {
			time.Sleep(monitorFallbackPoll)
			continue
		}
		if fds[0].Revents != 0 {
			var buf [8]byte
			unix.Read(m.wakefd, buf[:])
		}
		for i, p := range watched {
			if fds[i+1].Revents != 0 || p.gone() {
				c.died(p)
			}
		}
		for _, p := range polled {
			if p.gone() || exited(p.key.pid) {
				c.died(p)
			}
		}
	}
}
