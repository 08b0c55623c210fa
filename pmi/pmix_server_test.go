package pmi

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// pmixJobOf is a one-node job of size ranks on host "node0".
func pmixJobOf(size int) PMIxJob {
	return PMIxJob{Nspace: "golaunch.job1", JobID: "job1", Hosts: []string{"node0"}, NodeOf: make([]int, size)}
}

func listenPMIx(t testing.TB, h Handler, job PMIxJob) *PMIxServer {
	t.Helper()
	s, err := ListenPMIx(h, job)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// envOf turns the server's environment for rank into a getenv.
func envOf(s *PMIxServer, rank int) func(string) string {
	m := map[string]string{}
	for _, kv := range s.Environ(rank) {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return func(k string) string { return m[k] }
}

// gorma's own PMIx client against the server: four ranks put, fence and read each
// other's values over three rounds, then finalize.
func TestPMIxServerGoClient(t *testing.T) {
	const n = 4
	h := newJob(n)
	s := listenPMIx(t, h, pmixJobOf(n))
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- func() error {
				c, err := ConnectPMIx(ctx(t), envOf(s, r))
				if err != nil {
					return err
				}
				defer c.Close()
				if c.Size() != n || c.Rank() != r {
					return fmt.Errorf("rank %d: size %d rank %d", r, c.Size(), c.Rank())
				}
				if nodes, _ := c.Nodes(ctx(t)); len(nodes) != n {
					return fmt.Errorf("rank %d: nodes %v", r, nodes)
				}
				for round := range 3 {
					v := []byte(fmt.Sprintf("card %d round %d \x00\xff =", r, round))
					if err := c.Put(ctx(t), "ep", v); err != nil {
						return err
					}
					if round == 0 {
						if err := c.Put(ctx(t), "first", v); err != nil {
							return err
						}
					}
					if err := c.Fence(ctx(t)); err != nil {
						return err
					}
					for p := range n {
						got, err := c.Get(ctx(t), p, "ep")
						if err != nil {
							return err
						}
						if want := fmt.Sprintf("card %d round %d \x00\xff =", p, round); string(got) != want {
							return fmt.Errorf("rank %d round %d: rank %d's ep %q, want %q", r, round, p, got, want)
						}
						// A key committed in an earlier round stays.
						if got, err := c.Get(ctx(t), p, "first"); err != nil || !bytes.HasPrefix(got, []byte(fmt.Sprintf("card %d round 0", p))) {
							return fmt.Errorf("rank %d round %d: rank %d's first %q, %v", r, round, p, got, err)
						}
					}
				}
				if _, err := c.Get(ctx(t), (r+1)%n, "never"); err == nil {
					return fmt.Errorf("rank %d: a get of a key nobody put succeeded", r)
				}
				return c.Finalize(ctx(t))
			}()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.finalized) != n {
		t.Errorf("finalized %v, want every rank", h.finalized)
	}
	if len(h.broken) != 0 {
		t.Errorf("protocol errors: %v", h.broken)
	}
}

// openMPIProg builds src with Debian's mpicc.openmpi, or skips.
func openMPIProg(t *testing.T, src string) string {
	t.Helper()
	mpicc, err := exec.LookPath("mpicc.openmpi")
	if err != nil {
		testbudget.SkipEngine(t, "mpicc.openmpi not found: install Debian's openmpi-bin and libopenmpi-dev")
	}
	bin := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(src), ".c"))
	if out, err := exec.Command(mpicc, "-O1", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("mpicc.openmpi %s: %v\n%s", src, err, out)
	}
	return bin
}

// ompiEnv is this process's environment without PMIx and Open MPI variables, plus env.
func ompiEnv(env []string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PMIX_") && !strings.HasPrefix(kv, "OMPI_") && !strings.HasPrefix(kv, "PMI_") {
			out = append(out, kv)
		}
	}
	return append(append(out, "JSM_JSRUN_PORT=golaunch"), env...) // as golaunch adds it (launcher/pmixenv.go)
}

// runOpenMPIRanks runs n ranks of bin with s's environment, each changed by adjust if
// not nil, and returns each rank's output; a rank that fails fails the test.
func runOpenMPIRanks(t *testing.T, s *PMIxServer, bin string, n int, adjust func(*exec.Cmd)) []string {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
	defer cancel()
	bufs := make([]bytes.Buffer, n)
	errs := make(chan error, n)
	for r := range n {
		cmd := exec.CommandContext(c, bin)
		cmd.Env = ompiEnv(s.Environ(r))
		cmd.Stdout, cmd.Stderr = &bufs[r], &bufs[r]
		if adjust != nil {
			adjust(cmd)
		}
		go func() { errs <- cmd.Run() }()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("a rank: %v", err)
		}
	}
	outs := make([]string, n)
	for r := range outs {
		outs[r] = bufs[r].String()
	}
	return outs
}

// Open MPI 4.1 programs against the server alone: each rank started with the server's
// environment forms one world of four and passes its checks.
func TestPMIxServerOpenMPI(t *testing.T) {
	const n = 4
	for _, prog := range []string{"../tests/mpi/allreduce.c", "../tests/mpi/split.c", "../tests/mpi/putfence.c"} {
		t.Run(filepath.Base(prog), func(t *testing.T) {
			bin := openMPIProg(t, prog)
			h := newJob(n)
			s := listenPMIx(t, h, pmixJobOf(n))
			outs := runOpenMPIRanks(t, s, bin, n, nil)
			for r, out := range outs {
				if t.Failed() || !strings.Contains(out, fmt.Sprintf(" ok rank %d ", r)) || strings.Contains(out, " of 1") {
					t.Errorf("rank %d:\n%s", r, out)
				}
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			if len(h.finalized) != n || len(h.broken) != 0 {
				t.Errorf("finalized %v, protocol errors %v", h.finalized, h.broken)
			}
		})
	}
}

// readToClose reads c until the server closes it: nil at EOF or a reset (the server
// closed with bytes unread), the error otherwise (a deadline: never closed).
func readToClose(c net.Conn) error {
	_, err := io.ReadAll(c)
	if errors.Is(err, syscall.ECONNRESET) {
		return nil
	}
	return err
}

// readFullOrClose fills b from c; a closed or reset connection is an error.
func readFullOrClose(c net.Conn, b []byte) error {
	_, err := io.ReadFull(c, b)
	return err
}

// rawConnect builds a connect message as pmixConnectMsg does, with the version and
// bfrops module given.
func rawConnect(nspace string, rank, uid uint32, version, bfrops string) []byte {
	msg := pmixConnectMsg(nspace, rank, uid, uint32(os.Getgid()))
	body := bytes.Replace(msg[16:], []byte(pmixWireVersion+"\x00"+pmixBfrops+"\x00"), []byte(version+"\x00"+bfrops+"\x00"), 1)
	return append(append(msg[:8:8], binary.LittleEndian.AppendUint64(nil, uint64(len(body)))...), body...)
}

// dialPMIx opens a raw connection to s.
func dialPMIx(t testing.TB, s *PMIxServer) net.Conn {
	t.Helper()
	u, err := parsePMIxURI(strings.SplitN(s.Environ(0)[0], "=", 2)[1])
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", u.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(testbudget.Scale(10 * time.Second)))
	return c
}

// ackOf sends a connect message and returns the server's status, or an error when the
// server closed the connection without one.
func ackOf(t *testing.T, c net.Conn, msg []byte) (int32, error) {
	t.Helper()
	if _, err := c.Write(msg); err != nil {
		return 0, err
	}
	var ack [8]byte
	if _, err := io.ReadFull(c, ack[:]); err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(ack[:])), nil
}

// runPMIxJob runs n of gorma's PMIx clients through a fence with data against s.
func runPMIxJob(t *testing.T, s *PMIxServer, n int) {
	t.Helper()
	errs := make(chan error, n)
	for r := range n {
		go func() {
			errs <- func() error {
				c, err := ConnectPMIx(ctx(t), envOf(s, r))
				if err != nil {
					return err
				}
				defer c.Close()
				if err := c.Put(ctx(t), "k", []byte{byte(r)}); err != nil {
					return err
				}
				if err := c.Fence(ctx(t)); err != nil {
					return err
				}
				if v, err := c.Get(ctx(t), (r+1)%n, "k"); err != nil || len(v) != 1 || int(v[0]) != (r+1)%n {
					return fmt.Errorf("rank %d: get %v, %v", r, v, err)
				}
				return c.Finalize(ctx(t))
			}()
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// Strangers cannot stop the job: connections without the right credential, namespace or
// rank are refused, garbage and huge lengths are dropped, and connections that send
// nothing stay open without holding up the ranks. Each is reported as a stranger's
// (rank -1), which golaunch only logs. Then the job's ranks fence as if nothing happened.
func TestPMIxServerStrangers(t *testing.T) {
	const n = 3
	h := newJob(n)
	s := listenPMIx(t, h, pmixJobOf(n))
	uid := uint32(os.Getuid())
	refused := []struct {
		name string
		msg  []byte
		st   int32
	}{
		{"credential of another user", rawConnect("golaunch.job1", 0, uid+1, "4.2.2", "v41"), pmixErrNoPerm},
		{"another namespace", rawConnect("golaunch.job2", 0, uid, "4.2.2", "v41"), pmixErrInvalidNS},
		{"rank out of the job", rawConnect("golaunch.job1", n, uid, "4.2.2", "v41"), pmixErrBadParam},
	}
	for _, tc := range refused {
		st, err := ackOf(t, dialPMIx(t, s), tc.msg)
		if err != nil || st != tc.st {
			t.Errorf("%s: status %d, %v; want %d", tc.name, st, err, tc.st)
		}
	}
	for name, msg := range map[string][]byte{
		"garbage":              []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\nxxxxxxxxxxxxxxx"),
		"huge length":          append(bytes.Repeat([]byte{0xff}, 8), 0, 0, 0, 0, 0, 0, 0, 0x7f),
		"cut connect":          append(append(bytes.Repeat([]byte{0xff}, 8), 40, 0, 0, 0, 0, 0, 0, 0), "native"...),
		"connect without NULs": append(append(bytes.Repeat([]byte{0xff}, 8), 6, 0, 0, 0, 0, 0, 0, 0), "native"...),
	} {
		c := dialPMIx(t, s)
		c.Write(msg)
		if name == "cut connect" {
			c.(*net.TCPConn).CloseWrite()
		}
		if err := readToClose(c); err != nil {
			t.Errorf("%s: the server did not close the connection: %v", name, err)
		}
	}
	for range 20 {
		dialPMIx(t, s) // half-open: connected, silent
	}
	runPMIxJob(t, s, n)
	for _, e := range h.protocolErrors() {
		if e.Rank != -1 || e.Wire != "PMIx" {
			t.Errorf("a stranger's error reported as rank %d's (wire %q): %v", e.Rank, e.Wire, e)
		}
	}
	if got := len(h.protocolErrors()); got < len(refused)+3 {
		t.Errorf("%d protocol errors reported, want one per stranger:\n%v", got, h.protocolErrors())
	}
}

// A rank whose PMIx speaks another wire is refused with PMIX_ERR_NOT_SUPPORTED, and the
// error names its version. It goes with the pid of the rank's process, a child of this
// process, and rank -1: the Handler blames the rank whose process that is.
func TestPMIxServerRefusesOtherVersions(t *testing.T) {
	for _, v := range []struct{ version, bfrops string }{{"3.2.3", "v3"}, {"4.0.2", "v4"}, {"2.1.4", "v21"}} {
		h := newJob(2)
		s := listenPMIx(t, h, pmixJobOf(2))
		msg := rawConnect("golaunch.job1", 1, uint32(os.Getuid()), v.version, v.bfrops)
		cmd, out := startPeer(t, s, os.Args[0], "connect", nil, envPeerMsg+"="+hex.EncodeToString(msg))
		if want := fmt.Sprintf("status %d", pmixErrNotSupported); !out.Scan() || out.Text() != want {
			t.Errorf("PMIx %s: the rank says %q, %v; want %q", v.version, out.Text(), out.Err(), want)
			continue
		}
		errs := h.protocolErrors()
		want := "PMIx protocol error in connect: the rank's PMIx is version " + v.version
		if len(errs) != 1 || errs[0].Rank != -1 || errs[0].Pid != cmd.Process.Pid || !strings.Contains(errs[0].Error(), want) {
			t.Errorf("PMIx %s: reported %v; want pid %d and %q", v.version, errs, cmd.Process.Pid, want)
		}
	}
	for _, v := range []struct{ version, bfrops string }{{"4.2.2rc2", "v41"}, {"5.1.0", "v51"}, {"6.1.0", "v61"}} {
		h := newJob(2)
		s := listenPMIx(t, h, pmixJobOf(2))
		if st, err := ackOf(t, dialPMIx(t, s), rawConnect("golaunch.job1", 1, uint32(os.Getuid()), v.version, v.bfrops)); err != nil || st != 0 {
			t.Errorf("PMIx %s (%s): status %d, %v; want 0", v.version, v.bfrops, st, err)
		}
	}
}

// connectRank opens a raw connection and completes the connect of rank; it returns the
// connection and its client index.
func connectRank(t testing.TB, s *PMIxServer, rank uint32) (net.Conn, uint32) {
	t.Helper()
	c := dialPMIx(t, s)
	if _, err := c.Write(rawConnect("golaunch.job1", rank, uint32(os.Getuid()), "4.2.2", "v41")); err != nil {
		t.Fatal(err)
	}
	var ack [8]byte
	if _, err := io.ReadFull(c, ack[:]); err != nil || binary.BigEndian.Uint32(ack[:]) != 0 {
		t.Fatalf("connect: % x, %v", ack, err)
	}
	return c, binary.BigEndian.Uint32(ack[4:])
}

func sendPMIx(t testing.TB, c net.Conn, pindex, tag uint32, body []byte) {
	t.Helper()
	msg := appendPMIxHdr(nil, pmixHdr{pindex: int32(pindex), tag: tag, nbytes: uint32(len(body))})
	if _, err := c.Write(append(msg, body...)); err != nil {
		t.Fatal(err)
	}
}

func recvPMIx(t *testing.T, c net.Conn) (pmixHdr, []byte) {
	t.Helper()
	var hb [pmixHdrLen]byte
	if _, err := io.ReadFull(c, hb[:]); err != nil {
		t.Fatalf("no answer: %v", err)
	}
	h, err := parsePMIxHdr(hb[:])
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, h.nbytes)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatal(err)
	}
	return h, b
}

// A rank that breaks the protocol is reported by rank with a named PMIx protocol error
// (golaunch ends its job with it), and its connection is closed. A command the server
// knows but does not serve is answered PMIX_ERR_NOT_SUPPORTED and the connection goes on.
func TestPMIxServerProtocolErrors(t *testing.T) {
	bad := map[string]struct {
		body   []byte
		pindex int // -1: the connection's own
		want   string
	}{
		"unknown command":   {[]byte{2, 99}, -1, "unknown command 99"},
		"empty body":        {nil, -1, "truncated"},
		"commit bad scope":  {append(pmixCmd(pmixCmdCommit).b, 2, 9, 2, 1, 0), -1, "commit of scope 9"},
		"commit bad buffer": {append(pmixCmd(pmixCmdCommit).b, 2, 3, 2, 2, 0), -1, "buffer of type 2"},
		"fence cut":         {pmixFenceBody("golaunch.job1", true)[:10], -1, "in fence"},
		"trailing bytes":    {append(pmixCmd(pmixCmdFinalize).b, 0), -1, "1 bytes after the request"},
		"wrong index":       {pmixCmd(pmixCmdReq).b, 77, "client index 77"},
	}
	for name, tc := range bad {
		t.Run(name, func(t *testing.T) {
			h := newJob(2)
			s := listenPMIx(t, h, pmixJobOf(2))
			c, pindex := connectRank(t, s, 1)
			if tc.pindex >= 0 {
				pindex = uint32(tc.pindex)
			}
			sendPMIx(t, c, pindex, 5, tc.body)
			if err := readToClose(c); err != nil {
				t.Fatalf("connection not closed: %v", err)
			}
			s.Close() // waits for the connection's goroutine
			errs := h.protocolErrors()
			if len(errs) != 1 || errs[0].Rank != 1 || !strings.Contains(errs[0].Error(), tc.want) ||
				!strings.HasPrefix(errs[0].Error(), "pmi: rank 1: PMIx protocol error in ") {
				t.Fatalf("reported %v, want rank 1's error naming %q", errs, tc.want)
			}
			if !h.gone[1] {
				t.Error("rank 1 not reported gone")
			}
		})
	}
	t.Run("huge message", func(t *testing.T) {
		h := newJob(2)
		s := listenPMIx(t, h, pmixJobOf(2))
		c, pindex := connectRank(t, s, 0)
		msg := appendPMIxHdr(nil, pmixHdr{pindex: int32(pindex), tag: 1, nbytes: pmixMaxMsg + 1})
		c.Write(msg)
		io.ReadAll(c)
		s.Close()
		if errs := h.protocolErrors(); len(errs) != 1 || errs[0].Rank != 0 || !strings.Contains(errs[0].Error(), "limit") {
			t.Fatalf("reported %v", errs)
		}
	})
	t.Run("not supported", func(t *testing.T) {
		h := newJob(1)
		s := listenPMIx(t, h, pmixJobOf(1))
		c, pindex := connectRank(t, s, 0)
		for i, cmd := range []byte{pmixCmdPublish, 9, 15} {
			sendPMIx(t, c, pindex, uint32(10+i), pmixCmd(cmd).b)
			hd, b := recvPMIx(t, c)
			d := &pmixDec{b: b}
			if st := pmixStatusOf(d); hd.tag != uint32(10+i) || st != pmixErrNotSupported {
				t.Errorf("%s: tag %d status %d", pmixCmdName(cmd), hd.tag, st)
			}
		}
		sendPMIx(t, c, pindex, 20, pmixFenceBody("golaunch.job1", true))
		if hd, b := recvPMIx(t, c); hd.tag != 20 || !bytes.Equal(b, pmixStatusBody(0)) {
			t.Errorf("fence after refusals: tag %d body % x", hd.tag, b)
		}
		if errs := h.protocolErrors(); len(errs) != 0 {
			t.Errorf("reported %v", errs)
		}
	})
}

// The native credential as a user other than root: Open MPI ranks run as nobody, and the
// server, admitting nobody's processes, reads their credential's uid as the kernel's
// owner of their socket (the byte order of a real libpmix client).
func TestPMIxServerOpenMPIAsNobody(t *testing.T) {
	if os.Getuid() != 0 {
		testbudget.SkipEngine(t, "needs root, to run ranks as nobody")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		testbudget.SkipEngine(t, "no user nobody")
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	bin := openMPIProg(t, "../tests/mpi/allreduce.c")
	for d := filepath.Dir(bin); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755) // t.TempDir's directories are 0700
	}
	const n = 2
	h := newJob(n)
	s := listenPMIx(t, h, pmixJobOf(n))
	s.SetUID(uint32(uid))
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	outs := runOpenMPIRanks(t, s, bin, n, func(cmd *exec.Cmd) {
		cmd.Env = append(cmd.Env, "HOME=/tmp")
		cmd.Dir = "/tmp"
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	})
	for r, out := range outs {
		if !strings.Contains(out, fmt.Sprintf("allreduce ok rank %d of %d", r, n)) {
			t.Errorf("rank %d:\n%s", r, out)
		}
	}
	c, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
	defer cancel()
	if errs := h.protocolErrors(); len(errs) != 0 {
		t.Errorf("reported %v", errs)
	}

	// The other way round: nobody's process, claiming root's credential, at a server that
	// admits root, is closed at once and reported as a stranger.
	h = newJob(n)
	s = listenPMIx(t, h, pmixJobOf(n))
	u, _ := parsePMIxURI(strings.SplitN(s.Environ(0)[0], "=", 2)[1])
	_, port, _ := net.SplitHostPort(u.addr)
	script := "import socket,sys\ns=socket.create_connection(('127.0.0.1',int(sys.argv[1])))\n" +
		"s.sendall(bytes.fromhex(sys.argv[2]))\nprint(len(s.recv(8)))"
	cmd := exec.CommandContext(c, "/usr/bin/python3", "-c", script, port, fmt.Sprintf("%x", rawConnect("golaunch.job1", 0, 0, "4.2.2", "v41")))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	out, err := cmd.CombinedOutput()
	if err != nil && !strings.Contains(string(out), "ConnectionResetError") || err == nil && strings.TrimSpace(string(out)) != "0" {
		t.Fatalf("nobody's connection: %v\n%s", err, out)
	}
	s.Close()
	if errs := h.protocolErrors(); len(errs) != 1 || errs[0].Rank != -1 || !strings.Contains(errs[0].Error(), fmt.Sprintf("uid %d", uid)) {
		t.Errorf("nobody's connection reported as %v", errs)
	}
}

// A rank's cleanup registrations (job control) are removed when the server closes: files,
// a directory with what it holds when the registration says recursive, and the
// directory's parent once it is empty. A non-recursive registration of a directory that
// is not empty leaves it.
func TestPMIxServerCleanup(t *testing.T) {
	h := newJob(1)
	s := listenPMIx(t, h, pmixJobOf(1))
	c, pindex := connectRank(t, s, 0)
	top := t.TempDir()
	job := filepath.Join(top, "jf.1")
	rec := filepath.Join(job, "0")
	kept := filepath.Join(top, "kept")
	file := filepath.Join(top, "segment")
	for _, d := range []string{filepath.Join(rec, "sub"), kept} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{file, filepath.Join(rec, "sub", "f"), filepath.Join(kept, "f")} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	control := func(tag uint32, infos ...pmixInfo) {
		e := pmixCmd(pmixCmdJobControl)
		e.count(1)
		e.uvar(0)
		e.count(1)
		e.uvar(uint64(len(infos)))
		e.count(len(infos))
		for _, in := range infos {
			e.info(in)
		}
		sendPMIx(t, c, pindex, tag, e.b)
		if hd, b := recvPMIx(t, c); hd.tag != tag || !bytes.Equal(b, pmixStatusBody(0)) {
			t.Fatalf("job control: tag %d body % x", hd.tag, b)
		}
	}
	str := func(v string) pmixValue { return pmixValue{typ: pmixString, str: v} }
	control(1, pmixInfo{key: pmixKeyCleanDir, val: str(rec)}, pmixInfo{key: pmixKeyCleanRec, val: pmixValue{typ: pmixBool, u: 1}})
	control(2, pmixInfo{key: pmixKeyCleanFile, val: str(file)}, pmixInfo{key: pmixKeyCleanDir, val: str(kept)})
	control(3, pmixInfo{key: pmixKeyCleanFile, val: str("relative/path")})
	s.Close()
	for _, gone := range []string{rec, job, file} {
		if _, err := os.Stat(gone); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left: %v", gone, err)
		}
	}
	if _, err := os.Stat(filepath.Join(kept, "f")); err != nil {
		t.Errorf("a non-recursive registration removed what the directory held: %v", err)
	}
}

// barrierJob is jobHandler with barrier fences (Barrierer), which it counts.
type barrierJob struct {
	*jobHandler
	barriers sync.Map // rank -> true: the rank fenced as a barrier
}

func (h *barrierJob) Barrier(ctx context.Context, rank int, puts map[string][]byte) error {
	h.barriers.Store(rank, true)
	return h.x.Fence(ctx, rank, puts)
}

// A PMIx fence that does not collect (direct modex) is a barrier where the Handler can
// do one: the ranks' data stays with the Handler, and a get reads it there.
func TestPMIxServerDirectModex(t *testing.T) {
	const n = 3
	h := &barrierJob{jobHandler: newJob(n)}
	s := listenPMIx(t, h, pmixJobOf(n))
	errs := make(chan error, n)
	for r := range n {
		go func() {
			errs <- func() error {
				c, err := ConnectPMIx(ctx(t), envOf(s, r))
				if err != nil {
					return err
				}
				defer c.Close()
				if err := c.Put(ctx(t), "ep", []byte(fmt.Sprint("ep of ", r))); err != nil {
					return err
				}
				c.mu.Lock()
				kvs := c.pending
				c.pending = nil
				c.mu.Unlock()
				if err := c.status(ctx(t), "commit", pmixCommitBody(kvs)); err != nil {
					return err
				}
				if err := c.status(ctx(t), "fence", pmixFenceBody(c.nspace, false)); err != nil {
					return err
				}
				p := (r + 1) % n
				if v, err := c.Get(ctx(t), p, "ep"); err != nil || string(v) != fmt.Sprint("ep of ", p) {
					return fmt.Errorf("rank %d: rank %d's ep %q, %v", r, p, v, err)
				}
				return c.Finalize(ctx(t))
			}()
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	for r := range n {
		if _, ok := h.barriers.Load(r); !ok {
			t.Errorf("rank %d's fence without collect was not a barrier", r)
		}
	}
}
