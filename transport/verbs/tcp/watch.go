package tcp

import (
	"errors"
	"fmt"
	"os"
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
// wait (about 1.8 µs here) plus the reader's wake-up (about 1.5 µs), a fifth of a loopback
// round trip. A timer in the rank process to hand the role back later costs more: any Go
// timer that fires every millisecond changes how the process's idle threads park and
// added 3 to 5 µs to the round trip (docs/benchmarks.md). A watcher in another process
// costs the rank nothing: the leader records in a shared page that the role is idle (one
// store), and the watcher, which ticks every WatchTick, rings the device's bell (an
// eventfd) for a role it found idle at the same count on two ticks in a row. The device's
// sweeper goroutine, parked on the bell in the network poller, then writes the role
// eventfds of the connections still idle. A role is thus handed back within two ticks of
// the wait that left it, and at once when a waiter comes first (it takes the idle role
// and leads).
//
// The page is WatchPageSize bytes of little-endian uint64 words, accessed atomically by
// both processes:
//
//	word 0         watchMagic, written by the watcher
//	word 1         slots in use (a high-water mark), written by the rank, <= watchSlots
//	word 2         1 once the rank's device closed: the watcher ends the watch
//	words 3..7     reserved (zero)
//	word 8+i       slot i: a count of the role's transitions, odd while it is idle and
//	               not handed back; written by the rank only
//
// The rank gives a slot to a connection the first time its role is left idle and frees it
// when the connection's reader exits. A connection without a slot (all in use) wakes its
// reader itself, as without a watch.
const (
	// WatchPageSize is the size of an idle-role watch's page.
	WatchPageSize = 4096
	// WatchTick is the period of a Watcher: a role left idle is handed back within two.
	WatchTick = time.Millisecond
	// watchSlow is a Watcher's period while no page has a slot in use (shm-only jobs).
	watchSlow = 50 * time.Millisecond

	watchMagic    = 0x746177616d726f67 // "gormawat", little-endian
	watchHdrWords = 8
	watchSlots    = WatchPageSize/8 - watchHdrWords
)

// watchWord returns word i of a mapped watch page.
func watchWord(page []byte, i int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&page[8*i]))
}

// staleSlots reads the counts of the first n slots (n is clamped to watchSlots and
// len(last)) and reports whether one of them is odd and equal to its count in last (the
// previous scan): a role left idle and still idle a whole tick later. It records the
// counts in last. A pure function of the page, for the watcher and its tests.
func staleSlots(slot func(i int) uint64, n int, last []uint64) bool {
	n = min(max(n, 0), watchSlots, len(last))
	stale := false
	for i := range n {
		v := slot(i)
		if v&1 == 1 && v == last[i] {
			stale = true
		}
		last[i] = v
	}
	return stale
}

// watch is a device's end of an idle-role watch.
type watch struct {
	page   []byte // the shared page, mapped
	bell   *os.File
	raw    syscall.RawConn
	ringFn func(uintptr) bool

	mu    sync.Mutex
	conns []*qconn // by slot; nil: free
	used  int      // slots handed out so far (the page's word 1)
	free  []int    // freed slots below used
	snap  []*qconn // the sweeper's copy of conns
	done  chan struct{}
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
	go w.sweep()
	return w, nil
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
}

// slot returns slot i's word.
func (w *watch) slot(i int) *atomic.Uint64 { return watchWord(w.page, watchHdrWords+i) }

// alloc gives cn a slot, or returns -1 if none is free.
func (w *watch) alloc(cn *qconn) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := len(w.free); n > 0 {
		i := w.free[n-1]
		w.free = w.free[:n-1]
		w.conns[i] = cn
		return i
	}
	if w.used == watchSlots {
		return -1
	}
	i := w.used
	w.conns = append(w.conns, cn)
	w.used++
	watchWord(w.page, 1).Store(uint64(w.used))
	return i
}

// release frees slot i, even (not idle) as it is left.
func (w *watch) release(i int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s := w.slot(i); s.Load()&1 == 1 {
		s.Add(1)
	}
	w.conns[i] = nil
	w.free = append(w.free, i)
}

// close stops the sweeper and unmaps the page. Every connection has released its slot.
func (w *watch) close() {
	w.bell.Close()
	<-w.done
	watchWord(w.page, 2).Store(1) // detached: the watcher ends the watch
	unix.Munmap(w.page)
}

// deferRoleLocked leaves cn's idle role to the watcher: it marks cn's slot idle instead
// of writing the role eventfd. It reports false when cn has no slot and none is free.
// Called with the CQ's mu held, cn.role idle.
func (cn *qconn) deferRoleLocked() bool {
	w := cn.d.watch
	if w == nil {
		return false
	}
	if cn.wslot < 0 {
		if cn.wslot = w.alloc(cn); cn.wslot < 0 {
			return false
		}
	}
	s := w.slot(cn.wslot)
	if v := s.Load(); v&1 == 0 {
		s.Store(v + 1)
	}
	cn.rolePosted = false
	return true
}

// takenLocked records that cn's role was taken (by a leader or the reader). Called with
// the CQ's mu held.
func (cn *qconn) takenLocked() {
	if cn.wslot < 0 {
		return
	}
	s := cn.d.watch.slot(cn.wslot)
	if v := s.Load(); v&1 == 1 {
		s.Store(v + 1)
	}
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
// the rank (verbs.Config.IdleWatch, through the launch contract), and the Watcher's
// goroutine rings a rank's bell when one of its roles stayed idle through a tick. It must
// run in another process than the rank: in the rank itself its timer costs more than it
// saves. Safe for concurrent use.
type Watcher struct {
	tick time.Duration

	mu     sync.Mutex
	pages  map[*watchedPage]struct{}
	closed bool
	wake   chan struct{} // a page was added
	stop   chan struct{}
	done   chan struct{}
}

// watchedPage is a Watcher's end of one watch.
type watchedPage struct {
	page []byte
	bell int // the watcher's own descriptor of the eventfd
	last [watchSlots]uint64
}

// NewWatcher starts a watcher that scans its pages every tick (WatchTick if tick <= 0),
// and every 50 ms while no page has a slot in use.
func NewWatcher(tick time.Duration) *Watcher {
	if tick <= 0 {
		tick = WatchTick
	}
	w := &Watcher{tick: tick, pages: make(map[*watchedPage]struct{}), wake: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

// Add creates a watch (NewIdleWatch) and watches it (Watch): the caller passes the
// returned files to the rank's process and then closes them.
func (w *Watcher) Add() (files verbs.IdleWatch, remove func(), err error) {
	if files, err = NewIdleWatch(); err != nil {
		return files, nil, err
	}
	if remove, err = w.Watch(files); err != nil {
		files.Page.Close()
		files.Bell.Close()
		return verbs.IdleWatch{}, nil, err
	}
	return files, remove, nil
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
// or with remove; call remove once the rank has exited.
func (w *Watcher) Watch(files verbs.IdleWatch) (remove func(), err error) {
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
	p := &watchedPage{page: page, bell: own}
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
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			if _, ok := w.pages[p]; ok {
				delete(w.pages, p)
				unix.Munmap(p.page)
				unix.Close(p.bell)
			}
			w.mu.Unlock()
		})
	}, nil
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
		delete(w.pages, p)
		unix.Munmap(p.page)
		unix.Close(p.bell)
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

// scan rings the bell of every page with a stale slot and returns the time to the next
// scan: a tick while some page has slots in use, else the slow period.
func (w *Watcher) scan() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	next := watchSlow
	for p := range w.pages {
		if watchWord(p.page, 2).Load() != 0 { // the device closed
			delete(w.pages, p)
			unix.Munmap(p.page)
			unix.Close(p.bell)
			continue
		}
		n := int(watchWord(p.page, 1).Load())
		if n == 0 {
			continue
		}
		next = w.tick
		if staleSlots(func(i int) uint64 { return watchWord(p.page, watchHdrWords+i).Load() }, n, p.last[:]) {
			unix.Write(p.bell, eventOne[:])
		}
	}
	return next
}
