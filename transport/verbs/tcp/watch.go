package tcp

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// Idle-role watch. A leader leaving CQ.Wait must give the reading role back to the
// connection's reader goroutine (lead.go), or passive-target requests wait until the
// application waits again. Writing the reader's role eventfd costs a system call on every
// wait plus the reader's wake-up, a sizeable part of a loopback round trip. A timer in
// the rank process to hand the role back later costs more: any Go timer that fires every
// millisecond changes how the process's idle threads park and lengthens every round trip
// (`bin/verbsperf --provider tcp --test read_lat` measures the round trip). A watcher in
// another process costs the rank nothing: the leader records in a shared page that the
// role is idle (one store), and the watcher, which ticks every WatchTick, rings the rank
// for a role it found idle in the same state on two ticks in a row. The rank then writes
// the role eventfds of the connections still idle. A role is thus handed back within two
// ticks of the wait that left it, and at once when a waiter comes first (it takes the
// idle role and leads).
//
// A reader parked in the network poller has the opposite problem. Go polls the network
// only from a thread that has nothing else to run, or from sysmon every 10 ms. When the
// thread blocked in the poller wakes the application's goroutine (its last completion)
// and that goroutine then computes, no thread polls until sysmon does, and a request that
// arrives meanwhile waits up to 10 ms, as a target's first Lock+Get+Unlock after its last
// wait shows (`golaunch -n 2 --transport tcp bin/rmabench --test busy_get` measures it;
// golang/go pull request 51651 describes the same gap). So a reader also marks its slot
// while it waits for its socket, the rank records each slot's socket descriptor, and the
// watcher, which holds a pidfd of the rank (Watch.Signal), takes a duplicate of the
// socket (pidfd_getfd) and rings when a parked reader's socket held unread data at two
// ticks in a row (data that came just before a scan is most often read at once).
//
// The watcher ticks every WatchTick only for ranks that need it: a rank whose device led
// a wait and left a role idle (a connection alone on its CQ), or that holds memory peers
// may write or update on their own (windows: regions with the RemoteWrite or RemoteAtomic
// right). For the others it scans every watchSlow and does not watch parked readers
// (Go's sysmon polls every 10 ms anyway). It marks the pages it ticks for (word 7), and
// a leader leaves its role idle to the watcher only on such a page; before, it writes
// the reader's role eventfd itself, so a role is never left to a scan 50 ms away. A
// wake-up every millisecond is not free: on virtual CPUs each one, with the Go runtime's
// own reaction to it, costs the process a wake-up of its own, and four watchers ticking
// for a job over four network-namespace hosts sharing 2 cores slow its large Allreduce,
// as rings for data that was about to be read do (scripts/netns-allreduce.sh measures it).
//
// A ring is the bell (an eventfd in the rank's poller, enough while the rank polls) and
// WatchSignal. The rank's signal goroutine (os/signal: its thread sleeps outside the
// poller and gives up its processor while it sleeps) writes the role eventfds; the
// processor it ran on then polls the network as soon as it has nothing else to run, which
// starts the readers, and a thread sleeps in the poller again, so later requests are
// served at once.
//
// The page is WatchPageSize bytes of little-endian uint64 words, accessed atomically by
// both processes:
//
//	word 0         watchMagic, written by the watcher
//	word 1         slots in use (a high-water mark), written by the rank, <= watchSlots
//	word 2         1 once the rank's device closed: the watcher ends the watch
//	word 3         the signal that rings the rank with the bell (WatchSignal), or 0
//	word 4         1 once the rank's device opened: the watcher scans
//	word 5         the device's memory regions that peers may write or update (the
//	               RemoteWrite or RemoteAtomic right: windows), written by the rank
//	word 6         1 once a leader of the device left a role idle, written by the rank
//	word 7         1 while the watcher scans the page every tick (it read word 5 or 6
//	               non-zero at its last scan), written by the watcher; 0 before
//	word 8+i       slot i: a count of transitions << 2 | a state (slotBusy, slotIdle,
//	               slotParked); written by the rank only
//	word 8+S+i     slot i's socket: a generation << 32 | the descriptor in the rank, 0
//	               if none (S = watchSlots)
//
// The rank gives each connection a slot when it starts and frees it when the reader
// exits. A connection without a slot (all in use) wakes its reader itself, as without a
// watch, and its parked reader is not watched.
const (
	// WatchPageSize is the size of an idle-role watch's page.
	WatchPageSize = 4096
	// WatchTick is the period of a Watcher while a rank needs it: a role left idle is
	// handed back within two.
	WatchTick = time.Millisecond
	// watchSlow is a Watcher's period while no rank needs a fast one: none has led a wait
	// or exposed memory to one-sided writes yet (shm-only jobs, Allreduce over tcp with a
	// connection per peer). A rank's first idle role is handed back within about
	// watchSlow.
	watchSlow = 50 * time.Millisecond

	// WatchSignal is the real-time signal that rings a watch together with its bell
	// (SIGRTMIN+6 on Linux). A rank's tcp device with a watch handles it; Go ignores a
	// real-time signal nobody asked for, so a stray one harms no Go process.
	WatchSignal = syscall.Signal(40)

	watchMagic    = 0x746177616d726f67 // "gormawat", little-endian
	watchHdrWords = 8
	watchSlots    = (WatchPageSize/8 - watchHdrWords) / 2

	slotBusy   = 0 // the role is held and its holder is not parked on the socket
	slotIdle   = 1 // a leader left the role idle; nobody reads the socket
	slotParked = 2 // the reader waits for the socket in the network poller
)

// watchWord returns word i of a mapped watch page.
func watchWord(page []byte, i int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&page[8*i]))
}

// slotWord and fdWord return slot i's state word and socket word.
func slotWord(page []byte, i int) *atomic.Uint64 { return watchWord(page, watchHdrWords+i) }
func fdWord(page []byte, i int) *atomic.Uint64 {
	return watchWord(page, watchHdrWords+watchSlots+i)
}

// staleSlots reads the first n slots (n is clamped to watchSlots and len(last)) and
// finds those in the same state and count as at the previous scan (last): it reports
// whether one of them is idle, and appends the parked ones to parked (the caller rings if
// one of their sockets holds data). It records the words in last. A pure function of the
// page, for the watcher and its tests.
func staleSlots(slot func(i int) uint64, n int, last []uint64, parked []int) (idle bool, _ []int) {
	n = min(max(n, 0), watchSlots, len(last))
	for i := range n {
		v := slot(i)
		if v == last[i] {
			switch v & 3 {
			case slotIdle:
				idle = true
			case slotParked:
				parked = append(parked, i)
			}
		}
		last[i] = v
	}
	return idle, parked
}

// watch is a device's end of an idle-role watch.
type watch struct {
	page   []byte // the shared page, mapped
	bell   *os.File
	raw    syscall.RawConn
	ringFn func(uintptr) bool

	sig syscall.Signal // WatchSignal, if the page names it; else 0

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

// newWatch maps an IdleWatch's page, checks it and starts the sweeper. It takes
// ownership of both files, also on error.
func newWatch(iw *verbs.IdleWatch, name string) (*watch, error) {
	bad := func(format string, args ...any) error {
		return newErr("open", 0, verbs.ErrInvalid, "Config.IdleWatch of %s: "+format+"; create watches with tcp.Watcher",
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
	if err != nil || st.Size() != WatchPageSize {
		return nil, bad("the page file is not a %d-byte memfd (stat: %v)", WatchPageSize, err)
	}
	fd, err := dupFile(iw.Bell)
	if err != nil {
		return nil, bad("the bell: %v", err)
	}
	if link, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd)); err != nil || link != "anon_inode:[eventfd]" {
		unix.Close(fd)
		return nil, bad("the bell is not an eventfd (%q, %v)", link, err)
	}
	page, err := mapPage(iw.Page)
	if err != nil {
		unix.Close(fd)
		return nil, bad("map the page: %v", err)
	}
	if watchWord(page, 0).Load() != watchMagic || watchWord(page, 1).Load() != 0 || watchWord(page, 2).Load() != 0 {
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
	if sig := watchWord(page, 3).Load(); sig != 0 {
		if sig < 34 || sig > 64 {
			unix.Munmap(page)
			bell.Close()
			return nil, bad("the page names signal %d, not a real-time signal", sig)
		}
		w.sig = syscall.Signal(sig)
		listenWatchSignal(w)
	}
	watchWord(page, 4).Store(1) // attached: the watcher ticks fast
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

// dupFile duplicates f's descriptor (close-on-exec) without os.File.Fd, which would make
// a non-blocking file blocking.
func dupFile(f *os.File) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	cerr := rc.Control(func(raw uintptr) { fd, err = unix.FcntlInt(raw, unix.F_DUPFD_CLOEXEC, 0) })
	if cerr != nil {
		return -1, cerr
	}
	return fd, err
}

// mapPage maps f's first WatchPageSize bytes shared.
func mapPage(f *os.File) ([]byte, error) {
	fd, err := dupFile(f)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return unix.Mmap(fd, 0, WatchPageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
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
func (w *watch) slot(i int) *atomic.Uint64 { return slotWord(w.page, i) }

// alloc gives cn, whose socket is descriptor fd, a slot, or returns -1 if none is free.
func (w *watch) alloc(cn *qconn, fd int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := -1
	if n := len(w.free); n > 0 {
		i = w.free[n-1]
		w.free = w.free[:n-1]
		w.conns[i] = cn
	} else if w.used < watchSlots {
		i = w.used
		w.conns = append(w.conns, cn)
		w.gens = append(w.gens, 0)
		w.used++
	} else {
		return -1
	}
	w.gens[i]++
	fdWord(w.page, i).Store(uint64(w.gens[i])<<32 | uint64(uint32(fd)))
	if i == w.used-1 {
		watchWord(w.page, 1).Store(uint64(w.used))
	}
	return i
}

// release frees slot i, busy as it is left.
func (w *watch) release(i int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	setSlot(w.slot(i), slotBusy)
	fdWord(w.page, i).Store(0)
	w.conns[i] = nil
	w.free = append(w.free, i)
}

// setSlot moves a slot word to state, counting the transition.
func setSlot(s *atomic.Uint64, state uint64) {
	if v := s.Load(); v&3 != state {
		s.Store((v>>2+1)<<2 | state)
	}
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
	watchWord(w.page, 2).Store(1) // detached: the watcher ends the watch
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
	watchWord(w.page, 5).Store(w.exposed)
}

// led records in the page, once, that a leader of the device left a role idle: the
// watcher ticks fast for the device from then on. Called with a slot held (the page is
// mapped).
func (w *watch) led() {
	if word := watchWord(w.page, 6); word.Load() == 0 {
		word.Store(1)
	}
}

// ticking reports whether the watcher scans the page every tick (page word 7): until it
// does, a role left to it could wait a whole watchSlow (50 ms) for its hand-back, as the
// first passive-target request to a rank that has just allocated a window would
// (`golaunch -n 2 --transport tcp bin/rmabench --test busy_get` measures its first
// round). A watcher
// that predates the word never sets it, and roles are then handed back at once, as
// without a watch.
func (w *watch) ticking() bool { return watchWord(w.page, 7).Load() != 0 }

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
		return false // the watcher may scan only in watchSlow: hand the role back now
	}
	setSlot(cn.d.watch.slot(cn.wslot), slotIdle)
	cn.rolePosted = false
	return true
}

// idleLocked marks cn's slot idle for a role left idle with its eventfd written. Called
// with the CQ's mu held.
func (cn *qconn) idleLocked() {
	if cn.wslot >= 0 {
		cn.d.watch.led()
		setSlot(cn.d.watch.slot(cn.wslot), slotIdle)
	}
}

// takenLocked records that cn's role was taken (by a leader or the reader). Called with
// the CQ's mu held.
func (cn *qconn) takenLocked() {
	if cn.wslot >= 0 {
		setSlot(cn.d.watch.slot(cn.wslot), slotBusy)
	}
}

// parked marks whether the reader goroutine, which holds the role, is about to wait for
// its socket (or has its header). The reader alone writes the slot while it holds the
// role, so this needs no lock.
func (cn *qconn) parked(p bool) {
	if cn.wslot < 0 {
		return
	}
	st := uint64(slotBusy)
	if p {
		st = slotParked
	}
	setSlot(cn.d.watch.slot(cn.wslot), st)
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

// Watcher is the other end of idle-role watches: the process that starts ranks (the
// launcher's agent) creates one watch per rank with Add, passes the returned files to
// the rank (verbs.Config.IdleWatch, through the launch contract), gives the watch the
// started process (Watch.Signal), and the Watcher's goroutine rings a rank when one of
// its roles stayed idle through a tick, or a parked reader's socket held unread data
// through one (ticking fast only for ranks that need it). It must run in another
// process than the rank: in the rank itself its timer costs more than it saves. Safe for
// concurrent use.
type Watcher struct {
	tick time.Duration

	mu     sync.Mutex
	pages  map[*Watch]struct{}
	closed bool
	wake   chan struct{} // a page was added
	stop   chan struct{}
	done   chan struct{}
}

// Watch is a Watcher's end of one watch. Its fields are guarded by the Watcher's mu.
type Watch struct {
	w      *Watcher
	page   []byte
	bell   int         // the watcher's own descriptor of the eventfd
	proc   *os.Process // signalled with WatchSignal when rung; nil: the bell only
	pidfd  int         // the rank's pidfd, for its sockets; -1: none
	socks  [watchSlots]watchedSock
	last   [watchSlots]uint64
	held   [watchSlots]heldData
	cand   []int         // stale parked slots of a scan
	pfds   []unix.PollFd // their sockets
	pslots []int         // the slots of pfds
}

// heldData records that a slot's socket held unread data at a scan, in the parked wait
// whose slot word was word.
type heldData struct {
	word uint64
	ok   bool
}

// watchedSock is the watcher's duplicate of a slot's socket.
type watchedSock struct {
	word uint64 // the slot's socket word it was taken for
	fd   int    // -1: none (or pidfd_getfd failed for this word)
}

// NewWatcher starts a watcher that scans its pages every tick (WatchTick if tick <= 0)
// while one of its ranks needs it (a leader of the rank left a role idle, or the rank
// exposes memory to one-sided writes), else every 50 ms.
func NewWatcher(tick time.Duration) *Watcher {
	if tick <= 0 {
		tick = WatchTick
	}
	w := &Watcher{tick: tick, pages: make(map[*Watch]struct{}), wake: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

// Add creates a watch (NewIdleWatch) and watches it (Watch): the caller passes the
// returned files to the rank's process and then closes them, and gives the watch the
// process once started (Watch.Signal).
func (w *Watcher) Add() (files verbs.IdleWatch, h *Watch, err error) {
	if files, err = NewIdleWatch(); err != nil {
		return files, nil, err
	}
	if h, err = w.Watch(files); err != nil {
		files.Page.Close()
		files.Bell.Close()
		return verbs.IdleWatch{}, nil, err
	}
	return files, h, nil
}

// NewIdleWatch creates the files of an idle-role watch for one device: a fresh page and a
// bell, both close-on-exec. Give them to a Watcher (Watch) and to the rank's process
// (Config.IdleWatch, through inheritance), then close them; each keeps its own
// references.
func NewIdleWatch() (verbs.IdleWatch, error) {
	pfd, err := unix.MemfdCreate("gorma-idle-watch", unix.MFD_CLOEXEC)
	if err != nil {
		return verbs.IdleWatch{}, fmt.Errorf("tcp: idle watch: memfd_create: %w", err)
	}
	page := os.NewFile(uintptr(pfd), "gorma-idle-watch")
	if err := unix.Ftruncate(pfd, WatchPageSize); err != nil {
		page.Close()
		return verbs.IdleWatch{}, fmt.Errorf("tcp: idle watch: size the page: %w", err)
	}
	mem, err := unix.Mmap(pfd, 0, WatchPageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		page.Close()
		return verbs.IdleWatch{}, fmt.Errorf("tcp: idle watch: map the page: %w", err)
	}
	watchWord(mem, 3).Store(uint64(WatchSignal))
	watchWord(mem, 0).Store(watchMagic)
	unix.Munmap(mem)
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		page.Close()
		return verbs.IdleWatch{}, fmt.Errorf("tcp: idle watch: eventfd: %w", err)
	}
	return verbs.IdleWatch{Page: page, Bell: os.NewFile(uintptr(efd), "gorma-idle-watch-bell")}, nil
}

// Watch starts watching the watch files (from NewIdleWatch, possibly inherited from the
// process that created them); the Watcher maps the page and keeps a duplicate of the
// bell, so the caller may close the files. The watch ends when the rank's device closes,
// or with Remove; call Remove once the rank has exited.
func (w *Watcher) Watch(files verbs.IdleWatch) (*Watch, error) {
	if files.Page == nil || files.Bell == nil {
		return nil, errors.New("tcp: idle watch: Watch needs both Page and Bell")
	}
	page, err := mapPage(files.Page)
	if err != nil {
		return nil, fmt.Errorf("tcp: idle watch: map the page: %w", err)
	}
	if watchWord(page, 0).Load() != watchMagic {
		unix.Munmap(page)
		return nil, errors.New("tcp: idle watch: the page is not a watch page (create watches with NewIdleWatch)")
	}
	own, err := dupFile(files.Bell)
	if err != nil {
		unix.Munmap(page)
		return nil, fmt.Errorf("tcp: idle watch: dup the bell: %w", err)
	}
	p := &Watch{w: w, page: page, bell: own, pidfd: -1}
	for i := range p.socks {
		p.socks[i].fd = -1
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		unix.Munmap(page)
		unix.Close(own)
		return nil, errors.New("tcp: idle watch: the watcher is closed")
	}
	w.pages[p] = struct{}{}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return p, nil
}

// Signal makes the watcher send proc WatchSignal with every ring of the bell, which
// reaches the rank even while none of its threads polls the network (see the package's
// watch.go). proc must be the rank's process; os.Process signals through a pidfd, so a
// process that exited is never confused with a later one.
func (h *Watch) Signal(proc *os.Process) {
	pidfd, err := unix.PidfdOpen(proc.Pid, 0)
	if err != nil {
		pidfd = -1 // the bell and the signal still work; parked readers are not watched
	}
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	if _, ok := h.w.pages[h]; !ok || h.proc != nil {
		if pidfd >= 0 {
			unix.Close(pidfd)
		}
		return
	}
	h.proc, h.pidfd = proc, pidfd
}

// sock returns the watcher's duplicate of slot i's socket, or -1: it takes one from the
// rank when the slot names a new socket. Called with mu held.
func (h *Watch) sock(i int) int {
	word := fdWord(h.page, i).Load()
	s := &h.socks[i]
	if s.word != word {
		h.dropSock(i)
		s.word = word
		if word != 0 && h.pidfd >= 0 {
			if fd, err := unix.PidfdGetfd(h.pidfd, int(uint32(word)), 0); err == nil {
				s.fd = fd // close-on-exec, as pidfd_getfd makes it
			}
		}
	}
	return s.fd
}

// dropSock closes the duplicate of slot i's socket. Called with mu held.
func (h *Watch) dropSock(i int) {
	if s := &h.socks[i]; s.fd >= 0 {
		unix.Close(s.fd)
		s.fd = -1
	}
}

// forgetClosed closes the duplicates of sockets the rank has released, so that a
// duplicate never keeps a connection open past the next scan. Called with mu held.
func (h *Watch) forgetClosed(n int) {
	for i := range h.socks {
		if s := &h.socks[i]; s.fd >= 0 && (i >= n || fdWord(h.page, i).Load() != s.word) {
			h.dropSock(i)
			s.word = 0
		}
	}
}

// heldReadable reports whether one of the slots' sockets holds unread data that it held
// at the previous scan too, in the same parked wait (its slot's word unchanged): data
// left unread for a whole tick. Data that came a moment before a scan does not count: the
// rank's poller is likely about to hand it to the reader, and on a machine whose cores
// are all busy many scans would ring (across four network-namespace hosts sharing 2
// cores, a sizeable fraction). One poll, which consumes nothing; it records which sockets
// hold data now. Called with mu held, after staleSlots recorded the slots' words in last.
func (h *Watch) heldReadable(slots []int) bool {
	h.pfds, h.pslots = h.pfds[:0], h.pslots[:0]
	for _, i := range slots {
		if fd := h.sock(i); fd >= 0 {
			h.pfds = append(h.pfds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
			h.pslots = append(h.pslots, i)
		} else {
			h.held[i].ok = false
		}
	}
	if len(h.pfds) == 0 {
		return false
	}
	n, err := unix.Poll(h.pfds, 0)
	ring := false
	for k, i := range h.pslots {
		s := &h.held[i]
		if err != nil || n == 0 || h.pfds[k].Revents == 0 {
			s.ok = false
			continue
		}
		ring = ring || s.ok && s.word == h.last[i]
		s.ok, s.word = true, h.last[i]
	}
	return ring
}

// Remove ends the watch. It may be called more than once.
func (h *Watch) Remove() {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	h.w.dropLocked(h)
}

// dropLocked ends watch p if it is still watched. Called with mu held.
func (w *Watcher) dropLocked(p *Watch) {
	if _, ok := w.pages[p]; ok {
		delete(w.pages, p)
		unix.Munmap(p.page)
		unix.Close(p.bell)
		if p.pidfd >= 0 {
			unix.Close(p.pidfd)
		}
		for i := range p.socks {
			p.dropSock(i)
		}
	}
}

// Close stops the watcher and ends every watch.
func (w *Watcher) Close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		<-w.done
		return
	}
	w.closed = true
	w.mu.Unlock()
	close(w.stop)
	<-w.done
	w.mu.Lock()
	for p := range w.pages {
		w.dropLocked(p)
	}
	w.mu.Unlock()
}

// run is the watcher goroutine.
func (w *Watcher) run() {
	defer close(w.done)
	t := time.NewTimer(watchSlow)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-w.wake:
		case <-t.C:
		}
		t.Reset(w.scan())
	}
}

// scan rings every rank with a stale slot and returns the time to the next scan: a tick
// while some rank needs it (see the page's words 5 and 6), else the slow period.
func (w *Watcher) scan() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	next := watchSlow
	for p := range w.pages {
		if watchWord(p.page, 2).Load() != 0 { // the device closed
			w.dropLocked(p)
			continue
		}
		if watchWord(p.page, 4).Load() == 0 {
			continue // not attached yet
		}
		n := int(watchWord(p.page, 1).Load())
		fast := watchWord(p.page, 5).Load() != 0 || watchWord(p.page, 6).Load() != 0
		if fast {
			next = w.tick
			p.forgetClosed(n)
		} else {
			p.forgetClosed(0) // parked readers are watched only while fast
		}
		if v := uint64(0); fast != (watchWord(p.page, 7).Load() != 0) {
			if fast {
				v = 1
			}
			watchWord(p.page, 7).Store(v) // the rank leaves roles to the watcher only then
		}
		var ring bool
		ring, p.cand = staleSlots(func(i int) uint64 { return slotWord(p.page, i).Load() }, n, p.last[:], p.cand[:0])
		if fast && !ring && len(p.cand) > 0 {
			ring = p.heldReadable(p.cand)
		}
		if ring {
			unix.Write(p.bell, eventOne[:])
			if p.proc != nil {
				p.proc.Signal(WatchSignal) // fails only once the rank is gone
			}
		}
	}
	return next
}
