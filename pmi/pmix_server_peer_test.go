package pmi

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// Environment of TestPMIxPeerHelper's process.
const (
	envPeerMode = "PMI_TEST_PMIX_PEER" // connect, grandchild or churn
	envPeerAddr = "PMI_TEST_PMIX_ADDR" // the server's host:port
	envPeerMsg  = "PMI_TEST_PMIX_MSG"  // connect: the connect message, in hex
	envPeerN    = "PMI_TEST_PMIX_N"    // churn: how many connections
)

// TestPMIxPeerHelper is the process of the PMIx peer tests (it does nothing in a normal
// run). connect: it sends $PMI_TEST_PMIX_MSG to the server and prints the status the
// server answers ("status N"), or "closed". grandchild: it starts another helper that
// does connect, and waits for it, so that the connecting process is no child of the
// test. churn: it opens and closes $PMI_TEST_PMIX_N connections, then prints "churned".
func TestPMIxPeerHelper(t *testing.T) {
	mode, addr := os.Getenv(envPeerMode), os.Getenv(envPeerAddr)
	if mode == "" {
		t.Skip("the peer process of the PMIx peer tests")
	}
	switch mode {
	case "connect":
		msg, err := hex.DecodeString(os.Getenv(envPeerMsg))
		if err != nil {
			t.Fatal(err)
		}
		c, err := net.Dial("tcp4", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		var ack [8]byte
		if _, err := io.ReadFull(c, ack[:]); err != nil {
			fmt.Println("closed")
			return
		}
		fmt.Printf("status %d\n", int32(binary.BigEndian.Uint32(ack[:])))
	case "grandchild":
		cmd := exec.Command(os.Args[0], "-test.run=^TestPMIxPeerHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), envPeerMode+"=connect")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
	case "churn":
		n, _ := strconv.Atoi(os.Getenv(envPeerN))
		for i := range n {
			c, err := net.Dial("tcp4", addr)
			if err != nil {
				t.Fatalf("connection %d: %v", i, err)
			}
			c.Close()
		}
		fmt.Println("churned")
	default:
		t.Fatalf("%s=%q: want connect, grandchild or churn", envPeerMode, mode)
	}
}

// startPeer starts TestPMIxPeerHelper from bin in mode against s, as cred's user if cred
// is not nil, and returns it with a reader of its output.
func startPeer(t *testing.T, s *PMIxServer, bin, mode string, cred *syscall.Credential, env ...string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(bin, "-test.run=^TestPMIxPeerHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), append(env, envPeerMode+"="+mode, envPeerAddr+"="+s.ln.Addr().String())...)
	cmd.Stderr = os.Stderr
	if cred != nil {
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, bufio.NewScanner(out)
}

// connectWire builds a connect message as pmixConnectMsg does, with the version, buffer
// module, buffer type and data store given.
func connectWire(rank uint32, version, bfrops string, bufType byte, gds string) []byte {
	msg := pmixConnectMsg("golaunch.job1", rank, uint32(os.Getuid()), uint32(os.Getgid()))
	tail := pmixWireVersion + "\x00" + pmixBfrops + "\x00" + string([]byte{pmixBufNonDesc}) + pmixGDS + "\x00\x00"
	body, ok := bytes.CutSuffix(msg[16:], []byte(tail))
	if !ok {
		panic("pmixConnectMsg's layout changed")
	}
	body = append(append([]byte(nil), body...), version+"\x00"+bfrops+"\x00"...)
	body = append(append(body, bufType), gds+"\x00\x00"...)
	return append(binary.LittleEndian.AppendUint64(msg[:8:8], uint64(len(body))), body...)
}

// A connect that claims a rank with a wire the server does not speak (an older PMIx, a
// described buffer, another data store) is refused. It is reported with rank -1: a
// Handler blames a rank only when the peer's process, which holds the socket, is that
// rank's. A child of this process (where the agent's ranks are) goes with its pid. A
// process further down, such as a program that a rank runs with the rank's PMIX_*
// variables, and this process itself, go with pid 0, and the error says how to stop
// it. Nothing aborts the job, and its ranks then connect and fence.
func TestPMIxServerStrangerClaimsRank(t *testing.T) {
	const n = 2
	h := newJob(n)
	s := listenPMIx(t, h, pmixJobOf(n))
	wires := []struct {
		name, version, bfrops string
		bufType               byte
		gds, want             string
	}{
		{"older PMIx", "3.2.3", "v3", pmixBufNonDesc, "hash", `PMIx is version 3.2.3 (buffer encoding "v3")`},
		{"described buffers", "4.2.2", "v41", pmixBufNonDesc + 1, "hash", "PMIx uses buffer type"},
		{"shared-memory data store", "4.2.2", "v41", pmixBufNonDesc, "ds21", `PMIx offers the data stores "ds21"`},
	}
	for _, w := range wires {
		msg := connectWire(1, w.version, w.bfrops, w.bufType, w.gds)
		for _, who := range []string{"child", "grandchild", "this process"} {
			before := len(h.protocolErrors())
			pid := 0
			if who == "this process" {
				st, err := ackOf(t, dialPMIx(t, s), msg)
				if err != nil || st != pmixErrNotSupported {
					t.Fatalf("%s from %s: status %d, %v; want %d", w.name, who, st, err, pmixErrNotSupported)
				}
			} else {
				mode := map[string]string{"child": "connect", "grandchild": "grandchild"}[who]
				cmd, out := startPeer(t, s, os.Args[0], mode, nil, envPeerMsg+"="+hex.EncodeToString(msg))
				if want := fmt.Sprintf("status %d", pmixErrNotSupported); !out.Scan() || out.Text() != want {
					t.Fatalf("%s from a %s: the peer says %q, %v; want %q", w.name, who, out.Text(), out.Err(), want)
				}
				if who == "child" {
					pid = cmd.Process.Pid
				}
			}
			errs := h.protocolErrors()[before:]
			if len(errs) != 1 {
				t.Fatalf("%s from %s: reported %v, want one error", w.name, who, errs)
			}
			e := errs[0]
			if e.Rank != -1 || e.Pid != pid || e.Cmd != "connect" || !strings.Contains(e.Error(), w.want) {
				t.Errorf("%s from %s: reported rank %d pid %d: %v; want rank -1, pid %d and %q", w.name, who, e.Rank, e.Pid, e, pid, w.want)
			}
			blame := "the rank's "
			if pid == 0 {
				blame = "a process that this agent did not start connects as rank 1 (a program that a rank runs inherits the rank's PMIX_* variables: unset them in its environment); its "
			}
			if !strings.Contains(e.Detail(), "PMIx protocol error in connect: "+blame+"PMIx ") {
				t.Errorf("%s from %s: %q does not say %q", w.name, who, e.Detail(), blame)
			}
		}
	}
	runPMIxJob(t, s, n)
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.aborts) != 0 || len(h.finalized) != n {
		t.Errorf("aborts %q, finalized %v: the refused connects touched the job", h.aborts, h.finalized)
	}
}

// peerAsOtherUser returns the credential and the test binary with which a helper
// process runs as another user than the server admits: nobody, with a copy of the test
// binary that nobody may run, when the test runs as root; otherwise this user, with the
// server told to admit another uid.
func peerAsOtherUser(t *testing.T, s *PMIxServer) (*syscall.Credential, string) {
	t.Helper()
	if os.Getuid() != 0 {
		s.SetUID(uint32(os.Getuid()) + 1)
		return nil, os.Args[0]
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		testbudget.SkipEngine(t, "no user nobody")
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "pmi.test")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	for d := filepath.Dir(bin); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755) // t.TempDir's directories are 0700
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, bin
}

// Another user's process opens and closes connections in a loop. Each costs the accept
// goroutine one sock_diag query for the peer's one socket and never a scan of
// /proc/net/tcp, whose length grows with the host's sockets. Each is refused as a
// stranger's, and the job's ranks then connect and fence.
func TestPMIxServerChurnAnotherUser(t *testing.T) {
	const conns = 2000
	h := newJob(2)
	s := listenPMIx(t, h, pmixJobOf(2))
	if !s.peers.diagOK() {
		t.Skip("this kernel answers no sock_diag (INET_DIAG) query: the server scans /proc/net/tcp")
	}
	cred, bin := peerAsOtherUser(t, s)
	_, out := startPeer(t, s, bin, "churn", cred, envPeerN+"="+strconv.Itoa(conns))
	if !out.Scan() || out.Text() != "churned" {
		t.Fatalf("the churning process said %q, %v", out.Text(), out.Err())
	}
	deadline := time.Now().Add(testbudget.Scale(30 * time.Second))
	for s.peers.queries.Load() < conns {
		if time.Now().After(deadline) {
			t.Fatalf("the server looked up %d of %d connections' peers", s.peers.queries.Load(), conns)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if q, sc := s.peers.queries.Load(), s.peers.scans.Load(); q != conns || sc != 0 {
		t.Errorf("%d connections cost %d sock_diag queries and %d scans of /proc/net/tcp; want one query each and no scan", conns, q, sc)
	}
	deadline = time.Now().Add(testbudget.Scale(30 * time.Second))
	for len(h.protocolErrors()) < conns && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	errs := h.protocolErrors()
	if len(errs) != conns {
		t.Errorf("%d refusals reported, want %d", len(errs), conns)
	}
	for _, e := range errs {
		if e.Rank != -1 || !strings.Contains(e.Error(), "connection refused: ") {
			t.Fatalf("another user's connection reported as %v (rank %d)", e, e.Rank)
		}
	}
	s.SetUID(uint32(os.Getuid()))
	runPMIxJob(t, s, 2)
}

// idleLoopback opens n loopback TCP connections that stay open until b ends: 2n more
// rows in /proc/net/tcp.
func idleLoopback(b *testing.B, n int) {
	b.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	accepted := make(chan net.Conn, n)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	var conns []net.Conn
	for range n {
		c, err := net.Dial("tcp4", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c, <-accepted)
	}
	b.Cleanup(func() {
		ln.Close()
		for _, c := range conns {
			c.Close()
		}
	})
}

// BenchmarkPMIxPeerLookup is the accept goroutine's cost per connection: the owner of
// the peer's socket, by a sock_diag query (diag) and by a scan of /proc/net/tcp (scan),
// with more or fewer other sockets on the host.
func BenchmarkPMIxPeerLookup(b *testing.B) {
	for _, others := range []int{0, 1000, 4000} {
		b.Run(fmt.Sprintf("sockets=%d", 2*others), func(b *testing.B) {
			idleLoopback(b, others)
			ln, err := net.Listen("tcp4", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			client, err := net.Dial("tcp4", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer client.Close()
			c, err := ln.Accept()
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			t := newPeerTable(ln.Addr().(*net.TCPAddr))
			defer t.close()
			la, ra := c.LocalAddr().(*net.TCPAddr), c.RemoteAddr().(*net.TCPAddr)
			b.Run("diag", func(b *testing.B) {
				if !t.diagOK() {
					b.Skip("no sock_diag on this kernel")
				}
				for b.Loop() {
					if p, err := t.lookup(c); err != nil || p.uid != uint32(os.Getuid()) {
						b.Fatal(p, err)
					}
				}
			})
			b.Run("scan", func(b *testing.B) {
				for b.Loop() {
					if p, err := scanProcNetTCP(ra, la); err != nil || p.uid != uint32(os.Getuid()) {
						b.Fatal(p, err)
					}
				}
			})
		})
	}
}

// BenchmarkPMIxStrangerConnect opens and closes a connection that the server refuses as
// another user's (the server admits another uid), with more or fewer other sockets on
// the host: the client's connect and close and the server's accept, lookup and close.
func BenchmarkPMIxStrangerConnect(b *testing.B) {
	for _, others := range []int{0, 4000} {
		b.Run(fmt.Sprintf("sockets=%d", 2*others), func(b *testing.B) {
			idleLoopback(b, others)
			s := listenPMIx(b, newJob(2), pmixJobOf(2))
			s.SetUID(uint32(os.Getuid()) + 1)
			addr := s.ln.Addr().String()
			var one [1]byte
			for b.Loop() {
				c, err := net.Dial("tcp4", addr)
				if err != nil {
					b.Fatal(err)
				}
				c.Read(one[:]) // until the server closes it
				c.Close()
			}
		})
	}
}

// TestPMIxServerFallback: on a kernel that opens no sock_diag socket the server says so,
// names what it does instead, and still admits its job's ranks by scanning
// /proc/net/tcp. Where the kernel answers, it says nothing.
func TestPMIxServerFallback(t *testing.T) {
	if s := listenPMIx(t, newJob(1), pmixJobOf(1)); s.peers.diagOK() && s.Fallback() != "" {
		t.Errorf("the kernel answers sock_diag queries, and Fallback says %q", s.Fallback())
	}
	open := diagSocket
	diagSocket = func() (int, error) { return -1, syscall.EPROTONOSUPPORT }
	defer func() { diagSocket = open }()
	h := newJob(2)
	s := listenPMIx(t, h, pmixJobOf(2))
	want := "the kernel opens no sock_diag socket (protocol not supported): each connection's peer is found by a scan of /proc/net/tcp"
	if got := s.Fallback(); !strings.HasPrefix(got, want) {
		t.Errorf("Fallback() = %q, want it to begin %q", got, want)
	}
	c, err := net.Dial("tcp4", s.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(testbudget.Scale(10 * time.Second))
	for s.peers.scans.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the server made no scan of /proc/net/tcp for a connection")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if q := s.peers.queries.Load(); q != 0 {
		t.Errorf("%d sock_diag queries without a sock_diag socket", q)
	}
}
