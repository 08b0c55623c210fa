package pmi

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// pmi1 is the rank's end of a connection the agent handed to a rank (ServeConn), read
// line by line as an MPI library's PMI-1 client does.
type pmi1 struct {
	t    *testing.T
	conn net.Conn
	rd   *bufio.Scanner
}

func handTo(t *testing.T, s *Server, rank int) *pmi1 {
	t.Helper()
	ours, theirs := net.Pipe()
	s.ServeConn(ours, rank)
	t.Cleanup(func() { theirs.Close() })
	return &pmi1{t: t, conn: theirs, rd: newReader(theirs)}
}

// ask sends one request line and returns the answer line ("" when the agent hung up).
func (p *pmi1) ask(req string) string {
	p.t.Helper()
	p.send(req)
	return p.next()
}

func (p *pmi1) send(req string) {
	p.t.Helper()
	if _, err := p.conn.Write([]byte(req + "\n")); err != nil {
		p.t.Fatalf("send %q: %v", req, err)
	}
}

func (p *pmi1) next() string {
	if !p.rd.Scan() {
		return ""
	}
	return p.rd.Text()
}

// TestPMI1Conformance checks the agent's answer to each PMI-1 request against the exact
// line Hydra writes (pmi-1.1's messages; an answer that fails has rc=-1 and a msg= without
// spaces, whose text is free).
func TestPMI1Conformance(t *testing.T) {
	h := newJob(1)
	s := NewServer(h)
	defer s.Close()
	p := handTo(t, s, 0)
	for _, tc := range []struct{ send, want string }{
		{"cmd=get_maxes", "cmd=maxes rc=-1 msg="},
		{"cmd=init pmi_version=1 pmi_subversion=1", "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0"},
		{"cmd=get_maxes", "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024"},
		{"cmd=get_appnum", "cmd=appnum appnum=0"},
		{"cmd=get_my_kvsname", "cmd=my_kvsname kvsname=kvs_job1"},
		{"cmd=get_universe_size", "cmd=universe_size size=1"},
		{"cmd=put kvsname=kvs_job1 key=k1 value=v1", "cmd=put_result rc=0 msg=success"},
		{"cmd=put value=a,b(c);d key=k2 kvsname=kvs_job1", "cmd=put_result rc=0 msg=success"},
		{"cmd=put kvsname=kvs_job1 key=empty value=", "cmd=put_result rc=0 msg=success"},
		{"cmd=get kvsname=kvs_job1 key=k1", "cmd=get_result rc=-1 msg=key_k1_not_found value=unknown"},
		{"cmd=barrier_in", "cmd=barrier_out"},
		{"cmd=get kvsname=kvs_job1 key=k1", "cmd=get_result rc=0 msg=success value=v1"},
		{"cmd=get key=k2 kvsname=kvs_job1 extra=ignored", "cmd=get_result rc=0 msg=success value=a,b(c);d"},
		{"cmd=get kvsname=kvs_job1 key=empty", "cmd=get_result rc=0 msg=success value="},
		{"cmd=get kvsname=kvs_job1 key=PMI_process_mapping", "cmd=get_result rc=0 msg=success value=(vector,(0,1,1))"},
		{"cmd=get kvsname=kvs_job1 key=nokey", "cmd=get_result rc=-1 msg=key_nokey_not_found value=unknown"},
		{"cmd=put kvsname=kvs_other key=x value=y", "cmd=put_result rc=0 msg=success"},
		{"cmd=put kvsname=kvs_job1 value=y", "cmd=put_result rc=-1 msg="},
		{"cmd=put kvsname=kvs_job1 key=PMI_process_mapping value=y", "cmd=put_result rc=-1 msg="},
		{"cmd=publish_name service=s port=p", "cmd=publish_result rc=-1 msg="},
		{"cmd=lookup_name service=s", "cmd=lookup_result rc=-1 msg="},
		{"cmd=frobnicate", "cmd=error rc=-1 msg="},
		{"novalue at all", "cmd=error rc=-1 msg="},
		{"cmd=init pmi_version=1 pmi_subversion=1", "cmd=response_to_init rc=-1 msg="},
		{"mcmd=spawn\nnprocs=2\nexecname=x\nendcmd", "cmd=spawn_result rc=-1 msg="},
		{"cmd=finalize", "cmd=finalize_ack"},
	} {
		got := p.ask(tc.send)
		if got != tc.want && !(strings.HasSuffix(tc.want, "msg=") && strings.HasPrefix(got, tc.want) && !strings.Contains(got[len(tc.want):], " ")) {
			t.Errorf("%q: got %q, want %q", tc.send, got, tc.want)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.finalized[0] {
		t.Error("finalize was not passed to the handler")
	}
}

// TestPMI1InitRefused: a PMI-2 init on the PMI-1 wire, and a PMI-1 init on the agent
// socket (which cannot tell the rank), are refused and the connection closed.
func TestPMI1InitRefused(t *testing.T) {
	s := serve(t, newJob(1))
	p := handTo(t, s, 0)
	got := p.ask("cmd=init pmi_version=2 pmi_subversion=0")
	if !strings.HasPrefix(got, "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1 msg=") {
		t.Fatalf("PMI-2 init: %q", got)
	}
	if line := p.next(); line != "" {
		t.Fatalf("connection open after a refused init: %q", line)
	}
	conn, err := net.Dial("unix", s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	q := &pmi1{t: t, conn: conn, rd: newReader(conn)}
	if got := q.ask("cmd=init pmi_version=1 pmi_subversion=1"); !strings.HasPrefix(got, "cmd=response_to_init rc=-1 msg=") ||
		!strings.Contains(got, "PMI_FD") {
		t.Fatalf("PMI-1 init on the socket: %q", got)
	}
}

// TestPMI1AbortAndEvents: an MPI library's abort gets no answer (it waits to be ended),
// fences of an aborting job are not answered, and events never reach a PMI-1 client,
// while a gorma client of the same job gets them.
func TestPMI1AbortAndEvents(t *testing.T) {
	h := newJob(2)
	s := serve(t, h)
	p := handTo(t, s, 1)
	if got := p.ask("cmd=init pmi_version=1 pmi_subversion=1"); got != "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0" {
		t.Fatalf("init: %q", got)
	}
	g, err := Dial(ctx(t), s.Path(), 0, "job1")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	s.Notify(-1, Event{Kind: ProcFailed, Rank: 0, Host: "h 0", Code: 137, Cause: "killed by signal 9"})
	if ev := <-g.Events(); ev.Host != "h 0" || ev.Cause != "killed by signal 9" {
		t.Fatalf("gorma client's event: %+v", ev)
	}
	p.send("cmd=abort exitcode=3")
	if got := p.ask("cmd=get_my_kvsname"); got != "cmd=my_kvsname kvsname=kvs_job1" {
		t.Fatalf("after an abort and an event, the next line is %q", got)
	}
	h.mu.Lock()
	aborts := strings.Join(h.aborts, ",")
	h.mu.Unlock()
	if aborts != "1:3:" {
		t.Fatalf("aborts %q", aborts)
	}
	h.x.Fail(errors.New("rank 1 aborted"))
	p.send("cmd=barrier_in")
	if got := p.ask("cmd=get_appnum"); got != "cmd=appnum appnum=0" {
		t.Fatalf("after a failed fence, the next line is %q", got)
	}
	if err := g.Fence(ctx(t)); !errors.Is(err, ErrAborted) {
		t.Fatalf("gorma fence of the aborting job: %v", err)
	}
}

// TestMixedFence: a PMI-1 rank and a gorma rank share one fence, and each reads the
// other's key (PMI-1 by key alone, gorma by rank).
func TestMixedFence(t *testing.T) {
	h := newJob(2)
	s := serve(t, h)
	p := handTo(t, s, 1)
	p.ask("cmd=init pmi_version=1 pmi_subversion=1")
	if got := p.ask("cmd=put kvsname=kvs_job1 key=mpi-card value=abc"); got != "cmd=put_result rc=0 msg=success" {
		t.Fatalf("put: %q", got)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	var gerr error
	var gval []byte
	go func() {
		defer wg.Done()
		g, err := Dial(ctx(t), s.Path(), 0, "job1")
		if err != nil {
			gerr = err
			return
		}
		defer g.Close()
		if gerr = g.Put(ctx(t), "go-card", []byte{0, 1, 0xff}); gerr != nil {
			return
		}
		if gerr = g.Fence(ctx(t)); gerr != nil {
			return
		}
		gval, gerr = h.x.Get(1, "mpi-card")
	}()
	if got := p.ask("cmd=barrier_in"); got != "cmd=barrier_out" {
		t.Fatalf("barrier: %q", got)
	}
	if got := p.ask("cmd=get kvsname=kvs_job1 key=go-card"); got != "cmd=get_result rc=0 msg=success value=0001ff" {
		t.Fatalf("PMI-1 get of the gorma rank's key: %q", got)
	}
	wg.Wait()
	if gerr != nil || string(gval) != "abc" {
		t.Fatalf("gorma side: %q, %v", gval, gerr)
	}
}

// TestExchangeAnyRank: of the ranks that put a key in one round the lowest wins; a later
// round's put replaces it.
func TestExchangeAnyRank(t *testing.T) {
	x := NewExchange(3)
	x.Merge(map[int]map[string][]byte{2: {"k": []byte("two")}, 1: {"k": []byte("one")}, 0: {"other": nil}})
	if v, err := x.Get(AnyRank, "k"); err != nil || string(v) != "one" {
		t.Fatalf("round 1: %q, %v", v, err)
	}
	x.Merge(map[int]map[string][]byte{2: {"k": []byte("two again")}, 1: {}, 0: {}})
	if v, err := x.Get(AnyRank, "k"); err != nil || string(v) != "two again" {
		t.Fatalf("round 2: %q, %v", v, err)
	}
	if _, err := x.Get(AnyRank, "none"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing key: %v", err)
	}
}

// FuzzServerLine feeds one arbitrary line to an initialized PMI-1 connection and checks
// that the server stays in step: it answers with at most one well-formed line, and the
// next request gets its own answer. A protocol error it reports names rank 0 and wraps
// ErrProtocol, and its line got a failed answer.
func FuzzServerLine(f *testing.F) {
	for _, seed := range []string{
		"cmd=put kvsname=kvs_job1 key=k value=v", "cmd=get kvsname=kvs_job1 key=PMI_process_mapping",
		"cmd=barrier_in", "cmd=abort exitcode=3", "cmd=abort exitcode=x", "cmd=finalize", "cmd=init pmi_version=1",
		"cmd=gorma-init version=3 rank=0 job=job1 id=1", "cmd=get key=k rank=9 id=2", "cmd==", "x", "cmd=get rank=-5 key=",
		"cmd=put key=" + strings.Repeat("k", 80) + " value=" + strings.Repeat("v", 1100),
		"cmd=frobnicate", "cmd=init pmi_version=99", "cmd=put =v", "key=k", "cmd=get\x00", "cmd=get kvsname=k",
		"cmd=put kvsname=k key=k value=a b  c=d ", "000044cmd=fullinit;pmirank=0;",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, req string) {
		if len(req) > 2048 || strings.ContainsAny(req, "\n\r") || strings.HasPrefix(strings.TrimSpace(req), "mcmd=") {
			return // one line, of a size worth minimizing; a multi-line command waits for its endcmd
		}
		h := newJob(1)
		s := NewServer(h)
		defer s.Close()
		p := handTo(t, s, 0)
		p.conn.SetDeadline(time.Now().Add(testbudget.Scale(10 * time.Second))) // a server out of step fails, never hangs
		p.ask("cmd=init pmi_version=1 pmi_subversion=1")
		p.send(req)
		p.send("cmd=get_my_kvsname")
		failed := false
		for i := 0; i < 2; i++ {
			got := p.next()
			if got == "cmd=my_kvsname kvsname=kvs_job1" {
				for _, e := range h.protocolErrors() {
					if e.Rank != 0 || !errors.Is(e, ErrProtocol) || !failed {
						t.Fatalf("after %q: protocol error %+v (%v) after an answer that did not fail", req, e, e)
					}
				}
				return
			}
			failed = failed || strings.Contains(got, "rc=-1")
			m, err := parseLine(got)
			if err != nil {
				t.Fatalf("after %q: answer %q: %v", req, got, err)
			}
			if m["rc"] != "" && m["rc"] != "0" && (m["msg"] == "" || strings.Contains(m["msg"], " ")) {
				t.Fatalf("after %q: failed answer %q without a proper msg", req, got)
			}
		}
		t.Fatalf("after %q: the next request was not answered in step", req)
	})
}

// TestForeignOnAgent: the package's own PMI-1 client of foreign process managers
// (Connect, as a gorma rank under Slurm or Hydra) works against the agent's server over
// an inherited socketpair, as PMI_FD: values longer than vallen_max, the fence, and the
// process mapping.
func TestForeignOnAgent(t *testing.T) {
	const n = 2
	h := newJob(n)
	s := NewServer(h)
	defer s.Close()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for r := range n {
		conn, fd := serverPair(t)
		s.ServeConn(conn, r)
		env := map[string]string{EnvPMIFD: strconv.Itoa(fd), EnvPMIRank: strconv.Itoa(r), EnvPMISize: strconv.Itoa(n)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = func() error {
				f, err := Connect(ctx(t), func(k string) string { return env[k] })
				if err != nil {
					return err
				}
				defer f.Close()
				long := bytes.Repeat([]byte{byte(r), 0xff, '='}, 1500)
				if err := f.Put(ctx(t), "card", long); err != nil {
					return err
				}
				if err := f.Fence(ctx(t)); err != nil {
					return err
				}
				other := (r + 1) % n
				v, err := f.Get(ctx(t), other, "card")
				if err != nil || !bytes.Equal(v, bytes.Repeat([]byte{byte(other), 0xff, '='}, 1500)) {
					return fmt.Errorf("rank %d: get of rank %d's card: %d bytes, %v", r, other, len(v), err)
				}
				nodes, err := f.Nodes(ctx(t))
				if err != nil || len(nodes) != n || nodes[0] != 0 || nodes[1] != 0 {
					return fmt.Errorf("rank %d: nodes %v, %v", r, nodes, err)
				}
				if f.Version() != "1.1" || f.KVSName() != "kvs_job1" || f.Rank() != r || f.Size() != n {
					return fmt.Errorf("rank %d: version %s kvs %s rank %d size %d", r, f.Version(), f.KVSName(), f.Rank(), f.Size())
				}
				return f.Finalize(ctx(t))
			}()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestGormaOnHandedConn: a gorma client may use the connection the agent handed to its
// rank (its PMI_FD) instead of the socket, naming that rank; another rank is refused.
func TestGormaOnHandedConn(t *testing.T) {
	h := newJob(2)
	s := NewServer(h)
	defer s.Close()
	ours, theirs := net.Pipe()
	s.ServeConn(ours, 1)
	if _, err := DialConn(ctx(t), theirs, 0, "job1"); err == nil || !strings.Contains(err.Error(), "connection of rank 1") {
		t.Fatalf("gorma-init of rank 0 on rank 1's connection: %v", err)
	}
	ours, theirs = net.Pipe()
	s.ServeConn(ours, 1)
	c, err := DialConn(ctx(t), theirs, 1, "job1")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Rank() != 1 || c.Size() != 2 || string(c.Info().Secret) != "0123456789abcdef" || c.Info().KVSName != "kvs_job1" {
		t.Fatalf("rank %d size %d info %+v", c.Rank(), c.Size(), c.Info())
	}
	s.Notify(1, Event{Kind: Aborted, Rank: 0, Code: 3, Cause: "rank 0 called Abort(3)"})
	if ev := <-c.Events(); ev.Kind != Aborted || ev.Code != 3 || ev.Cause != "rank 0 called Abort(3)" {
		t.Fatalf("event %+v", ev)
	}
}

// TestExchangeComplete: an agent of a multi-host job completes a round when told, not by
// its own count; Held answers for its ranks during the round and after it; a round told
// twice completes once, and a late agent takes a later round number as its own.
// FenceThen names the round a fence is in.
func TestExchangeComplete(t *testing.T) {
	x := NewExchange(4) // ranks 0 and 1 fence here, 2 and 3 elsewhere
	errs := make(chan error, 2)
	for r := range 2 {
		go func() { errs <- x.Fence(context.Background(), r, map[string][]byte{"card": []byte{byte(r)}}) }()
	}
	waitFenced := func(n int) {
		t.Helper()
		deadline := time.Now().Add(testbudget.Scale(10 * time.Second))
		for x.missing() != 4-n {
			if time.Now().After(deadline) {
				t.Fatalf("%d ranks fenced, want %d", 4-x.missing(), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFenced(2)
	if puts, ok := x.Held([]int{0, 1}, 1); !ok || string(puts[1]["card"]) != "\x01" {
		t.Fatalf("held during round 1: %v %v", puts, ok)
	}
	if _, ok := x.Held([]int{0}, 2); ok {
		t.Fatal("held answers for round 2 during round 1")
	}
	x.Complete(1, map[int]map[string][]byte{2: {"k": []byte("two")}})
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if v, err := x.Get(2, "k"); err != nil || string(v) != "two" || x.Rounds() != 1 {
		t.Fatalf("after round 1: %q %v, %d rounds", v, err, x.Rounds())
	}
	if _, err := x.Get(3, "card"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a barrier rank's card of another host: %v", err)
	}
	x.Complete(1, nil) // told twice
	if x.Rounds() != 1 {
		t.Fatalf("round 1 completed twice: %d rounds", x.Rounds())
	}
	go func() { errs <- x.Fence(context.Background(), 0, map[string][]byte{"card": []byte("new")}) }()
	waitFenced(1)
	if puts, ok := x.Held([]int{0}, 2); !ok || string(puts[0]["card"]) != "new" {
		t.Fatalf("held during round 2: %v %v", puts, ok)
	}
	if puts, ok := x.Held([]int{0}, 1); !ok || string(puts[0]["card"]) != "\x00" {
		t.Fatalf("held for round 1 during round 2: %v %v", puts, ok)
	}
	x.Complete(5, nil)
	if err := <-errs; err != nil || x.Rounds() != 5 {
		t.Fatalf("late round number: %v, %d rounds", err, x.Rounds())
	}
	told := make(chan int, 1)
	go func() {
		errs <- x.FenceThen(context.Background(), 1, nil, func(round int) error { told <- round; return nil })
	}()
	if n := <-told; n != 6 {
		t.Fatalf("FenceThen after round 5 says round %d, want 6", n)
	}
	x.Complete(6, nil)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}
