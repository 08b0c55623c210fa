package sockets

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

// isTimeout reports whether err is a deadline error as net reports one.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() && errors.Is(err, os.ErrDeadlineExceeded)
}

// fill writes into c until its ring is full (the peer reads nothing), and returns the
// bytes written. Each Write stops at a short write deadline.
func fill(t *testing.T, c *Conn) int {
	t.Helper()
	total := 0
	for {
		free, err := c.out.writable()
		if err != nil {
			t.Fatalf("filling the ring: %v", err)
		}
		if free == 0 {
			break
		}
		// A Write that starts after its deadline writes nothing (a descheduled test on a
		// loaded host): write again until the ring has no free byte.
		c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
		n, err := c.Write(make([]byte, 1<<20))
		total += n
		if !isTimeout(err) {
			t.Fatalf("filling the ring: %d, %v; want a timeout", n, err)
		}
	}
	c.SetWriteDeadline(time.Time{})
	return total
}

func TestPastDeadline(t *testing.T) {
	d, a := pair(t, nil)
	d.Write([]byte("x"))
	a.SetReadDeadline(time.Now().Add(-time.Second))
	if _, err := a.Read(make([]byte, 1)); !isTimeout(err) {
		t.Fatalf("Read past deadline: %v", err)
	}
	d.SetWriteDeadline(time.Unix(0, 0))
	if n, err := d.Write([]byte("y")); n != 0 || !isTimeout(err) {
		t.Fatalf("Write past deadline: %d, %v", n, err)
	}
	a.SetReadDeadline(time.Time{})
	if b := make([]byte, 2); true {
		if n, err := a.Read(b); err != nil || string(b[:n]) != "x" {
			t.Fatalf("Read after clearing the deadline: %q, %v", b[:n], err)
		}
	}
}

// TestDeadlineWhileBlocked: a deadline set while Read or Write is blocked ends it.
func TestDeadlineWhileBlocked(t *testing.T) {
	_, a := pair(t, &ListenConfig{RingSize: minRingSize})
	errc := make(chan error, 2)
	go func() { _, err := a.Read(make([]byte, 8)); errc <- err }()
	go func() {
		n, err := a.Write(make([]byte, 4*minRingSize))
		if err != nil && n != minRingSize {
			err = errors.Join(err, errors.New("short count"))
		}
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond) // let both block (the test holds either way)
	a.SetDeadline(time.Now())
	for range 2 {
		if err := <-errc; !isTimeout(err) {
			t.Errorf("blocked op after SetDeadline: %v", err)
		}
	}
}

func TestHalfClose(t *testing.T) {
	d, a := pair(t, nil)
	d.Write([]byte("abc"))
	if err := d.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(a)
	if err != nil || string(got) != "abc" {
		t.Fatalf("ReadAll after CloseWrite = %q, %v", got, err)
	}
	if _, err := d.Write([]byte("z")); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("Write after CloseWrite: %v", err)
	}
	// The other direction still works.
	a.Write([]byte("reply"))
	a.CloseWrite()
	if got, err := io.ReadAll(d); err != nil || string(got) != "reply" {
		t.Fatalf("reverse ReadAll = %q, %v", got, err)
	}
}

func TestCloseRead(t *testing.T) {
	d, a := pair(t, nil)
	a.CloseRead()
	if _, err := a.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("Read after CloseRead: %v", err)
	}
	if _, err := d.Write([]byte("x")); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("Write to a peer that closed its read side: %v", err)
	}
}

// TestCloseUnblocks: Close ends a blocked Read and a blocked Write with net.ErrClosed.
func TestCloseUnblocks(t *testing.T) {
	d, _ := pair(t, &ListenConfig{RingSize: minRingSize})
	fill(t, d)
	errc := make(chan error, 2)
	go func() { _, err := d.Read(make([]byte, 8)); errc <- err }()
	go func() { _, err := d.Write([]byte("more")); errc <- err }()
	time.Sleep(20 * time.Millisecond)
	d.Close()
	for range 2 {
		if err := <-errc; !errors.Is(err, net.ErrClosed) {
			t.Errorf("blocked op after Close: %v", err)
		}
	}
	if _, err := d.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Read after Close: %v", err)
	}
	if err := d.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("second Close: %v", err)
	}
}

// TestPeerClose: after the peer's Close, reads drain the ring then see io.EOF, and
// writes fail with a broken pipe.
func TestPeerClose(t *testing.T) {
	d, a := pair(t, nil)
	d.Write([]byte("last words"))
	d.Close()
	got, err := io.ReadAll(a)
	if err != nil || string(got) != "last words" {
		t.Fatalf("ReadAll after peer Close = %q, %v", got, err)
	}
	if _, err := a.Write([]byte("x")); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("Write after peer Close: %v", err)
	}
}

// pattern is the byte at stream offset i in the integrity tests.
func pattern(i int64) byte { return byte(i*7 + i>>11) }

// TestBackpressure: 64 MiB through a small ring to a reader that takes odd, small
// pieces arrive intact and in order.
func TestBackpressure(t *testing.T) {
	const total = 64 << 20
	d, a := pair(t, &ListenConfig{RingSize: 64 << 10})
	go func() {
		buf := make([]byte, 100_003)
		var off int64
		for off < total {
			n := min(len(buf), total-int(off))
			for i := range n {
				buf[i] = pattern(off + int64(i))
			}
			if _, err := d.Write(buf[:n]); err != nil {
				t.Error(err)
				return
			}
			off += int64(n)
		}
		d.CloseWrite()
	}()
	readPattern(t, a, 777, total)
}

// onlyReader hides a reader's WriteTo, so that io.Copy must use the Conn's ReadFrom.
type onlyReader struct{ io.Reader }

func TestReadFromWriteTo(t *testing.T) {
	d, a := pair(t, &ListenConfig{RingSize: minRingSize})
	src := make([]byte, 1<<20+5)
	for i := range src {
		src[i] = pattern(int64(i))
	}
	go func() {
		n, err := d.ReadFrom(onlyReader{bytes.NewReader(src)})
		if err != nil || n != int64(len(src)) {
			t.Errorf("ReadFrom = %d, %v", n, err)
		}
		d.CloseWrite()
	}()
	var got bytes.Buffer
	n, err := a.WriteTo(&got)
	if err != nil || n != int64(len(src)) || !bytes.Equal(got.Bytes(), src) {
		t.Fatalf("WriteTo = %d, %v (equal %v)", n, err, bytes.Equal(got.Bytes(), src))
	}
}

func TestWriteBuffers(t *testing.T) {
	d, a := pair(t, &ListenConfig{RingSize: minRingSize})
	var want []byte
	var bufs net.Buffers
	for i := range 100 {
		b := bytes.Repeat([]byte{byte(i)}, i*13)
		want = append(want, b...)
		bufs = append(bufs, b)
	}
	go func() {
		n, err := d.WriteBuffers(&bufs)
		if err != nil || n != int64(len(want)) || len(bufs) != 0 {
			t.Errorf("WriteBuffers = %d, %v, %d buffers left", n, err, len(bufs))
		}
		d.CloseWrite()
	}()
	got, err := io.ReadAll(a)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("ReadAll = %d bytes, %v", len(got), err)
	}
}

// TestMessageSizes: one message of each size, then the reply, over a small and the
// default ring.
func TestMessageSizes(t *testing.T) {
	for _, ring := range []int{minRingSize, 0} {
		d, a := pair(t, &ListenConfig{RingSize: ring})
		for _, size := range []int{1, 7, 63, 64, 65, 4095, 4096, 4097, 1 << 16, 3<<20 + 1} {
			msg := make([]byte, size)
			for i := range msg {
				msg[i] = pattern(int64(i + size))
			}
			go func() {
				if _, err := d.Write(msg); err != nil {
					t.Error(err)
				}
			}()
			got := make([]byte, size)
			if _, err := io.ReadFull(a, got); err != nil || !bytes.Equal(got, msg) {
				t.Fatalf("ring %d, size %d: %v (equal %v)", ring, size, err, bytes.Equal(got, msg))
			}
		}
	}
}

// TestConcurrentReadWriteClose: a reader, a writer and Close at once always end, and
// the race detector sees no race.
func TestConcurrentReadWriteClose(t *testing.T) {
	for range 50 {
		d, a := pair(t, &ListenConfig{RingSize: minRingSize})
		var wg sync.WaitGroup
		wg.Go(func() {
			buf := make([]byte, 1000)
			for {
				if _, err := d.Read(buf); err != nil {
					return
				}
			}
		})
		wg.Go(func() {
			buf := make([]byte, 3000)
			for {
				if _, err := d.Write(buf); err != nil {
					return
				}
			}
		})
		wg.Go(func() { io.Copy(a, a) })
		wg.Go(func() { d.Close() })
		wg.Wait()
	}
}

// TestParkedWake: a reader and a writer idle long enough to park (past the futex spell)
// are woken by the peer's data and the peer's reads.
func TestParkedWake(t *testing.T) {
	d, a := pair(t, &ListenConfig{RingSize: minRingSize})
	for range 3 {
		got := make(chan string, 1)
		go func() {
			b := make([]byte, 8)
			n, err := a.Read(b)
			if err != nil {
				t.Error(err)
			}
			got <- string(b[:n])
		}()
		time.Sleep(10 * futexSpell) // let the reader park (the test holds either way)
		d.Write([]byte("wake"))
		if s := <-got; s != "wake" {
			t.Fatalf("parked reader got %q", s)
		}
	}
	done := make(chan error, 1)
	go func() { _, err := d.Write(make([]byte, 3*minRingSize)); done <- err }()
	time.Sleep(10 * futexSpell) // let the writer fill the ring and park
	if _, err := io.ReadFull(a, make([]byte, 3*minRingSize)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("parked writer: %v", err)
	}
}
