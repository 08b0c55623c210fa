package sockets

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
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
	c.Write([]byte{1})
	select {}
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
	case <-time.After(10 * time.Second):
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
