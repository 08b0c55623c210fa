package runtime

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// Environment of TestCMFloodHelper's process: the listener to flood and how many idle
// connections to open.
const (
	envFloodAddr = "RUNTIME_TEST_FLOOD_ADDR"
	envFloodN    = "RUNTIME_TEST_FLOOD_N"
)

// TestCMFloodHelper is the flooding process of TestCMFlood (it does nothing in a normal
// run): on a line from stdin it opens $RUNTIME_TEST_FLOOD_N idle TCP connections to
// $RUNTIME_TEST_FLOOD_ADDR, prints "flooded", and holds them until stdin ends.
func TestCMFloodHelper(t *testing.T) {
	addr := os.Getenv(envFloodAddr)
	if addr == "" {
		t.Skip("the flooding process of TestCMFlood")
	}
	n, _ := strconv.Atoi(os.Getenv(envFloodN))
	var lim syscall.Rlimit // possibly inherited lowered: raise it back for the flood
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
		lim.Cur = lim.Max
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	in := bufio.NewReader(os.Stdin)
	if _, err := in.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	for range n {
		c, err := net.DialTimeout("tcp", addr, time.Minute)
		if err != nil {
			t.Fatalf("flood connection %d: %v", len(conns), err)
		}
		conns = append(conns, c)
	}
	fmt.Println("flooded")
	in.ReadString('\n') // until stdin ends
	for _, c := range conns {
		c.Close()
	}
}

// TestCMFlood floods rank 0's connection listener from another process with idle TCP
// connections, three times as many as the listener may hold pending (cmMaxPending),
// while the process of both ranks runs under a lowered RLIMIT_NOFILE:
//
//   - emfile: the limit admits fewer connections than the bound, so the descriptor table
//     fills up and the listener's Accept fails (EMFILE) until the flood ends;
//   - bound: the limit admits more, so the listener sheds the connections past the bound.
//
// While the flood holds the listener, rank 1 asks rank 0 for a connection: under the
// full descriptor table its own dial fails (EMFILE) and it tries again, or it waits
// behind the table in the backlog; past the bound it is shed, told the listener is busy,
// and tries again. Then the flood ends: rank 1's send must arrive, every flood connection must be
// counted as rejected, and the two ranks, on two hosts, must exchange messages over tcp
// through the flooded listener under the lowered limit.
func TestCMFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a flooding process")
	}
	bound := cmMaxPending(2)
	for _, tc := range []struct {
		name  string
		spare int // descriptors left to the ranks' process under the lowered limit
	}{
		{"emfile", bound / 2},
		{"bound", 4 * bound},
	} {
		t.Run(tc.name, func(t *testing.T) { floodCM(t, tc.spare, tc.spare < bound) })
	}
}

func floodCM(t *testing.T, spare int, emfile bool) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(2*time.Minute))
	defer cancel()
	pm := newAgentPM(t, 2, "(vector,(0,2,1))")
	worlds := startFake(t, ctx, pm, []string{"a", "b"})
	if tr := (*subWorld)(worlds[0]).TransportBetween(0, 1); tr != "tcp" {
		t.Fatalf("ranks 0 and 1 would connect over %q, want tcp", tr)
	}
	e := worlds[0].e
	bound := cmMaxPending(2)
	n := 3 * bound

	flood := exec.Command(os.Args[0], "-test.run=^TestCMFloodHelper$", "-test.count=1")
	flood.Env = append(os.Environ(), envFloodAddr+"="+e.cm.addr, envFloodN+"="+strconv.Itoa(n))
	flood.Stderr = os.Stderr
	stdin, err := flood.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := flood.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := flood.Start(); err != nil {
		t.Fatal(err)
	}
	defer flood.Wait()
	defer stdin.Close()

	open, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count open descriptors: %v", err)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	low := lim
	low.Cur = min(lim.Cur, uint64(len(open)+spare))
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)

	if _, err := stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewScanner(stdout)
	if !out.Scan() || out.Text() != "flooded" {
		t.Fatalf("the flooding process said %q, %v", out.Text(), out.Err())
	}
	// Rank 1 asks rank 0 for a connection during the flood (rank 0 does nothing that
	// would ask rank 1 first): it finds no descriptor for its dial, or waits in the
	// backlog behind the full descriptor table, or is shed and told the listener is
	// busy; each time it tries again.
	sent := make(chan error, 1)
	if emfile {
		waitFor(t, "an Accept error of the flooded listener (descriptor table full)", func() bool { return e.cm.retried.Load() > 0 })
		go func() { sent <- Send(ctx, worlds[1], []int64{42}, 0, 9) }()
	} else {
		waitFor(t, fmt.Sprintf("%d connections shed past the bound of %d", n-bound, bound),
			func() bool { return e.cm.shed.Load() >= int64(n-bound) })
		go func() { sent <- Send(ctx, worlds[1], []int64{42}, 0, 9) }()
		waitFor(t, "rank 1's request shed while the flood holds the listener",
			func() bool { return e.cm.shed.Load() > int64(n-bound) })
	}
	stdin.Close()
	if err := flood.Wait(); err != nil {
		t.Fatalf("flooding process: %v", err)
	}
	if err := <-sent; err != nil {
		t.Fatalf("rank 1's send to rank 0 through the flooded listener: %v", err)
	}
	got := make([]int64, 1)
	if _, err := Recv(ctx, worlds[0], got, 1, 9); err != nil || got[0] != 42 {
		t.Fatalf("rank 0 received %v, %v from rank 1, want 42", got, err)
	}
	// Every flood connection is rejected, and so is every attempt of rank 1 that was shed.
	strangers := int64(n) + e.cm.shed.Load() - int64(n-bound)
	if emfile {
		strangers = int64(n) + e.cm.shed.Load()
	}
	waitFor(t, fmt.Sprintf("all %d flood connections counted as rejected", n), func() bool { return e.cm.rejected.Load() >= strangers })
	if got := e.cm.rejected.Load(); got != strangers {
		t.Errorf("%d connections counted as rejected, want the flood's %d and rank 1's shed attempts, %d in all", got, n, strangers)
	}

	// Both ranks through the flooded listener, still under the lowered limit.
	runAll(t, worlds, func(w *World) error {
		me := w.Rank()
		other := 1 - me
		got := make([]int64, 1000)
		q, err := Irecv(w, got, other, 3)
		if err != nil {
			return err
		}
		msg := make([]int64, len(got))
		for i := range msg {
			msg[i] = int64(me*1000 + i)
		}
		if err := Send(ctx, w, msg, other, 3); err != nil {
			return err
		}
		if _, err := q.Wait(ctx); err != nil {
			return err
		}
		for i, v := range got {
			if want := int64(other*1000 + i); v != want {
				return fmt.Errorf("element %d from rank %d: %d, want %d", i, other, v, want)
			}
		}
		if tr := w.Transport(other); tr != "tcp" {
			return fmt.Errorf("connected to rank %d over %q, want tcp", other, tr)
		}
		return nil
	})
	if got := e.cm.rejected.Load(); got != strangers {
		t.Errorf("%d connections counted as rejected after the exchange, want %d: the rank's own request was refused", got, strangers)
	}
	runAll(t, worlds, func(w *World) error { return w.Finalize(ctx) })
}

// waitFor polls cond until it holds, failing the test after a minute with what it waited
// for.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(testbudget.Scale(time.Minute)); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within a minute", what)
		}
	}
}
