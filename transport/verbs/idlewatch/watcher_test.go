package idlewatch

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestWatchReadable: the watcher takes a duplicate of a slot's socket from the rank
// (pidfd_getfd; here the rank is this process) and sees unread data on it without
// consuming any; it rings for data unread at two scans of one parked wait, and takes a
// new duplicate when the slot names another socket.
func TestWatchReadable(t *testing.T) {
	w := NewWatcher(time.Hour)
	defer w.Close()
	files, h, err := w.Add()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Remove()
	files.Page.Close()
	files.Bell.Close()
	self, err := os.FindProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	h.Signal(self)
	w.mu.Lock()
	pidfd := h.pidfd
	w.mu.Unlock()
	if pidfd < 0 {
		t.Skip("pidfd_open is not available here")
	}
	if fd, err := unix.PidfdGetfd(pidfd, 0, 0); err != nil {
		t.Skipf("pidfd_getfd is not allowed here (%v): the watcher then watches idle roles only", err)
	} else {
		unix.Close(fd)
	}
	pair := func() (a, b int) {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
		return fds[0], fds[1]
	}
	scan := func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return h.heldReadable([]int{0})
	}
	a, b := pair()
	SockWord(h.page, 0).Store(1<<32 | uint64(a))
	if scan() {
		t.Fatal("an empty socket reads as readable")
	}
	if _, err := unix.Write(b, []byte("request")); err != nil {
		t.Fatal(err)
	}
	if scan() {
		t.Fatal("data seen at one scan only rings")
	}
	for range 2 {
		if !scan() {
			t.Fatal("a socket with data unread since the previous scan does not ring")
		}
	}
	h.last[0] += 4 // the reader read and parked again: its slot's count moved on
	if scan() {
		t.Fatal("data seen in an earlier parked wait rings")
	}
	buf := make([]byte, 16)
	if n, err := unix.Read(a, buf); err != nil || string(buf[:n]) != "request" {
		t.Fatalf("the rank's read got %q, %v: the watcher consumed data", buf[:n], err)
	}
	for range 2 {
		if scan() {
			t.Fatal("a drained socket reads as readable")
		}
	}
	c, d := pair()
	SockWord(h.page, 0).Store(2<<32 | uint64(c)) // the slot now names another socket
	unix.Write(d, []byte("x"))
	unix.Write(b, nil)
	if scan() || !scan() {
		t.Fatal("the watcher kept the old socket's duplicate")
	}
	SockWord(h.page, 0).Store(0)
	if scan() {
		t.Fatal("a slot without a socket reads as readable")
	}

	// A released slot's duplicate is closed at the next scan, so the rank's close of the
	// socket reaches the peer.
	ef, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	e, f := ef[0], ef[1]
	defer unix.Close(f)
	SockWord(h.page, 0).Store(3<<32 | uint64(e))
	scan()
	SockWord(h.page, 0).Store(0) // the rank released the slot
	w.mu.Lock()
	h.forgetClosed(1)
	held := h.socks[0].fd >= 0
	w.mu.Unlock()
	if held {
		t.Fatal("the watcher still holds a duplicate of a released slot's socket")
	}
	unix.Close(e)
	unix.SetNonblock(f, false)
	if n, err := unix.Read(f, buf); n != 0 || err != nil {
		t.Fatalf("the peer read %d bytes, %v after the rank closed its end; want end of file", n, err)
	}
}

// TestSlowScanDropsSockets: the watcher holds duplicates of a rank's sockets only while
// it scans the rank's page every tick; a scan that finds the page needs no ticks (no
// exposed memory, never led) closes them and returns the slow period.
func TestSlowScanDropsSockets(t *testing.T) {
	w := NewWatcher(time.Hour)
	defer w.Close()
	files, h, err := w.Add()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Remove()
	files.Page.Close()
	files.Bell.Close()
	self, err := os.FindProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	h.Signal(self)
	w.mu.Lock()
	pidfd := h.pidfd
	w.mu.Unlock()
	if pidfd < 0 {
		t.Skip("pidfd_open is not available here")
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	if fd, err := unix.PidfdGetfd(pidfd, fds[0], 0); err != nil {
		t.Skipf("pidfd_getfd is not allowed here (%v)", err)
	} else {
		unix.Close(fd)
	}
	// Forge the rank's side: attached, one slot, its reader parked on fds[0], memory
	// exposed to one-sided writes.
	Word(h.page, WordAttached).Store(1)
	Word(h.page, WordUsed).Store(1)
	Word(h.page, WordExposed).Store(1)
	SockWord(h.page, 0).Store(1<<32 | uint64(fds[0]))
	SetSlot(SlotWord(h.page, 0), SlotParked)
	held := func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return h.socks[0].fd >= 0
	}
	for range 2 { // the second scan finds the slot parked at the same count
		if next := w.Scan(); next != time.Hour {
			t.Fatalf("a page with exposed memory: next scan in %v, want the tick", next)
		}
	}
	if !held() {
		t.Fatal("the watcher took no duplicate of a parked reader's socket while ticking")
	}
	Word(h.page, WordExposed).Store(0)
	if next := w.Scan(); next != SlowTick {
		t.Fatalf("a page that needs no ticks: next scan in %v, want %v", next, SlowTick)
	}
	if held() {
		t.Fatal("the watcher holds a duplicate of the socket of a rank it scans slowly")
	}
}
