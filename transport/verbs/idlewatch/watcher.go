package idlewatch

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Files are the rank's end of one watch: the page and the bell. NewFiles (or Add) creates
// them; the rank's device takes them (tcp.Options.IdleWatch), usually inherited as
// descriptors from the process that created them.
type Files struct {
	Page *os.File // memfd of PageSize bytes, mapped shared by both processes
	Bell *os.File // eventfd the watcher writes to ask the device to hand idle roles back
}

// one is the 8-byte value written to an eventfd to ring it.
var one = [8]byte{1}

// Watcher is the other end of idle-role watches. The process that starts ranks (the
// launcher's agent) creates one watch per rank with Add, passes the returned files to
// the rank (tcp.Options.IdleWatch, through the launch contract), gives the watch the
// started process (Watch.Signal). The Watcher's goroutine rings a rank when one of its
// roles stayed idle through a tick, or a parked reader's socket held unread data through
// one (ticking fast only for ranks that need it). It must run in another process than
// the rank: in the rank itself its timer costs more than it saves. Safe for concurrent
// use.
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
	proc   *os.Process // signalled with Signal when rung; nil: the bell only
	pidfd  int         // the rank's pidfd, for its sockets; -1: none
	socks  [Slots]watchedSock
	last   [Slots]uint64
	held   [Slots]heldData
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

// NewWatcher starts a watcher that scans its pages every tick (Tick if tick <= 0)
// while one of its ranks needs it (a leader of the rank left a role idle, or the rank
// exposes memory to one-sided writes), else every 50 ms.
func NewWatcher(tick time.Duration) *Watcher {
	if tick <= 0 {
		tick = Tick
	}
	w := &Watcher{tick: tick, pages: make(map[*Watch]struct{}), wake: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

// Add creates a watch (NewFiles) and watches it (Watch): the caller passes the
// returned files to the rank's process and then closes them, and gives the watch the
// process once started (Watch.Signal).
func (w *Watcher) Add() (files Files, h *Watch, err error) {
	if files, err = NewFiles(); err != nil {
		return files, nil, err
	}
	if h, err = w.Watch(files); err != nil {
		files.Page.Close()
		files.Bell.Close()
		return Files{}, nil, err
	}
	return files, h, nil
}

// NewFiles creates the files of an idle-role watch for one device: a fresh page and a
// bell, both close-on-exec. Give them to a Watcher (Watch) and to the rank's process
// (tcp.Options.IdleWatch, through inheritance), then close them; each keeps its own
// references.
func NewFiles() (Files, error) {
	pfd, err := unix.MemfdCreate("gorma-idle-watch", unix.MFD_CLOEXEC)
	if err != nil {
		return Files{}, fmt.Errorf("idlewatch: memfd_create: %w", err)
	}
	page := os.NewFile(uintptr(pfd), "gorma-idle-watch")
	if err := unix.Ftruncate(pfd, PageSize); err != nil {
		page.Close()
		return Files{}, fmt.Errorf("idlewatch: size the page: %w", err)
	}
	mem, err := unix.Mmap(pfd, 0, PageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		page.Close()
		return Files{}, fmt.Errorf("idlewatch: map the page: %w", err)
	}
	Word(mem, WordSignal).Store(uint64(Signal))
	Word(mem, WordMagic).Store(Magic)
	unix.Munmap(mem)
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		page.Close()
		return Files{}, fmt.Errorf("idlewatch: eventfd: %w", err)
	}
	return Files{Page: page, Bell: os.NewFile(uintptr(efd), "gorma-idle-watch-bell")}, nil
}

// Watch starts watching the watch files (from NewFiles, possibly inherited from the
// process that created them); the Watcher maps the page and keeps a duplicate of the
// bell, so the caller may close the files. The watch ends when the rank's device closes,
// or with Remove; call Remove once the rank has exited.
func (w *Watcher) Watch(files Files) (*Watch, error) {
	if files.Page == nil || files.Bell == nil {
		return nil, errors.New("idlewatch: Watch needs both Page and Bell")
	}
	page, err := MapPage(files.Page)
	if err != nil {
		return nil, fmt.Errorf("idlewatch: map the page: %w", err)
	}
	if Word(page, WordMagic).Load() != Magic {
		unix.Munmap(page)
		return nil, errors.New("idlewatch: the page is not a watch page (create watches with NewFiles)")
	}
	own, err := Dup(files.Bell)
	if err != nil {
		unix.Munmap(page)
		return nil, fmt.Errorf("idlewatch: dup the bell: %w", err)
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
		return nil, errors.New("idlewatch: the watcher is closed")
	}
	w.pages[p] = struct{}{}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return p, nil
}

// Signal makes the watcher send proc Signal with every ring of the bell, which
// reaches the rank even while none of its threads polls the network (see the package
// documentation). proc must be the rank's process; os.Process signals through a pidfd, so a
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
	word := SockWord(h.page, i).Load()
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
		if s := &h.socks[i]; s.fd >= 0 && (i >= n || SockWord(h.page, i).Load() != s.word) {
			h.dropSock(i)
			s.word = 0
		}
	}
}

// heldReadable reports whether one of the slots' sockets holds unread data that it held
// at the previous scan too, in the same parked wait (its slot's word unchanged): data
// left unread for a whole tick. Data that came a moment before a scan does not count. The
// rank's poller is likely about to hand it to the reader, and on a machine whose cores
// are all busy many scans would ring for data about to be read. One poll, which consumes
// nothing; it records which sockets hold data now. Called with mu held, after staleSlots
// recorded the slots' words in last.
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

// Len returns the number of watches the watcher holds: those added and not yet ended by
// Remove, Close or the close of their rank's device (seen at a scan).
func (w *Watcher) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pages)
}

// run is the watcher goroutine.
func (w *Watcher) run() {
	defer close(w.done)
	t := time.NewTimer(SlowTick)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-w.wake:
		case <-t.C:
		}
		t.Reset(w.Scan())
	}
}

// Scan rings every rank with a stale slot and returns the time to the next scan: a tick
// while some rank needs it (see the page's words 5 and 6), else the slow period. The
// watcher's goroutine calls it on its timer; a test drives a watcher made with a long
// tick by calling it by hand.
func (w *Watcher) Scan() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	next := SlowTick
	for p := range w.pages {
		if Word(p.page, WordClosed).Load() != 0 { // the device closed
			w.dropLocked(p)
			continue
		}
		if Word(p.page, WordAttached).Load() == 0 {
			continue // not attached yet
		}
		n := int(Word(p.page, WordUsed).Load())
		fast := Word(p.page, WordExposed).Load() != 0 || Word(p.page, WordLed).Load() != 0
		if fast {
			next = w.tick
			p.forgetClosed(n)
		} else {
			p.forgetClosed(0) // parked readers are watched only while fast
		}
		if v := uint64(0); fast != (Word(p.page, WordTicking).Load() != 0) {
			if fast {
				v = 1
			}
			Word(p.page, WordTicking).Store(v) // the rank leaves roles to the watcher only then
		}
		var ring bool
		ring, p.cand = staleSlots(func(i int) uint64 { return SlotWord(p.page, i).Load() }, n, p.last[:], p.cand[:0])
		if fast && !ring && len(p.cand) > 0 {
			ring = p.heldReadable(p.cand)
		}
		if ring {
			unix.Write(p.bell, one[:])
			if p.proc != nil {
				p.proc.Signal(Signal) // fails only once the rank is gone
			}
		}
	}
	return next
}
