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
	raiseNoFile(t, silentFlood+1000)
	l, name := listen(t, &ListenConfig{RingSize: minRingSize})
	go echo(l)
	budget := testbudget.Scale(30 * time.Second)
	deadline := time.Now().Add(budget)

	held := make([]*net.UnixConn, 0, silentFlood)
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for len(held) < silentFlood {
		c, err := silentDial(name, deadline)
		if err != nil {
			t.Fatalf("silent connection %d of %d: %v (the listener's backlog stayed full: it does not accept silent clients)", len(held)+1, silentFlood, err)
		}
		held = append(held, c)
	}

	// The flood goes on: a new silent connection for every one the listener drops.
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
			c, err := silentDial(name, deadline)
			if err != nil {
				return
			}
			held[i].Close()
			held[i] = c
			n++
		}
	}()

	const dialers = 100
	errs := make(chan error, dialers)
	var wg sync.WaitGroup
	for i := range dialers {
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
		t.Fatalf("%d of %d dials failed within %v under a flood of %d silent connections (%d replaced, %d shed)",
			failed, dialers, budget, silentFlood, n, shed)
	}
	if shed < silentFlood/2 {
		t.Fatalf("the listener shed %d of %d silent connections; want most of them (it holds at most %d)", shed, silentFlood, maxPending)
	}
	t.Logf("%d dials echoed under %d silent connections (%d replaced); %d shed", dialers, silentFlood, n, shed)
}
