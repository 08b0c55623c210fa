package sockets

import (
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"testing"
)

var nameSeq atomic.Int64

// uniqueName returns a listener name no other test of this process uses.
func uniqueName(t testing.TB) string {
	return fmt.Sprintf("test/%d/%s/%d", os.Getpid(), t.Name(), nameSeq.Add(1))
}

// listen starts a listener on a unique name that the test closes at its end.
func listen(t testing.TB, lc *ListenConfig) (net.Listener, string) {
	t.Helper()
	name := uniqueName(t)
	if lc == nil {
		lc = &ListenConfig{}
	}
	l, err := lc.Listen(t.Context(), "shm", name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, name
}

// pair returns a connected (dialer, acceptor) pair; the test closes both at its end.
func pair(t testing.TB, lc *ListenConfig) (*Conn, *Conn) {
	t.Helper()
	l, name := listen(t, lc)
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := l.Accept()
		ch <- res{c, err}
	}()
	d, err := Dial("shm", name)
	if err != nil {
		t.Fatal(err)
	}
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { d.Close(); r.c.Close() })
	return d.(*Conn), r.c.(*Conn)
}

// readPattern reads c until io.EOF with reads of bufSize bytes, checking that byte k is
// pattern(k) and that total bytes came.
func readPattern(t *testing.T, c net.Conn, bufSize int, total int64) {
	t.Helper()
	buf := make([]byte, bufSize)
	var off int64
	for {
		n, err := c.Read(buf)
		for i := range n {
			if buf[i] != pattern(off+int64(i)) {
				t.Fatalf("byte %d is %#x, want %#x", off+int64(i), buf[i], pattern(off+int64(i)))
			}
		}
		off += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if off != total {
		t.Fatalf("read %d bytes, want %d", off, total)
	}
}
