package sockets

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// helperEnv names the listener a re-executed test binary dials (TestHelperDial).
const helperEnv = "GORMA_SOCKETS_HELPER_DIAL"

// TestHelperDial is the child of TestPeerKilled: it dials, writes one byte and waits to
// be killed. It does nothing in a normal run.
func TestHelperDial(t *testing.T) {
	name := os.Getenv(helperEnv)
	if name == "" {
		t.Skip("helper process only")
	}
	c, err := Dial("shm", name)
	if err != nil {
		os.Exit(2)
	}
	if os.Getenv(helperEchoEnv) != "" {
		io.Copy(c, c)
		c.Close()
		os.Exit(0)
	}
	c.Write([]byte{1})
	select {}
}

// helperEchoEnv makes TestHelperDial echo what it reads until EOF, then exit.
const helperEchoEnv = "GORMA_SOCKETS_HELPER_ECHO"

// TestCrossProcess streams through an echo in another process: the rings and the
// shared futexes work across two address spaces.
func TestCrossProcess(t *testing.T) {
	l, name := listen(t, &ListenConfig{RingSize: 16 << 10})
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperDial$")
	cmd.Env = append(os.Environ(), helperEnv+"="+name, helperEchoEnv+"=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	nc, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	const total = 8 << 20
	go func() {
		buf := make([]byte, 10_000)
		for off := 0; off < total; off += len(buf) {
			n := min(len(buf), total-off)
			for i := range n {
				buf[i] = pattern(int64(off + i))
			}
			if _, err := nc.Write(buf[:n]); err != nil {
				t.Error(err)
				return
			}
		}
		nc.(*Conn).CloseWrite()
	}()
	readPattern(t, nc, 1500, total)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("echo process: %v", err)
	}
}

// TestPeerKilled: a Read blocked on a peer that is killed with SIGKILL returns an error
// that says the peer is gone, and a Write after it fails.
func TestPeerKilled(t *testing.T) {
	l, name := listen(t, nil)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperDial$")
	cmd.Env = append(os.Environ(), helperEnv+"="+name)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	nc, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := io.ReadFull(nc, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { _, err := nc.Read(make([]byte, 1)); errc <- err }()
	cmd.Process.Signal(syscall.SIGKILL)
	select {
	case err = <-errc:
	case <-time.After(testbudget.Scale(10 * time.Second)):
		t.Fatal("Read blocked on a killed peer did not return")
	}
	if err == nil || err == io.EOF || !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("Read from a killed peer: %v; want the peer-gone error", err)
	}
	t.Logf("Read from a killed peer: %v", err)
	if _, err := nc.Write([]byte("x")); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("Write to a killed peer: %v", err)
	}
}
