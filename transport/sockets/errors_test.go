package sockets

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// wantOpError checks that err is a *net.OpError for op on "shm" whose text has want.
func wantOpError(t *testing.T, err error, op, want string) {
	t.Helper()
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != op || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v; want a %s *net.OpError saying %q", err, op, want)
	}
}

func TestAPIErrors(t *testing.T) {
	_, err := Dial("shm", "nobody/listens/here")
	wantOpError(t, err, "dial", "no listener named")
	_, err = Dial("shm", "bad name")
	wantOpError(t, err, "dial", "A-Z a-z 0-9")
	_, err = Listen("shm", strings.Repeat("x", 101))
	wantOpError(t, err, "listen", "1 to 100 bytes")
	_, err = Dial("udp", "x")
	if !errors.As(err, new(net.UnknownNetworkError)) {
		t.Fatalf("Dial on udp: %v", err)
	}
	_, err = Listen("sctp", "x")
	wantOpError(t, err, "listen", "unknown network")
	_, name := listen(t, nil)
	_, err = Listen("shm", name)
	wantOpError(t, err, "listen", "already exists")
	lc := ListenConfig{RingSize: 5000}
	_, err = lc.Listen(t.Context(), "shm", uniqueName(t))
	wantOpError(t, err, "listen", "RingSize")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = DialContext(ctx, "shm", name)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Dial with a cancelled context: %v", err)
	}
}

// TestCorruptRing: a peer that writes an impossible tail makes Read fail with a
// protocol error, for good, without touching memory outside the ring.
func TestCorruptRing(t *testing.T) {
	d, a := pair(t, nil)
	d.out.tail.Store(1 << 40) // the peer's own mapping of a's inbound ring
	_, err := a.Read(make([]byte, 10))
	wantOpError(t, err, "read", "corrupted")
	_, err = a.Read(make([]byte, 10))
	wantOpError(t, err, "read", "corrupted")
	_, err = a.Write([]byte("x"))
	wantOpError(t, err, "write", "corrupted")
}

// fakeListener answers one dialer with the reply and descriptors that serve makes.
func fakeListener(t *testing.T, serve func(c *net.UnixConn)) string {
	name := uniqueName(t)
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Net: "unix", Name: "@" + abstractPrefix + name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ul.Close() })
	go func() {
		c, err := ul.AcceptUnix()
		if err != nil {
			return
		}
		defer c.Close()
		c.Read(make([]byte, messageSize))
		serve(c)
		c.Read(make([]byte, messageSize)) // until the dialer hangs up
	}()
	return name
}

// TestHostileListener: the dialer refuses every malformed reply and bad segment with an
// error (and closes what it was sent).
func TestHostileListener(t *testing.T) {
	ok := message{version: protocolVersion, kind: kindReply, ringSize: minRingSize}.encode()
	sendFD := func(c *net.UnixConn, fd int) {
		c.WriteMsgUnix(ok[:], unix.UnixRights(fd), nil)
		unix.Close(fd)
	}
	memfd := func(size int, seal bool, header bool) int {
		fd, _ := unix.MemfdCreate("t", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
		unix.Ftruncate(fd, int64(size))
		if header {
			b := make([]byte, 64)
			writeHeader(b, minRingSize)
			unix.Pwrite(fd, b, 0)
		}
		if seal {
			unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW)
		}
		return fd
	}
	for _, tc := range []struct {
		name, want string
		serve      func(c *net.UnixConn)
	}{
		{"hang up", "closed the connection", func(c *net.UnixConn) { c.Close() }},
		{"garbage", "bad magic", func(c *net.UnixConn) { c.Write([]byte("HTTP/1.1 400 Bad Request\r\n")) }},
		{"no descriptor", "descriptors", func(c *net.UnixConn) { c.Write(ok[:]) }},
		{"a pipe", "not a sealable memfd", func(c *net.UnixConn) {
			var p [2]int
			unix.Pipe2(p[:], unix.O_CLOEXEC)
			unix.Close(p[0])
			sendFD(c, p[1])
		}},
		{"unsealed", "not sealed", func(c *net.UnixConn) { sendFD(c, memfd(segmentSize(minRingSize), false, true)) }},
		{"short", "want", func(c *net.UnixConn) { sendFD(c, memfd(headerSize, true, true)) }},
		{"no header", "bad magic", func(c *net.UnixConn) { sendFD(c, memfd(segmentSize(minRingSize), true, false)) }},
		{"huge ring", "ring size", func(c *net.UnixConn) {
			r := message{version: protocolVersion, kind: kindReply, ringSize: 1 << 31}.encode()
			c.Write(r[:])
		}},
		{"silent", "in time", func(c *net.UnixConn) { time.Sleep(time.Second) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fds := openFDs(t)
			name := fakeListener(t, tc.serve)
			d := Dialer{Timeout: 200 * time.Millisecond}
			_, err := d.DialContext(t.Context(), "shm", name)
			wantOpError(t, err, "dial", tc.want)
			if tc.name != "silent" {
				settle(t, fds+2, 1<<30) // the fake listener's two sockets
			}
		})
	}
}
