package sockets

import (
	"io"
	"net"
	"testing"
)

// TestNoAllocs: Read and Write on a busy connection allocate nothing.
func TestNoAllocs(t *testing.T) {
	d, a := pair(t, nil)
	msg, buf := make([]byte, 64), make([]byte, 64)
	allocs := testing.AllocsPerRun(1000, func() {
		d.Write(msg)
		io.ReadFull(a, buf)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per Write+Read, want 0", allocs)
	}
}

// roundTrip measures a ping-pong of size bytes between c and an echo on e.
func roundTrip(b *testing.B, c, e net.Conn, size int) {
	go func() {
		buf := make([]byte, size)
		for {
			if _, err := io.ReadFull(e, buf); err != nil {
				return
			}
			if _, err := e.Write(buf); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, size)
	b.SetBytes(int64(size))
	b.ResetTimer()
	for b.Loop() {
		c.Write(buf)
		io.ReadFull(c, buf)
	}
}

// stream measures one-way throughput in writes of size bytes from c to a sink on e.
func stream(b *testing.B, c, e net.Conn, size int) {
	done := make(chan struct{})
	go func() {
		io.Copy(io.Discard, e)
		close(done)
	}()
	buf := make([]byte, size)
	b.SetBytes(int64(size))
	b.ResetTimer()
	for b.Loop() {
		c.Write(buf)
	}
	c.(interface{ CloseWrite() error }).CloseWrite()
	<-done
}

// unixPair is the Unix-socket floor the shm benchmarks compare with.
func unixPair(b *testing.B) (net.Conn, net.Conn) {
	l, err := net.Listen("unix", "@"+uniqueName(b))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	ch := make(chan net.Conn, 1)
	go func() { c, _ := l.Accept(); ch <- c }()
	c, err := net.Dial("unix", l.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	e := <-ch
	b.Cleanup(func() { c.Close(); e.Close() })
	return c, e
}

func BenchmarkRoundTrip64(b *testing.B) {
	b.Run("shm", func(b *testing.B) { c, e := pair(b, nil); roundTrip(b, c, e, 64) })
	b.Run("unix", func(b *testing.B) { c, e := unixPair(b); roundTrip(b, c, e, 64) })
}

func BenchmarkStream64K(b *testing.B) {
	b.Run("shm", func(b *testing.B) { c, e := pair(b, nil); stream(b, c, e, 64<<10) })
	b.Run("unix", func(b *testing.B) { c, e := unixPair(b); stream(b, c, e, 64<<10) })
}
