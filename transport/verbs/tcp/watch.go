package tcp

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/transport/verbs"
	"github.com/gorma-hpc/gorma/transport/verbs/idlewatch"
)

// Idle-role watch. A leader leaving CQ.Wait must give the reading role back to the
// connection's reader goroutine (lead.go), or passive-target requests wait until the
// application waits again. Writing the reader's role eventfd costs a system call on every
// wait plus the reader's wake-up, a sizeable part of a loopback round trip. A timer in the
// rank process to hand the role back later costs more: any Go timer that fires every
// millisecond changes how the process's idle threads park and lengthens every round trip
// (`bin/verbsperf --provider tcp --test read_lat` measures the round trip). A watcher in
// another process costs the rank nothing. The leader records in a shared page that the role
// is idle (one store), and the watcher, which ticks every idlewatch.Tick, rings the rank for
// a role it found idle in the same state on two ticks in a row. The rank then writes the role
// eventfds of the connections still idle. A role is thus handed back within two ticks of the
// wait that left it, and at once when a waiter comes first (it takes the idle role and
// leads).
//
// A reader parked in the network poller has the opposite problem. Go polls the network
// only from a thread that has nothing else to run, or from sysmon every 10 ms. When the
// thread blocked in the poller wakes the application's goroutine (its last completion)
// and that goroutine then computes, no thread polls until sysmon does. A request that
// arrives meanwhile waits up to 10 ms, as a target's first Lock+Get+Unlock after its last
// wait shows (`golaunch -n 2 --transport tcp bin/rmabench --test busy_get` measures it;
// golang/go pull request 51651 describes the same gap). So a reader also marks its slot
// while it waits for its socket, and the rank records each slot's socket descriptor. The
// watcher holds a pidfd of the rank (Watch.Signal) and takes a duplicate of the socket
// (pidfd_getfd). It rings when a parked reader's socket held unread data at two ticks in
// a row (data that came just before a scan is most often read at once).
//
// The watcher ticks every idlewatch.Tick only for ranks that need it: a rank whose device led
// a wait and left a role idle (a connection alone on its CQ), or that holds memory peers may
// write or update on their own (windows: regions with the RemoteWrite or RemoteAtomic right).
// For the others it scans every idlewatch.SlowTick and does not watch parked readers (Go's
// sysmon polls every 10 ms anyway). It marks the pages it ticks for (word 7), and a leader
// leaves its role idle to the watcher only on such a page. Before, it writes the reader's
// role eventfd itself, so a role is never left to a scan 50 ms away. A wake-up every
// millisecond is not free. On virtual CPUs each one, with the Go runtime's own reaction to
// it, costs the process a wake-up of its own. Four watchers ticking for a job over four
// network-namespace hosts sharing 2 cores slow its large Allreduce, as rings for data that
// was about to be read do (scripts/netns-allreduce.sh measures it).
//
// A ring is the bell (an eventfd in the rank's poller, enough while the rank polls) and
// idlewatch.Signal. The rank's signal goroutine (os/signal: its thread sleeps outside the
// poller and gives up its processor while it sleeps) writes the role eventfds. The
// processor it ran on then polls the network as soon as it has nothing else to run, which
// starts the readers, and a thread sleeps in the poller again, so later requests are
// served at once.
//
// The page layout and the watcher are package idlewatch's; this file is the rank's end.
// watch is a device's end of an idle-role watch.
type watch struct {
	page   []byte // the shared page, mapped
	bell   *os.File
	raw    syscall.RawConn
	ringFn func(uintptr) bool

	sig syscall.Signal // idlewatch.Signal, if the page names it; else 0

	sweepMu sync.Mutex // one sweep at a time; guards snap and dead
	snap    []*qconn   // the sweep's copy of conns
	dead    bool       // closed

	mu       sync.Mutex
	exposed  uint64   // the page's word 5
	unmapped bool     // the page is gone (close)
	conns    []*qconn // by slot; nil: free
	gens     []uint32 // by slot: allocations so far (the socket word's generation)
	used     int      // slots handed out so far (the page's word 1)
	free     []int    // freed slots below used
	done     chan struct{}
}

// newWatch maps the watch's page, checks it and starts the sweeper. It takes
// ownership of both files, also on error.
func newWatch(iw *idlewatch.Files, name string) (*watch, error) {
	bad := func(format string, args ...any) error {
		return newErr("open", 0, verbs.ErrInvalid, "tcp.Options.IdleWatch of %s: "+format+"; create watches with idlewatch.Watcher",
			append([]any{name}, args...)...)
	}
	if iw.Page == nil || iw.Bell == nil {
		for _, f := range []*os.File{iw.Page, iw.Bell} {
			if f != nil {
				f.Close()
			}
		}
		return nil, bad("needs both Page and Bell")
	}
	defer iw.Page.Close() // the mapping keeps the memfd alive
	defer iw.Bell.Close() // the watch keeps a non-blocking duplicate
	st, err := iw.Page.Stat()
	if err != nil || st.Size() != idlewatch.PageSize {
		return nil, bad("the page file is not a %d-byte memfd (stat: %v)", idlewatch.PageSize, err)
	}
	fd, err := idlewatch.Dup(iw.Bell)
	if err != nil {
		return nil, bad("the bell: %v", err)
	}
	if link, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd)); err != nil || link != "anon_inode:[eventfd]" {
		unix.Close(fd)
		return nil, bad("the bell is not an eventfd (%q, %v)", link, err)
	}
	page, err := idlewatch.MapPage(iw.Page)
	if err != nil {
		unix.Close(fd)
		return nil, bad("map the page: %v", err)
	}
	if idlewatch.Word(page, idlewatch.WordMagic).Load() != idlewatch.Magic || idlewatch.Word(page, idlewatch.WordUsed).Load() != 0 ||
		idlewatch.Word(page, idlewatch.WordClosed).Load() != 0 {
		unix.Munmap(page)
		unix.Close(fd)
		return nil, bad("the page is not a fresh watch page")
	}
	// O_NONBLOCK belongs to the eventfd's open file description, which the watcher's
	// process shares: nothing may make it blocking later (os.File.Fd and os/exec's
	// ExtraFiles do), or the sweeper's read would block its thread.
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Munmap(page)
		unix.Close(fd)
		return nil, bad("the bell: %v", err)
	}
	bell := os.NewFile(uintptr(fd), "tcp-idle-watch-bell") // non-blocking: served by the poller
	raw, err := bell.SyscallConn()
	if err != nil {
		bell.Close()
		unix.Munmap(page)
		return nil, bad("the bell: %v", err)
	}
	w := &watch{page: page, bell: bell, raw: raw, done: make(chan struct{})}
	w.ringFn = w.rung
	if sig := idlewatch.Word(page, idlewatch.WordSignal).Load(); sig != 0 {
		if sig < 34 || sig > 64 {
			unix.Munmap(page)
			bell.Close()
			return nil, bad("the page names signal %d, not a real-time signal", sig)
		}
		w.sig = syscall.Signal(sig)
		listenWatchSignal(w)
	}
	idlewatch.Word(page, idlewatch.WordAttached).Store(1) // attached: the watcher ticks fast
	go w.sweep()
	return w, nil
}

// watchSignals runs the sweep of every device whose watch names a signal, when the
// signal arrives. One goroutine per signal number serves the process for its lifetime
// (as os/signal's own does): a device registers at open and unregisters at close.
var watchSignals struct {
	mu      sync.Mutex
	started map[syscall.Signal]bool
	watches map[*watch]struct{}
}

// listenWatchSignal registers w for its signal.
func listenWatchSignal(w *watch) {
	ws := &watchSignals
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.watches == nil {
		ws.started, ws.watches = map[syscall.Signal]bool{}, map[*watch]struct{}{}
	}
	ws.watches[w] = struct{}{}
	if ws.started[w.sig] {
		return
	}
	ws.started[w.sig] = true
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, w.sig)
	go func() {
		var snap []*watch
		for range ch {
			ws.mu.Lock()
			for w := range ws.watches {
				snap = append(snap, w)
			}
			ws.mu.Unlock()
			for i, w := range snap {
				w.sweepOnce()
				snap[i] = nil
			}
			snap = snap[:0]
		}
	}()
}

// unlistenWatchSignal unregisters w.
func unlistenWatchSignal(w *watch) {
	watchSignals.mu.Lock()
	delete(watchSignals.watches, w)
	watchSignals.mu.Unlock()
}

// rung is the sweeper's RawConn callback: it drains the bell, without blocking.
func (w *watch) rung(fd uintptr) bool {
	var b [8]byte
	_, err := unix.Read(int(fd), b[:])
	return err != unix.EAGAIN
}

// sweep is the sweeper goroutine: each time the watcher rings, it hands back the roles
// still idle. It stops when close closes the bell.
func (w *watch) sweep() {
	defer close(w.done)
	for {
		if err := w.raw.Read(w.ringFn); err != nil {
			return
		}
		w.sweepOnce()
	}
}

// sweepOnce wakes the readers of the roles still idle: the bell's sweeper and the signal
// goroutine call it.
func (w *watch) sweepOnce() {
	w.sweepMu.Lock()
	defer w.sweepMu.Unlock()
	if w.dead {
		return
	}
	w.mu.Lock()
	w.snap = append(w.snap[:0], w.conns...)
	w.mu.Unlock()
	for i, cn := range w.snap {
		if cn == nil {
			continue
		}
		c := cn.q.rcq
		c.mu.Lock()
		cn.wakeIdleLocked()
		c.mu.Unlock()
		w.snap[i] = nil
	}
}

// slot returns slot i's word.
func (w *watch) slot(i int) *atomic.Uint64 { return idlewatch.SlotWord(w.page, i) }

// alloc gives cn, whose socket is descriptor fd, a slot, or returns -1 if none is free.
func (w *watch) alloc(cn *qconn, fd int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := -1
	if n := len(w.free); n > 0 {
		i = w.free[n-1]
		w.free = w.free[:n-1]
		w.conns[i] = cn
	} else if w.used < idlewatch.Slots {
		i = w.used
		w.conns = append(w.conns, cn)
		w.gens = append(w.gens, 0)
		w.used++
	} else {
		return -1
	}
	w.gens[i]++
	idlewatch.SockWord(w.page, i).Store(uint64(w.gens[i])<<32 | uint64(uint32(fd)))
	if i == w.used-1 {
		idlewatch.Word(w.page, idlewatch.WordUsed).Store(uint64(w.used))
	}
	return i
}

// release frees slot i, busy as it is left.
func (w *watch) release(i int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	idlewatch.SetSlot(w.slot(i), idlewatch.SlotBusy)
	idlewatch.SockWord(w.page, i).Store(0)
	w.conns[i] = nil
	w.free = append(w.free, i)
}

// close stops the sweeper and unmaps the page. Every connection has released its slot.
func (w *watch) close() {
	if w.sig != 0 {
		unlistenWatchSignal(w)
	}
	w.sweepMu.Lock()
	w.dead = true // a sweep the signal goroutine started late does nothing
	w.sweepMu.Unlock()
	w.bell.Close()
	<-w.done
	idlewatch.Word(w.page, idlewatch.WordClosed).Store(1) // detached: the watcher ends the watch
	w.mu.Lock()
	w.unmapped = true // a late expose leaves the page alone
	w.mu.Unlock()
	unix.Munmap(w.page)
}

// expose counts a memory region with the RemoteWrite or RemoteAtomic right in (delta 1)
// or out (-1): while the device has one, the watcher ticks fast for it.
func (w *watch) expose(delta int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.unmapped {
		return
	}
	w.exposed += uint64(delta)
	idlewatch.Word(w.page, idlewatch.WordExposed).Store(w.exposed)
}

// led records in the page, once, that a leader of the device left a role idle: the
// watcher ticks fast for the device from then on. Called with a slot held (the page is
// mapped).
func (w *watch) led() {
	if word := idlewatch.Word(w.page, idlewatch.WordLed); word.Load() == 0 {
		word.Store(1)
	}
}

// ticking reports whether the watcher scans the page every tick (page word 7): until it
// does, a role left to it could wait a whole idlewatch.SlowTick (50 ms) for its hand-back, as the
// first passive-target request to a rank that has just allocated a window would
// (`golaunch -n 2 --transport tcp bin/rmabench --test busy_get` measures its first
// round). A watcher
// that predates the word never sets it, and roles are then handed back at once, as
// without a watch.
func (w *watch) ticking() bool { return idlewatch.Word(w.page, idlewatch.WordTicking).Load() != 0 }

// exposes reports whether a region with access counts for the watch: one that peers may
// change without the rank taking part, which only the rank's progress (its reader
// goroutines) serves.
func exposes(access verbs.Access) bool { return access&(verbs.RemoteWrite|verbs.RemoteAtomic) != 0 }

// deferRoleLocked leaves cn's idle role to the watcher: it marks cn's slot idle instead
// of writing the role eventfd. It reports false when cn has no slot (none was free) or
// the watcher does not tick for the page yet (ticking): the caller writes the eventfd.
// Called with the CQ's mu held, cn.role idle.
func (cn *qconn) deferRoleLocked() bool {
	if cn.wslot < 0 {
		return false
	}
	cn.d.watch.led()
	if !cn.d.watch.ticking() {
		return false // the watcher may scan only every SlowTick: hand the role back now
	}
	idlewatch.SetSlot(cn.d.watch.slot(cn.wslot), idlewatch.SlotIdle)
	cn.rolePosted = false
	return true
}

// idleLocked marks cn's slot idle for a role left idle with its eventfd written. Called
// with the CQ's mu held.
func (cn *qconn) idleLocked() {
	if cn.wslot >= 0 {
		cn.d.watch.led()
		idlewatch.SetSlot(cn.d.watch.slot(cn.wslot), idlewatch.SlotIdle)
	}
}

// takenLocked records that cn's role was taken (by a leader or the reader). Called with
// the CQ's mu held.
func (cn *qconn) takenLocked() {
	if cn.wslot >= 0 {
		idlewatch.SetSlot(cn.d.watch.slot(cn.wslot), idlewatch.SlotBusy)
	}
}

// parked marks whether the reader goroutine, which holds the role, is about to wait for
// its socket (or has its header). The reader alone writes the slot while it holds the
// role, so this needs no lock.
func (cn *qconn) parked(p bool) {
	if cn.wslot < 0 {
		return
	}
	st := uint64(idlewatch.SlotBusy)
	if p {
		st = idlewatch.SlotParked
	}
	idlewatch.SetSlot(cn.d.watch.slot(cn.wslot), st)
}

// wakeIdleLocked writes the role eventfd of an idle role left to the watcher: the
// sweeper's hand-back, and a close that needs the reader to see its socket fail. Called
// with the CQ's mu held.
func (cn *qconn) wakeIdleLocked() {
	if cn.role == roleIdle && !cn.rolePosted {
		cn.postRole()
	}
}

// wakeIdle is wakeIdleLocked for a caller that holds the QP's mu (before it closes the
// connection: the reader must run to see it fail).
func (cn *qconn) wakeIdle() {
	c := cn.q.rcq
	c.mu.Lock()
	cn.wakeIdleLocked()
	c.mu.Unlock()
}
