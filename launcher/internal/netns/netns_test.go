package netns

import (
	"bufio"
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// TestHelperEcho is a helper process: it listens (NETNS_LISTEN) or dials (NETNS_DIAL) inside
// whatever namespace it was started in.
func TestHelperEcho(t *testing.T) {
	switch {
	case os.Getenv("NETNS_LISTEN") != "":
		ln, err := net.Listen("tcp", os.Getenv("NETNS_LISTEN"))
		if err != nil {
			t.Fatal(err)
		}
		os.Stdout.WriteString("listening\n")
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("hello\n"))
		c.Close()
	case os.Getenv("NETNS_DIAL") != "":
		c, err := net.DialTimeout("tcp", os.Getenv("NETNS_DIAL"), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(c).ReadString('\n')
		if line != "hello\n" {
			t.Fatalf("read %q", line)
		}
	default:
		t.Skip("helper process")
	}
}

func TestTwoHostsReachEachOtherAndCut(t *testing.T) {
	if ok, why := Available(); !ok {
		testbudget.SkipEngine(t, "%s", why)
	}
	c, err := New(2)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
	defer cancel()
	a, b := c.Hosts[0], c.Hosts[1]
	addr := b.Addr + ":7070"
	listen := func() *bufio.Reader {
		srv := b.Command(ctx, os.Args[0], "-test.run=^TestHelperEcho$")
		srv.Env = append(os.Environ(), "NETNS_LISTEN="+addr)
		out, _ := srv.StdoutPipe()
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
		rd := bufio.NewReader(out)
		if line, _ := rd.ReadString('\n'); !strings.HasPrefix(line, "listening") {
			t.Fatalf("listener in %s: %q", b.Name, line)
		}
		return rd
	}
	dial := func() error {
		cl := a.Command(ctx, os.Args[0], "-test.run=^TestHelperEcho$")
		cl.Env = append(os.Environ(), "NETNS_DIAL="+addr)
		out, err := cl.CombinedOutput()
		if err != nil {
			t.Logf("dial from %s: %v\n%s", a.Name, err, out)
		}
		return err
	}
	listen()
	if err := dial(); err != nil {
		t.Fatalf("host %s could not reach %s", a.Name, addr)
	}
	listen()
	if err := b.Cut(); err != nil {
		t.Fatal(err)
	}
	if err := dial(); err == nil {
		t.Fatal("a connection crossed a cut link")
	}
	if err := b.Restore(); err != nil {
		t.Fatal(err)
	}
}
