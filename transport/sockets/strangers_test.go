package sockets

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// rawDial connects to the rendezvous socket of the listener called name, bypassing the
// handshake.
func rawDial(t testing.TB, name string) *net.UnixConn {
	t.Helper()
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Net: "unix", Name: "@" + abstractPrefix + name})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// serveGood checks that the listener still hands out a working connection.
func serveGood(t testing.TB, l net.Listener, name string) {
	t.Helper()
	ac := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			t.Error(err)
		}
		ac <- c
	}()
	d, err := Dial("shm", name)
	if err != nil {
		t.Fatal(err)
	}
	a := <-ac
	if a == nil {
		t.FailNow()
	}
	d.Write([]byte{42})
	b := make([]byte, 1)
	if _, err := io.ReadFull(a, b); err != nil || b[0] != 42 {
		t.Fatalf("good client after a stranger: %v", err)
	}
	d.Close()
	a.Close()
}

// replyTo reads the listener's answer to a raw client: its status, or -1 if it hung up.
func replyTo(t *testing.T, c *net.UnixConn) int {
	var b [messageSize]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return -1
	}
	m, err := decodeMessage(b[:], kindReply)
	if err != nil {
		t.Fatalf("listener's reply does not decode: %v", err)
	}
	return int(m.status)
}

func TestStrangers(t *testing.T) {
	l, name := listen(t, nil)
	hello := message{version: protocolVersion, kind: kindHello}.encode()
	badMagic := hello
	badMagic[0] = 'X'
	badVersion := message{version: protocolVersion + 1, kind: kindHello}.encode()
	badRing := message{version: protocolVersion, kind: kindHello, ringSize: 12345}.encode()
	for _, tc := range []struct {
		name   string
		send   []byte
		status int // the listener's answer; -1: it hangs up
	}{
		{"http request", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), statusBadHello},
		{"wrong magic", badMagic[:], statusBadHello},
		{"wrong version", badVersion[:], statusBadVersion},
		{"bad ring size", badRing[:], statusBadHello},
		{"half a hello", hello[:5], -2},
		{"hello then hang up", hello[:], -2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := rawDial(t, name)
			c.Write(tc.send)
			if tc.status == -2 {
				c.Close()
			} else {
				if got := replyTo(t, c); got != tc.status {
					t.Errorf("listener answered %d, want %d", got, tc.status)
				}
				c.Close()
			}
			serveGood(t, l, name)
		})
	}
	t.Run("stalled client", func(t *testing.T) {
		c := rawDial(t, name)
		defer c.Close()
		serveGood(t, l, name)
	})
}

func TestRefusedUID(t *testing.T) {
	defer func(f func() int) { euid = f }(euid)
	euid = func() int { return os.Geteuid() + 4242 }
	_, name := listen(t, nil)
	_, err := Dial("shm", name)
	if err == nil || !strings.Contains(err.Error(), "AllowUIDs") {
		t.Fatalf("Dial as a stranger: %v", err)
	}
	_, name = listen(t, &ListenConfig{AllowUIDs: []uint32{uint32(os.Geteuid())}})
	c, err := Dial("shm", name)
	if err != nil {
		t.Fatalf("Dial as an allowed uid: %v", err)
	}
	c.Close()
}

func openFDs(t testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// settle waits until the process is back to at most fds descriptors and goroutines
// goroutines; the guard only turns a leak into a failure instead of a hang.
func settle(t *testing.T, fds, goroutines int) {
	t.Helper()
	guard := time.Now().Add(testbudget.Scale(20 * time.Second))
	for {
		f, g := openFDs(t), runtime.NumGoroutine()
		if f <= fds && g <= goroutines {
			return
		}
		if time.Now().After(guard) {
			t.Fatalf("leak: %d fds (was %d), %d goroutines (was %d)", f, fds, g, goroutines)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestManyConnections opens and closes 10,000 connections, good ones and strangers, and
// checks that descriptors and goroutines come back and the listener still serves.
func TestManyConnections(t *testing.T) {
	n := 10_000
	if testing.Short() {
		n = 1000
	}
	l, name := listen(t, &ListenConfig{RingSize: minRingSize})
	serveGood(t, l, name) // warm up whatever the runtime starts once
	fds, goroutines := openFDs(t), runtime.NumGoroutine()
	hello := message{version: protocolVersion, kind: kindHello}.encode()
	for i := range n {
		switch i % 10 {
		case 0:
			serveGood(t, l, name)
		case 1, 2, 3:
			rawDial(t, name).Close()
		case 4, 5, 6:
			c := rawDial(t, name)
			c.Write(hello[:])
			c.Close()
		default:
			c := rawDial(t, name)
			c.Write([]byte("garbage garbage!"))
			c.Close()
		}
	}
	settle(t, fds, goroutines)
	serveGood(t, l, name)
}

// TestAcceptErrors: accept errors such as EMFILE do not end the listener.
func TestAcceptErrors(t *testing.T) {
	fails := 3
	acceptHook = func(ul *net.UnixListener) (*net.UnixConn, error) {
		if fails > 0 { // only the accept loop calls the hook
			fails--
			return nil, &net.OpError{Op: "accept", Net: "unix", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
		}
		return ul.AcceptUnix()
	}
	l, name := listen(t, nil)
	serveGood(t, l, name)
	l.Close()
	acceptHook = nil
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v", err)
	}
}

// TestListenerClose: a connection the acceptor closes reads io.EOF at the dialer, Close
// unblocks Accept, and the name is free afterwards.
func TestListenerClose(t *testing.T) {
	l, name := listen(t, nil)
	d, err := Dial("shm", name)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	errc := make(chan error, 1)
	go func() {
		// Take the pending connection first, then block.
		c, err := l.Accept()
		if err == nil {
			c.Close()
			_, err = l.Accept()
		}
		errc <- err
	}()
	if _, err := d.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("Read on a connection the listener closed: %v", err)
	}
	l.Close()
	if err := <-errc; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept blocked across Close: %v", err)
	}
	if _, err := Dial("shm", name); err == nil || !strings.Contains(err.Error(), "no listener") {
		t.Fatalf("Dial after the listener closed: %v", err)
	}
}

// TestListenerCloseUnaccepted: Close resets a connection that was handshaken but never
// accepted, as TCP does.
func TestListenerCloseUnaccepted(t *testing.T) {
	l, name := listen(t, nil)
	d, err := Dial("shm", name)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	l.Close()
	if _, err := d.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("Read on a connection never accepted after the listener closed: %v", err)
	}
}
