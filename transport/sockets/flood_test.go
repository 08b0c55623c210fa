package sockets

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// Environment of TestFloodHelper's process: the listener's name and how many
// descriptors its lowered RLIMIT_NOFILE leaves it beyond those it holds once listening.
const (
	envFloodName  = "SOCKETS_TEST_FLOOD_NAME"
	envFloodSpare = "SOCKETS_TEST_FLOOD_SPARE"
)

// TestFloodHelper is the listening process of TestFlood (it does nothing in a normal
// run). It listens on "shm" $SOCKETS_TEST_FLOOD_NAME and echoes every connection, lowers
// its RLIMIT_NOFILE to $SOCKETS_TEST_FLOOD_SPARE descriptors above those it holds, prints
// "listening", and answers lines from stdin until it ends:
//
//	emfile  "emfile N" once its accept loop has seen N > 0 EMFILE errors
//	shed    "shed N" once its accept loop has shed N > 0 silent sockets
//	fds     "fds NOW BASE": its open descriptors, once at most those it held listening
//
// A condition that does not come within a minute is answered "timeout".
func TestFloodHelper(t *testing.T) {
	name := os.Getenv(envFloodName)
	if name == "" {
		t.Skip("the listening process of TestFlood")
	}
	spare, _ := strconv.Atoi(os.Getenv(envFloodSpare))
	var emfiles atomic.Int64
	acceptHook = func(ul *net.UnixListener) (*net.UnixConn, error) {
		uc, err := ul.AcceptUnix()
		if errors.Is(err, syscall.EMFILE) {
			emfiles.Add(1)
		}
		return uc, err
	}
	l, err := Listen("shm", name)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	base, err := countFDs()
	if err != nil {
		t.Fatal(err)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	lim.Cur = min(lim.Cur, uint64(base+spare))
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	fmt.Println("listening")
	// within polls cond for a minute and reports whether it came true.
	within := func(cond func() bool) bool {
		for deadline := time.Now().Add(testbudget.Scale(time.Minute)); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				return false
			}
		}
		return true
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var ok bool
		var answer string
		switch in.Text() {
		case "emfile":
			ok = within(func() bool { return emfiles.Load() > 0 })
			answer = fmt.Sprintf("emfile %d", emfiles.Load())
		case "shed":
			sl := l.(*shmListener)
			ok = within(func() bool { return sl.shed.Load() > 0 })
			answer = fmt.Sprintf("shed %d", sl.shed.Load())
		case "fds":
			var now int
			ok = within(func() bool {
				n, err := countFDs()
				now = n
				return err == nil && n <= base
			})
			answer = fmt.Sprintf("fds %d %d", now, base)
		default:
			t.Fatalf("unknown command %q", in.Text())
		}
		if !ok {
			answer = "timeout: " + answer
		}
		fmt.Println(answer)
	}
}

// countFDs counts the process's open descriptors (it fails while the table is full).
func countFDs() (int, error) {
	ents, err := os.ReadDir("/proc/self/fd")
	return len(ents), err
}

// TestFlood floods an "shm" listener in another process with 2*maxPending idle
// connections (each sends nothing, so that its handshake waits):
//
//   - emfile: the listener's RLIMIT_NOFILE admits fewer sockets than maxPending, so its
//     descriptor table fills up and its accept fails with EMFILE until the flood ends;
//   - bound: the limit admits more, so the listener accepts every socket and sheds the
//     oldest silent ones once maxPending are pending.
//
// Then the flood ends: a Dial must get a connection that echoes, and the listener's
// process must be back to the descriptors it held before the flood.
func TestFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a listening process")
	}
	for _, tc := range []struct {
		name  string
		spare int    // the listener's descriptors beyond those it holds listening
		sign  string // the command whose answer shows the flood had its effect
	}{
		{"emfile", maxPending / 4, "emfile"},
		{"bound", 4 * maxPending, "shed"},
	} {
		t.Run(tc.name, func(t *testing.T) { flood(t, tc.spare, tc.sign) })
	}
}

func flood(t *testing.T, spare int, sign string) {
	name := uniqueName(t)
	srv := exec.Command(os.Args[0], "-test.run=^TestFloodHelper$", "-test.count=1")
	srv.Env = append(os.Environ(), envFloodName+"="+name, envFloodSpare+"="+strconv.Itoa(spare))
	srv.Stderr = os.Stderr
	stdin, err := srv.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Wait()
	defer stdin.Close()
	out := bufio.NewScanner(stdout)
	ask := func(cmd string) string {
		t.Helper()
		if cmd != "" {
			if _, err := fmt.Fprintln(stdin, cmd); err != nil {
				t.Fatalf("ask the listening process %q: %v", cmd, err)
			}
		}
		if !out.Scan() {
			t.Fatalf("the listening process did not answer %q: %v", cmd, out.Err())
		}
		return out.Text()
	}
	if got := ask(""); got != "listening" {
		t.Fatalf("the listening process said %q, want listening", got)
	}

	var conns []*net.UnixConn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 2 * maxPending {
		conns = append(conns, rawDial(t, name))
	}
	if got := ask(sign); !strings.HasPrefix(got, sign) {
		t.Fatalf("flooded with %d idle connections, the listening process answered %q to %q", len(conns), got, sign)
	} else {
		t.Logf("flooded with %d idle connections: %s", len(conns), got)
	}
	for _, c := range conns {
		c.Close()
	}
	conns = nil

	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(time.Minute))
	defer cancel()
	c, err := DialContext(ctx, "shm", name)
	if err != nil {
		t.Fatalf("dial after the flood: %v", err)
	}
	msg := bytes.Repeat([]byte("echo after the flood "), 100)
	c.SetDeadline(time.Now().Add(testbudget.Scale(time.Minute)))
	if _, err := c.Write(msg); err != nil { // within a ring: the echo reads meanwhile
		t.Fatalf("write after the flood: %v", err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("echo after the flood: %v (%d bytes back, equal: %v)", err, len(got), bytes.Equal(got, msg))
	}
	c.Close()
	got2 := ask("fds")
	var now, base int
	if _, err := fmt.Sscanf(got2, "fds %d %d", &now, &base); err != nil || now > base {
		t.Fatalf("the listening process's descriptors after the flood: %q (open, held listening)", got2)
	}
	t.Logf("after the flood: %s (open, held listening)", got2)
	stdin.Close()
	if err := srv.Wait(); err != nil {
		t.Fatalf("listening process: %v", err)
	}
}
