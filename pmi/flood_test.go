package pmi

import (
	"bufio"
	"errors"
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

// Environment of TestFloodHelper's process: the socket to flood and how many idle
// connections to open.
const (
	envFloodSock = "PMI_TEST_FLOOD_SOCK"
	envFloodN    = "PMI_TEST_FLOOD_N"
)

// TestFloodHelper is the flooding process of TestAcceptAfterEMFILE (it does nothing in a
// normal run): on a line from stdin it opens $PMI_TEST_FLOOD_N idle connections to the
// socket $PMI_TEST_FLOOD_SOCK, prints "flooded", and holds them until stdin ends.
func TestFloodHelper(t *testing.T) {
	path := os.Getenv(envFloodSock)
	if path == "" {
		t.Skip("the flooding process of TestAcceptAfterEMFILE")
	}
	n, _ := strconv.Atoi(os.Getenv(envFloodN))
	var lim syscall.Rlimit // inherited lowered: raise it back for the flood
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
		c, err := net.Dial("unix", path)
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

// TestAcceptAfterEMFILE floods a server's socket from another process with more idle
// connections than the server's lowered RLIMIT_NOFILE admits, so that its Accept fails
// with EMFILE, then ends the flood: a rank's init on the socket must then succeed.
func TestAcceptAfterEMFILE(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a flooding process")
	}
	s := serve(t, newJob(1))
	open, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count open descriptors: %v", err)
	}
	const spare = 64 // descriptors left to the server under the lowered limit
	flood := exec.Command(os.Args[0], "-test.run=^TestFloodHelper$", "-test.count=1")
	flood.Env = append(os.Environ(), envFloodSock+"="+s.Path(), envFloodN+"="+strconv.Itoa(3*spare))
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

	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	low := lim
	low.Cur = min(lim.Cur, uint64(len(open)+8+spare)) // 8: the flooding process's pipes
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
	// The server fills its table with the flood's connections, the rest wait in the
	// socket's backlog: its Accept fails with EMFILE until the flood ends.
	deadline := time.Now().Add(testbudget.Scale(time.Minute))
	for full := false; !full; {
		fd, err := syscall.Open("/dev/null", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		switch {
		case errors.Is(err, syscall.EMFILE):
			full = true
		case err != nil:
			t.Fatal(err)
		case time.Now().After(deadline):
			t.Fatalf("the server's descriptor table never filled up (limit %d)", low.Cur)
		default:
			syscall.Close(fd)
			time.Sleep(time.Millisecond)
		}
	}
	stdin.Close()
	if err := flood.Wait(); err != nil {
		t.Fatalf("flooding process: %v", err)
	}
	// The limit back (the flood's connections may not all be closed yet): what matters
	// is that the accept loop survived its EMFILE.
	syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	c, err := Dial(ctx(t), s.Path(), 0, "job1")
	if err != nil {
		t.Fatalf("init after the flood: %v", err)
	}
	if c.Size() != 1 {
		t.Errorf("init after the flood: size %d, want 1", c.Size())
	}
	c.Close()
}
