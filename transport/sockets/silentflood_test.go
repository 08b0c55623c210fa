package sockets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// silentFlood is how many silent connections TestSilentFlood holds: more than the
// kernel's default backlog (4096) plus maxPending.
const silentFlood = 5000

// raiseNoFile raises RLIMIT_NOFILE's soft limit to at least n descriptors, or skips the
// test when the hard limit is lower.
func raiseNoFile(t *testing.T, n uint64) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur >= n {
		return
	}
	if lim.Max < n {
		t.Skipf("needs %d descriptors; RLIMIT_NOFILE's hard limit is %d (raise it with ulimit -Hn)", n, lim.Max)
	}
	old := lim
	lim.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
}

// silentDial connects to the rendezvous socket of name and sends nothing. It retries
// while the backlog is full, as a flooding client would, within the test's budget.
func silentDial(name string, deadline time.Time) (*net.UnixConn, error) {
	addr := &net.UnixAddr{Net: "unix", Name: "@" + abstractPrefix + name}
	for {
		c, err := net.DialUnix("unix", nil, addr)
		if !errors.Is(err, syscall.EAGAIN) || time.Now().After(deadline) {
			return c, err
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSilentFlood holds silentFlood silent connections to an "shm" listener, and keeps
// replacing the ones it sheds, while 100 dialers must each get a connection that echoes.
// Silent clients cannot fill the backlog: the listener accepts them and sheds the oldest.
func TestSilentFlood(t *testing.T) {
	floodDials(t, crowd{n: silentFlood, dialers: 100, dial: silentDial, what: "silent connections",
		unshed: "the listener's backlog stayed full: it does not accept silent clients"})
}

// crowd is the clients of a flood that never finish connecting, for floodDials: n of them,
// each made by dial, while dialers real dials must go through. what names the clients;
// unshed says what a dial of the crowd that fails means.
type crowd struct {
	n, dialers   int
	dial         func(name string, deadline time.Time) (*net.UnixConn, error)
	what, unshed string
}

// floodDials holds f.n clients of f.dial to an "shm" listener, and keeps replacing the
// ones it sheds, while f.dialers dialers must each get a connection that echoes within
// the test's budget. The listener must shed most of the crowd.
func floodDials(t *testing.T, f crowd) {
	raiseNoFile(t, uint64(f.n)+1000)
	l, name := listen(t, &ListenConfig{RingSize: minRingSize})
	go echo(l)
	budget := testbudget.Scale(30 * time.Second)
	deadline := time.Now().Add(budget)

	held := make([]*net.UnixConn, 0, f.n)
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for len(held) < f.n {
		c, err := f.dial(name, deadline)
		if err != nil {
			t.Fatalf("%s: %d of %d: %v (%s)", f.what, len(held)+1, f.n, err, f.unshed)
		}
		held = append(held, c)
	}

	// The flood goes on: a new client for every one the listener drops.
	stop := make(chan struct{})
	churned := make(chan int)
	go func() {
		n := 0
		defer func() { churned <- n }()
		for i := 0; ; i = (i + 1) % len(held) {
			select {
			case <-stop:
				return
			default:
			}
			c, err := f.dial(name, deadline)
			if err != nil {
				return
			}
			held[i].Close()
			held[i] = c
			n++
		}
	}()

	errs := make(chan error, f.dialers)
	var wg sync.WaitGroup
	for i := range f.dialers {
		wg.Go(func() {
			d := Dialer{Timeout: budget}
			c, err := d.DialContext(context.Background(), "shm", name)
			if err != nil {
				errs <- fmt.Errorf("dialer %d: %w", i, err)
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(budget))
			msg := []byte(fmt.Sprintf("dialer %d under the flood", i))
			if _, err := c.Write(msg); err != nil {
				errs <- fmt.Errorf("dialer %d: write: %w", i, err)
				return
			}
			got := make([]byte, len(msg))
			if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
				errs <- fmt.Errorf("dialer %d: echo: %q, %v", i, got, err)
			}
		})
	}
	wg.Wait()
	close(stop)
	n := <-churned
	close(errs)
	failed := 0
	for err := range errs {
		failed++
		if failed <= 5 {
			t.Error(err)
		}
	}
	shed := l.(*shmListener).shed.Load()
	if failed > 0 {
		t.Fatalf("%d of %d dials failed within %v under %d %s (%d replaced, %d shed)",
			failed, f.dialers, budget, f.n, f.what, n, shed)
	}
	if shed < int64(f.n/2) {
		t.Fatalf("the listener shed %d of %d %s; want most of them (it holds at most %d)", shed, f.n, f.what, maxPending)
	}
	t.Logf("%d dials echoed under %d %s (%d replaced); %d shed", f.dialers, f.n, f.what, n, shed)
}
