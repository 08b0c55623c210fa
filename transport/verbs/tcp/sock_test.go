package tcp

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// sockPair returns a sock on one end of a loopback connection and the plain other end.
func sockPair(t *testing.T) (*sock, *net.TCPConn) {
	t.Helper()
	a, b := tcpPair(t)
	s, err := newSock(a)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, b
}

// readOnce is one read(2) through s.Read: what arrived, or a wait for data.
func readOnce(s *sock, buf []byte) (int, error) {
	var n int
	var rerr error
	err := s.Read(func(fd uintptr) bool {
		m, err := unix.Read(int(fd), buf)
		if err == unix.EAGAIN {
			return false
		}
		n, rerr = m, err
		return true
	})
	if err != nil {
		return 0, err
	}
	return n, rerr
}

// readAfter starts readOnce in a goroutine, checks that it is still waiting after a
// pause, and returns its result channel.
func readAfter(t *testing.T, s *sock, buf []byte) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		n, err := readOnce(s, buf)
		if err == nil && n == 0 {
			err = io.EOF
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the read returned (%v) before any data was sent", err)
	case <-time.After(30 * time.Millisecond):
	}
	return done
}

func waitErr(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(testbudget.Scale(5 * time.Second)):
		t.Fatalf("%s: the waiter never returned", what)
		return nil
	}
}

// awaitCount waits until n is above zero.
func awaitCount(t *testing.T, n *atomic.Int64, what string) {
	t.Helper()
	deadline := time.Now().Add(testbudget.Scale(5 * time.Second))
	for n.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%s: never happened", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSockReadBothWays: a read waits for data in the network poller (direct off) and in
// ppoll (direct on), and sees the bytes in both.
func TestSockReadBothWays(t *testing.T) {
	s, peer := sockPair(t)
	for _, direct := range []bool{false, true, false} {
		s.setDirect(direct)
		buf := make([]byte, 8)
		done := readAfter(t, s, buf)
		if _, err := peer.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		if err := waitErr(t, done, "read"); err != nil {
			t.Fatalf("direct %v: %v", direct, err)
		}
		if string(buf[:4]) != "ping" {
			t.Fatalf("direct %v: read %q, want ping", direct, buf[:4])
		}
	}
}

// TestSockKick: a past read deadline ends a direct wait with os.ErrDeadlineExceeded (a
// leader's kick), and clearing it lets the next wait block again.
func TestSockKick(t *testing.T) {
	s, peer := sockPair(t)
	s.setDirect(true)
	done := readAfter(t, s, make([]byte, 8))
	s.SetReadDeadline(aLongTimeAgo)
	if err := waitErr(t, done, "kicked read"); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("kicked read: %v, want os.ErrDeadlineExceeded", err)
	}
	s.SetReadDeadline(time.Time{})
	buf := make([]byte, 8)
	done = readAfter(t, s, buf)
	peer.Write([]byte("x"))
	if err := waitErr(t, done, "read after the kick"); err != nil || buf[0] != 'x' {
		t.Fatalf("read after the kick: %v, %q", err, buf[:1])
	}
}

// TestSockCloseWakes: Close ends a read waiting in either way and a write waiting for
// room with net.ErrClosed, and the socket's descriptor is closed once they are gone.
func TestSockCloseWakes(t *testing.T) {
	for _, direct := range []bool{false, true} {
		s, peer := sockPair(t)
		s.setDirect(direct)
		reading := readAfter(t, s, make([]byte, 8))
		// Fill the socket until a write would block, then wait for room.
		chunk := make([]byte, 1<<20)
		writing := make(chan error, 1)
		go func() {
			writing <- s.Write(func(fd uintptr) bool {
				_, err := unix.Write(int(fd), chunk)
				return err != unix.EAGAIN
			})
		}()
		time.Sleep(30 * time.Millisecond)
		s.Close()
		if err := waitErr(t, reading, "read at Close"); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("direct %v: read at Close: %v, want net.ErrClosed", direct, err)
		}
		if err := waitErr(t, writing, "write at Close"); err != nil && !errors.Is(err, net.ErrClosed) {
			t.Fatalf("direct %v: write at Close: %v, want nil or net.ErrClosed", direct, err)
		}
		if st := s.state.Load(); st != 1 {
			t.Fatalf("direct %v: state %#x after the waiters left, want closed with no operation", direct, st)
		}
		// The socket itself is closed: the peer reads to the end of the stream.
		peer.SetReadDeadline(time.Now().Add(testbudget.Scale(5 * time.Second)))
		if _, err := io.Copy(io.Discard, peer); err != nil {
			t.Fatalf("direct %v: the peer's read did not end at the close: %v", direct, err)
		}
		if err := s.Control(func(uintptr) {}); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Control after Close: %v, want net.ErrClosed", err)
		}
	}
}

// TestSockCloseKeepsFDWhileInUse: a Close during an operation does not close the
// descriptor under it; the operation's end does.
func TestSockCloseKeepsFDWhileInUse(t *testing.T) {
	s, _ := sockPair(t)
	var inside error
	s.Control(func(fd uintptr) {
		s.Close()
		_, inside = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TYPE)
	})
	if inside != nil {
		t.Fatalf("the descriptor was closed under Control: %v", inside)
	}
	if st := s.state.Load(); st != 1 {
		t.Fatalf("state after the last operation %#x, want closed with no references", st)
	}
}

// TestSockSpin: a direct read with a spin budget keeps trying the socket and takes data
// that comes within the budget without waiting in ppoll; past the budget it waits there;
// a kick and Close end a spin as they end a wait; it does not spin while its quiet gate
// (the connection has frames to send) is closed.
func TestSockSpin(t *testing.T) {
	s, peer := sockPair(t)
	s.setDirect(true)
	s.spin = time.Minute // longer than the test: only data, a kick or Close ends it
	buf := make([]byte, 8)
	done := readAfter(t, s, buf)
	peer.Write([]byte("spun"))
	if err := waitErr(t, done, "spinning read"); err != nil || string(buf[:4]) != "spun" {
		t.Fatalf("spinning read: %v, %q", err, buf[:4])
	}
	if n := s.spinHits; n != 1 {
		t.Fatalf("%d reads served by the spin, want 1", n)
	}

	done = readAfter(t, s, buf)
	s.SetReadDeadline(aLongTimeAgo)
	if err := waitErr(t, done, "kicked spin"); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("kicked spin: %v, want os.ErrDeadlineExceeded", err)
	}
	s.SetReadDeadline(time.Time{})

	s.spin = time.Millisecond // spent long before the data comes: the read waits in ppoll
	done = readAfter(t, s, buf)
	peer.Write([]byte("late"))
	if err := waitErr(t, done, "read after the spin"); err != nil || string(buf[:4]) != "late" {
		t.Fatalf("read after the spin: %v, %q", err, buf[:4])
	}
	if n := s.spinHits; n != 1 {
		t.Fatalf("%d reads served by the spin, want still 1", n)
	}

	// While the connection has frames to send, the read waits in ppoll at once; a gate
	// that closes during a spin ends it. The data is sent only once the read has seen the
	// gate closed, so a descheduled reader cannot take it in a spin.
	var quiet atomic.Bool
	var sawOpen, sawClosed atomic.Int64
	s.quiet = func() bool {
		q := quiet.Load()
		if q {
			sawOpen.Add(1)
		} else {
			sawClosed.Add(1)
		}
		return q
	}
	s.spin = time.Minute
	for _, c := range []struct {
		what    string
		closing bool
	}{{"sending", false}, {"sending from mid-spin", true}} {
		quiet.Store(c.closing)
		sawOpen.Store(0)
		sawClosed.Store(0)
		done = readAfter(t, s, buf)
		if c.closing {
			awaitCount(t, &sawOpen, c.what+": the spin starting")
			quiet.Store(false)
		}
		awaitCount(t, &sawClosed, c.what+": the read seeing the gate closed")
		peer.Write([]byte("busy"))
		if err := waitErr(t, done, c.what); err != nil || string(buf[:4]) != "busy" {
			t.Fatalf("%s: %v, %q", c.what, err, buf[:4])
		}
		if n := s.spinHits; n != 1 {
			t.Fatalf("%s: %d reads served by the spin, want still 1", c.what, n)
		}
	}
	quiet.Store(true)
	done = readAfter(t, s, buf)
	peer.Write([]byte("idle"))
	if err := waitErr(t, done, "quiet again"); err != nil || string(buf[:4]) != "idle" || s.spinHits != 2 {
		t.Fatalf("quiet again: %v, %q, %d reads served by the spin, want 2", err, buf[:4], s.spinHits)
	}

	done = readAfter(t, s, buf)
	s.Close()
	if err := waitErr(t, done, "spin at Close"); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("spin at Close: %v, want net.ErrClosed", err)
	}
}

// TestSockReaderSpin: a read of the reader goroutine (direct off) with a spin budget
// keeps trying the socket while its gate says the process is otherwise idle, and takes
// data that comes meanwhile without parking in the network poller. A gate that closes
// (before the read or during its spin), a spent budget and a kick send it to the poller,
// which still serves it; Close ends it.
func TestSockReaderSpin(t *testing.T) {
	s, peer := sockPair(t)
	var open atomic.Bool
	open.Store(true)
	s.idle = open.Load
	buf := make([]byte, 8)
	read := func(what, data string, hits int64) {
		t.Helper()
		misses, before := s.spinMisses.Load(), s.spinHits
		done := readAfter(t, s, buf)
		switch what {
		case "gate closing":
			open.Store(false)
		case "kick":
			s.SetReadDeadline(aLongTimeAgo)
		}
		if hits == before { // the spin must end without data: wait until it has
			for deadline := time.Now().Add(testbudget.Scale(10 * time.Second)); s.spinMisses.Load() == misses; {
				if time.Now().After(deadline) {
					t.Fatalf("%s: the spin did not end", what)
				}
				time.Sleep(time.Millisecond)
			}
		}
		if _, err := peer.Write([]byte(data)); err != nil {
			t.Fatal(err)
		}
		if err := waitErr(t, done, what); err != nil || string(buf[:len(data)]) != data {
			t.Fatalf("%s: %v, %q", what, err, buf[:len(data)])
		}
		if s.spinHits != hits {
			t.Fatalf("%s: %d reads served by the spin, want %d", what, s.spinHits, hits)
		}
	}

	s.spin = time.Minute // longer than the test: only data, the gate, a kick or Close end it
	read("idle process", "spun", 1)
	read("gate closing", "gate", 1)
	read("gate closed", "shut", 1)
	open.Store(true)
	read("kick", "kick", 1)
	s.SetReadDeadline(time.Time{})
	s.spin = time.Millisecond // spent long before the data comes
	read("budget spent", "late", 1)
	s.spin = time.Minute
	read("idle again", "anew", 2)

	done := readAfter(t, s, buf)
	s.Close()
	if err := waitErr(t, done, "spin at Close"); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("spin at Close: %v, want net.ErrClosed", err)
	}
}

// TestOthersIdle: the reader's gate sees a goroutine that computes, and sees the process
// quiet again once it stops.
func TestOthersIdle(t *testing.T) {
	var sched schedSamples
	quiet := func() bool {
		for end := time.Now().Add(testbudget.Scale(5 * time.Second)); time.Now().Before(end); time.Sleep(time.Millisecond) {
			if othersIdle(&sched) {
				return true
			}
		}
		return false
	}
	if !quiet() {
		t.Fatal("the test process never looked idle")
	}
	var stop atomic.Bool
	started, ended := make(chan struct{}), make(chan struct{})
	go func() {
		close(started)
		for n := 0; !stop.Load(); n++ {
		}
		close(ended)
	}()
	<-started
	busy := 0
	for range 100 {
		if !othersIdle(&sched) {
			busy++
		}
	}
	stop.Store(true)
	<-ended
	// The count is the runtime's approximation (a goroutine between states is in
	// neither count): allow a few misses.
	if busy < 90 {
		t.Errorf("a computing goroutine was seen in %d of 100 reads, want at least 90", busy)
	}
	if !quiet() {
		t.Error("the process never looked idle after the goroutine stopped")
	}
}

// TestSpinOf: only a hybrid wait gives its leaders a spin, of Config.Spin.
func TestSpinOf(t *testing.T) {
	for _, c := range []struct {
		mode verbs.WaitMode
		spin time.Duration
		want time.Duration
	}{
		{verbs.WaitHybrid, 50 * time.Microsecond, 50 * time.Microsecond},
		{verbs.WaitBlock, 50 * time.Microsecond, 0},
		{verbs.WaitSpin, 50 * time.Microsecond, 0},
		{verbs.WaitHybrid, -time.Second, 0},
	} {
		if got := spinOf(c.mode, c.spin); got != c.want {
			t.Errorf("spinOf(%v, %v) = %v, want %v", c.mode, c.spin, got, c.want)
		}
	}
}

// TestFrameReaderPoll: in poll mode a header read that finds nothing, or only part of a
// header, fails with errNothing at once and keeps what arrived; a frame that has begun is
// read to its end, waiting for the rest of its payload.
func TestFrameReaderPoll(t *testing.T) {
	s, peer := sockPair(t)
	s.setDirect(true)
	f := newFrameReader(nil, s)
	f.poll = true
	if _, err := f.header(); !errors.Is(err, errNothing) {
		t.Fatalf("header with nothing sent: %v, want errNothing", err)
	}
	pay := bytes.Repeat([]byte("poll"), 2500) // 10000 B: partly buffered, partly direct
	frame := append(encode(header{op: opSend, payloadLen: uint32(len(pay))}), pay...)
	write := func(b []byte) {
		t.Helper()
		if _, err := peer.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	write(frame[:10])
	for end := time.Now().Add(testbudget.Scale(5 * time.Second)); f.buffered() < 10; {
		if _, err := f.header(); !errors.Is(err, errNothing) {
			t.Fatalf("header with 10 bytes sent: %v, want errNothing", err)
		}
		if time.Now().After(end) {
			t.Fatalf("%d bytes buffered, want 10", f.buffered())
		}
	}
	write(frame[10 : hdrSize+100])
	var h header
	for end := time.Now().Add(testbudget.Scale(5 * time.Second)); ; {
		var err error
		if h, err = f.header(); err == nil {
			break
		} else if !errors.Is(err, errNothing) || time.Now().After(end) {
			t.Fatalf("header once sent: %v", err)
		}
	}
	if h.op != opSend || int(h.payloadLen) != len(pay) {
		t.Fatalf("header %+v", h)
	}
	got := make([]byte, len(pay))
	done := make(chan error, 1)
	go func() { done <- f.readFull(got) }()
	select {
	case err := <-done:
		t.Fatalf("the payload read returned (%v) before the rest was sent", err)
	case <-time.After(30 * time.Millisecond):
	}
	write(frame[hdrSize+100:])
	if err := waitErr(t, done, "payload"); err != nil || !bytes.Equal(got, pay) {
		t.Fatalf("payload: %v, equal %v", err, bytes.Equal(got, pay))
	}
}

// TestReaderSpinSoleOnly: a connection's reader may spin only while it is alone on its
// CQ, as a leader may only lead such one: with a second connection on the CQ (a rank with
// several peers, which on hosts sharing cores would spin one reader per process) its gate
// stays shut.
func TestReaderSpinSoleOnly(t *testing.T) {
	cfg := testCfg()
	cfg.Wait, cfg.Spin = verbs.WaitHybrid, 50*time.Microsecond
	a := newSide(t, openDev(t, cfg), verbs.QPAttr{})
	b := newSide(t, openDev(t, cfg), verbs.QPAttr{})
	connect(t, a, b)
	cn, ac := qconnOf(t, a), a.cq.(*cq)
	if cn.c.spin != cfg.Spin {
		t.Fatalf("the reader's spin budget is %v, want %v", cn.c.spin, cfg.Spin)
	}
	if !cn.soleOnCQ() {
		t.Fatal("a connection alone on its CQ is not its sole one")
	}
	// A second QP of a on the same CQ, to a third device.
	qp2, err := a.pd.CreateQP(verbs.QPAttr{SendCQ: a.cq, RecvCQ: a.cq})
	if err != nil {
		t.Fatal(err)
	}
	if err := qp2.ToInit(); err != nil {
		t.Fatal(err)
	}
	c := newSide(t, openDev(t, cfg), verbs.QPAttr{})
	connect(t, &side{dev: a.dev, pd: a.pd, cq: a.cq, qp: qp2}, c)
	if cn.soleOnCQ() || ac.solo.Load() != nil {
		t.Fatal("a CQ with two connections still has a sole one")
	}
	for range 100 { // whatever the rest of the process does
		if cn.c.idle() {
			t.Fatal("the spin gate of a connection that shares its CQ opened")
		}
	}
}
