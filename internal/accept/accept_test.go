package accept

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// served is a loopback TCP listener run by Serve, with what Serve hands over and reports.
type served struct {
	addr     string
	conns    chan net.Conn // handed to the Handler
	releases chan func()   // their release functions, in the same order
	shed     chan net.Addr // Config.Shed's reports
	errs     chan error    // Config.Retry's reports (the first ones)
	done     chan struct{} // closed when Serve returns
	cancel   context.CancelFunc
}

// serve starts Serve on a new loopback listener with a pending bound of maxPending.
func serve(t *testing.T, maxPending int) *served {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &served{addr: ln.Addr().String(), conns: make(chan net.Conn, 64), releases: make(chan func(), 64),
		shed: make(chan net.Addr, 64), errs: make(chan error, 64), done: make(chan struct{})}
	cfg := Config{MaxPending: maxPending,
		Shed: func(c net.Conn) { s.shed <- c.RemoteAddr() },
		Retry: func(err error, _ time.Duration) {
			select {
			case s.errs <- err:
			default: // enough kept
			}
		}}
	var ctx context.Context
	ctx, s.cancel = context.WithCancel(context.Background())
	go func() {
		defer close(s.done)
		Serve(ctx, ln, cfg, func(c net.Conn, release func()) {
			s.conns <- c
			s.releases <- release
		})
	}()
	t.Cleanup(func() {
		s.cancel()
		<-s.done
		for len(s.conns) > 0 {
			(<-s.conns).Close()
		}
	})
	return s
}

func (s *served) dial(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip checks that a byte written on client arrives on server.
func roundTrip(t *testing.T, client, server net.Conn) {
	t.Helper()
	if _, err := client.Write([]byte{42}); err != nil {
		t.Fatalf("write: %v", err)
	}
	b := make([]byte, 1)
	if _, err := io.ReadFull(server, b); err != nil || b[0] != 42 {
		t.Fatalf("read %v, %v; want 42", b, err)
	}
}

// TestRecoversFromEMFILE fills the process's descriptor table (under a lowered
// RLIMIT_NOFILE) so that Accept fails with EMFILE on a real pending connection, then
// frees the table: Serve must report EMFILE, keep going, and hand that connection over.
func TestRecoversFromEMFILE(t *testing.T) {
	s := serve(t, 0)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	open, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count open descriptors: %v", err)
	}
	low := lim
	low.Cur = min(lim.Cur, uint64(len(open)+256))
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)

	var fill []int
	defer func() {
		for _, fd := range fill {
			syscall.Close(fd)
		}
	}()
	for {
		fd, err := syscall.Open("/dev/null", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if errors.Is(err, syscall.EMFILE) {
			break
		}
		if err != nil {
			t.Fatalf("filling the descriptor table: %v", err)
		}
		fill = append(fill, fd)
	}
	// One free descriptor for the client's socket: the server's accept finds none.
	syscall.Close(fill[len(fill)-1])
	fill = fill[:len(fill)-1]
	client := s.dial(t)
	err = <-s.errs
	if !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("Retry got %v, want EMFILE", err)
	}
	for _, fd := range fill {
		syscall.Close(fd)
	}
	fill = nil
	server := <-s.conns
	defer server.Close()
	roundTrip(t, client, server)
}

// TestMaxPending holds two connections pending under a bound of 2: a third is closed at
// once and reported, and once one is released a fourth is handed over.
func TestMaxPending(t *testing.T) {
	s := serve(t, 2)
	var held []net.Conn
	for range 2 {
		s.dial(t)
		held = append(held, <-s.conns)
	}
	third := s.dial(t)
	if a := <-s.shed; a.String() != third.LocalAddr().String() {
		t.Errorf("shed %v, want the third connection %v", a, third.LocalAddr())
	}
	third.SetReadDeadline(time.Now().Add(time.Minute))
	if n, err := third.Read(make([]byte, 1)); err == nil {
		t.Errorf("the shed connection read %d bytes, want it closed", n)
	}
	release := <-s.releases
	release()
	release() // a second call changes nothing
	fourth := s.dial(t)
	server := <-s.conns
	roundTrip(t, fourth, server)
	fifth := s.dial(t)
	if a := <-s.shed; a.String() != fifth.LocalAddr().String() {
		t.Errorf("shed %v, want the fifth connection %v (two pending again)", a, fifth.LocalAddr())
	}
	for _, c := range append(held, server) {
		c.Close()
	}
}

// failing is a listener whose Accept always fails with err until it is closed.
type failing struct {
	err    error
	closed chan struct{}
}

func (f *failing) Accept() (net.Conn, error) {
	select {
	case <-f.closed:
		return nil, net.ErrClosed
	default:
		return nil, f.err
	}
}

func (f *failing) Close() error {
	select {
	case <-f.closed:
		return net.ErrClosed
	default:
		close(f.closed)
		return nil
	}
}

func (f *failing) Addr() net.Addr { return &net.TCPAddr{} }

// TestBackoffAndStop checks the back-off sequence of a listener that keeps failing, and
// that ending the context stops Serve during a back-off and closes the listener (in a
// synctest bubble: the back-offs pass on its fake clock).
func TestBackoffAndStop(t *testing.T) {
	synctest.Test(t, testBackoffAndStop)
}

func testBackoffAndStop(t *testing.T) {
	ln := &failing{err: syscall.ENFILE, closed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	var got []time.Duration
	want := []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond,
		40 * time.Millisecond, 80 * time.Millisecond, 160 * time.Millisecond, 320 * time.Millisecond,
		640 * time.Millisecond, time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Serve(ctx, ln, Config{Retry: func(err error, d time.Duration) {
			if !errors.Is(err, syscall.ENFILE) {
				t.Errorf("Retry got %v, want ENFILE", err)
			}
			got = append(got, d)
			if len(got) == len(want) {
				cancel() // Serve is about to wait MaxBackoff: the cancel must cut it short
			}
		}}, func(c net.Conn, _ func()) { t.Error("a failing listener handed over a connection") })
	}()
	<-done
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("back-offs %v, want %v", got, want)
		}
	}
	select {
	case <-ln.closed:
	default:
		t.Error("Serve returned on a cancelled context without closing the listener")
	}
}

// TestCloseEndsServe closes the listener itself: Serve returns without a Retry.
func TestCloseEndsServe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Serve(context.Background(), ln, Config{Retry: func(err error, _ time.Duration) {
			t.Errorf("Retry(%v) on a closed listener", err)
		}}, func(c net.Conn, _ func()) { c.Close() })
	}()
	ln.Close()
	<-done
}
