package pmi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// jobHandler is a one-host Handler over an Exchange, recording what the server reports.
type jobHandler struct {
	x      *Exchange
	size   int
	secret []byte

	mu        sync.Mutex
	finalized map[int]bool
	gone      map[int]bool
	aborts    []string
	broken    []*ProtocolError
}

func newJob(size int) *jobHandler {
	return &jobHandler{x: NewExchange(size), size: size, secret: []byte("0123456789abcdef"),
		finalized: map[int]bool{}, gone: map[int]bool{}}
}

func (h *jobHandler) Init(_ context.Context, rank int, job string) (Info, error) {
	if job != "job1" && job != "" || rank < 0 || rank >= h.size {
		return Info{}, fmt.Errorf("rank %d of job %q is not part of this job", rank, job)
	}
	return Info{Size: h.size, Secret: h.secret, KVSName: "kvs_job1",
		ProcessMapping: fmt.Sprintf("(vector,(0,1,%d))", h.size), Hosts: []string{"node a,1=x%"}}, nil
}
func (h *jobHandler) Fence(ctx context.Context, rank int, puts map[string][]byte) error {
	return h.x.Fence(ctx, rank, puts)
}
func (h *jobHandler) Get(_ context.Context, rank int, key string) ([]byte, error) {
	return h.x.Get(rank, key)
}
func (h *jobHandler) Abort(rank, code int, msg string) {
	h.mu.Lock()
	h.aborts = append(h.aborts, fmt.Sprintf("%d:%d:%s", rank, code, msg))
	h.mu.Unlock()
}
func (h *jobHandler) Finalize(rank int) { h.mu.Lock(); h.finalized[rank] = true; h.mu.Unlock() }
func (h *jobHandler) Gone(rank int)     { h.mu.Lock(); h.gone[rank] = true; h.mu.Unlock() }
func (h *jobHandler) ProtocolError(e *ProtocolError) {
	h.mu.Lock()
	h.broken = append(h.broken, e)
	h.mu.Unlock()
}

// protocolErrors returns the protocol errors the server reported.
func (h *jobHandler) protocolErrors() []*ProtocolError {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*ProtocolError(nil), h.broken...)
}

func serve(t *testing.T, h Handler) *Server {
	t.Helper()
	s, err := Listen(filepath.Join(t.TempDir(), "agent.sock"), h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Second))
	t.Cleanup(cancel)
	return c
}

func TestPutFenceGet(t *testing.T) {
	const n = 4
	h := newJob(n)
	s := serve(t, h)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- func() error {
				c, err := Dial(ctx(t), s.Path(), r, "job1")
				if err != nil {
					return err
				}
				defer c.Close()
				if i := c.Info(); i.Size != n || string(i.Secret) != "0123456789abcdef" ||
					i.ProcessMapping != fmt.Sprintf("(vector,(0,1,%d))", n) || len(i.Hosts) != 1 || i.Hosts[0] != "node a,1=x%" {
					return fmt.Errorf("rank %d: info %+v", r, c.Info())
				}
				for round := range 3 {
					card := []byte(fmt.Sprintf("card %d round %d \x00\xff space=yes", r, round))
					if err := c.Put(ctx(t), "ep", card); err != nil {
						return err
					}
					if err := c.Fence(ctx(t)); err != nil {
						return err
					}
					for p := range n {
						v, err := c.Get(ctx(t), p, "ep")
						if err != nil {
							return err
						}
						if want := fmt.Sprintf("card %d round %d \x00\xff space=yes", p, round); string(v) != want {
							return fmt.Errorf("rank %d got %q from %d, want %q", r, v, p, want)
						}
					}
					if err := c.Fence(ctx(t)); err != nil { // nobody overwrites before all read
						return err
					}
				}
				if _, err := c.Get(ctx(t), 0, "nope"); !errors.Is(err, ErrNotFound) {
					return fmt.Errorf("get of a missing key: %v", err)
				}
				return c.Finalize(ctx(t))
			}()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(testbudget.Scale(5 * time.Second))
	for {
		h.mu.Lock()
		done := len(h.finalized) == n && len(h.gone) == n
		h.mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("finalized %v gone %v", h.finalized, h.gone)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestInitRejected(t *testing.T) {
	s := serve(t, newJob(2))
	if _, err := Dial(ctx(t), s.Path(), 5, "job1"); err == nil || !strings.Contains(err.Error(), "not part of this job") {
		t.Fatalf("rank outside the job: %v", err)
	}
	if _, err := Dial(ctx(t), s.Path(), 0, "other"); err == nil {
		t.Fatal("a rank of another job was admitted")
	}
	c, err := Dial(ctx(t), s.Path(), 0, "job1")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := Dial(ctx(t), s.Path(), 0, "job1"); err == nil || !strings.Contains(err.Error(), "already connected") {
		t.Fatalf("second connection of rank 0: %v", err)
	}
	if _, err := Dial(ctx(t), filepath.Join(t.TempDir(), "none.sock"), 0, "job1"); err == nil || !strings.Contains(err.Error(), "golaunch") {
		t.Fatalf("missing socket: %v", err)
	}
}

func TestRawProtocolErrors(t *testing.T) {
	s := serve(t, newJob(1))
	conn, err := net.Dial("unix", s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rd := newReader(conn)
	for _, tc := range []struct{ send, want string }{
		{"cmd=barrier_in id=1\n", "before_init"},
		{"cmd=gorma-init version=99 rank=0 job=job1 id=2\n", "version"},
	} {
		conn.Write([]byte(tc.send))
		if !rd.Scan() {
			t.Fatalf("no answer to %q", tc.send)
		}
		m, err := parseLine(rd.Text())
		if err != nil || m["rc"] != "-1" || !strings.Contains(untext(m["msg"]), tc.want) {
			t.Fatalf("after %q got %q (%v), want an error mentioning %q", tc.send, rd.Text(), err, tc.want)
		}
	}
	if rd.Scan() {
		t.Fatalf("connection stayed open after a failed init: %q", rd.Text())
	}
}

func TestFenceCancelAndFail(t *testing.T) {
	h := newJob(2)
	s := serve(t, h)
	c, err := Dial(ctx(t), s.Path(), 0, "job1")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.Fence(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("fence without the other rank: %v", err)
	}
	// The agent still counts rank 0 as fenced: once rank 1 fences the round completes, and
	// the abandoned request's late answer must not be taken for the next request's.
	c1, err := Dial(ctx(t), s.Path(), 1, "job1")
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	if err := c1.Put(ctx(t), "k", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := c1.Fence(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx(t), 1, "k"); err != nil || string(v) != "one" {
		t.Fatalf("get after the completed round: %q, %v", v, err)
	}
	// An aborting job fails pending fences.
	go func() { time.Sleep(20 * time.Millisecond); h.x.Fail(errors.New("rank 0 died")) }()
	if err := c1.Fence(ctx(t)); !errors.Is(err, ErrAborted) {
		t.Fatalf("fence in an aborting job: %v", err)
	}
}

func TestEventsAbortAndClose(t *testing.T) {
	h := newJob(2)
	s := serve(t, h)
	c, err := Dial(ctx(t), s.Path(), 1, "job1")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Abort(7, "bad input"); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	got := strings.Join(h.aborts, ",")
	h.mu.Unlock()
	if got != "1:7:bad input" {
		t.Fatalf("abort recorded as %q", got)
	}
	s.Notify(-1, Event{Kind: ProcFailed, Rank: 0, Host: "h0", Code: 137, Cause: "killed by signal 9"})
	select {
	case ev := <-c.Events():
		if ev.Kind != ProcFailed || ev.Rank != 0 || ev.Host != "h0" || ev.Code != 137 || ev.Cause != "killed by signal 9" {
			t.Fatalf("event %+v", ev)
		}
	case <-time.After(testbudget.Scale(5 * time.Second)):
		t.Fatal("event not delivered")
	}
	// A blocked request ends when the agent goes away.
	go func() { time.Sleep(20 * time.Millisecond); s.Close() }()
	if err := c.Fence(ctx(t)); !errors.Is(err, ErrClosed) && !errors.Is(err, ErrAborted) {
		t.Fatalf("fence when the agent closed: %v", err)
	}
	select {
	case _, ok := <-c.Events():
		if ok {
			t.Fatal("unexpected event")
		}
	case <-time.After(testbudget.Scale(5 * time.Second)):
		t.Fatal("Events not closed when the connection ended")
	}
}

func TestContract(t *testing.T) {
	good := Contract{JobID: "ab12", Rank: 2, Size: 4, LocalRank: 0, LocalSize: 2, NodeRank: 1, NumNodes: 2,
		Host: "h1", AgentSock: "/tmp/x/agent.sock", Transport: "tcp", TCPAddr: "10.9.0.2", IdleWatch: [2]int{3, 4}, HostCPUs: 8,
		Spawn: SpawnGroup{First: 2, Count: 2, Leader: 0}}
	env := map[string]string{}
	for _, kv := range good.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	got, err := ReadContract(func(k string) string { return env[k] })
	if err != nil || got != good {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if _, err := ReadContract(func(string) string { return "" }); !errors.Is(err, ErrNoContract) {
		t.Fatalf("empty environment: %v", err)
	}
	for _, tc := range []struct{ key, val, want string }{
		{EnvRank, "x", EnvRank},
		{EnvRank, "4", "not below"},
		{EnvSize, "0", EnvSize},
		{EnvTransport, "rdma", "auto, shm or tcp"},
		{EnvAgentSock, "", EnvAgentSock},
		{EnvLocalRank, "2", "not below"},
		{EnvIdleWatch, "3", "page,bell"},
		{EnvIdleWatch, "2,4", "integer >= 3"},
		{EnvIdleWatch, "3,x", "integer >= 3"},
		{EnvIdleWatch, "5,5", "must differ"},
		{EnvHostCPUs, "0", EnvHostCPUs},
		{EnvHostCPUs, "two", "integer >= 1"},
		{EnvSpawn, "2,2", "first,count,leader"},
		{EnvSpawn, "2,0,0", "at least 1 rank"},
		{EnvSpawn, "2,2,3", "after the leader"},
		{EnvSpawn, "3,1,0", "not in the spawned group"},
		{EnvSpawn, "2,3,0", "not in the spawned group"},
	} {
		bad := map[string]string{}
		for k, v := range env {
			bad[k] = v
		}
		bad[tc.key] = tc.val
		if _, err := ReadContract(func(k string) string { return bad[k] }); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%q: error %v, want one mentioning %q", tc.key, tc.val, err, tc.want)
		}
	}
}

// TestErrorTexts: every error a rank can get from the client says "pmi:" once, names the
// request, and still matches its sentinel.
func TestErrorTexts(t *testing.T) {
	h := newJob(2)
	s := serve(t, h)
	c, err := Dial(ctx(t), s.Path(), 0, "job1")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	once := func(what string, err error, sentinel error, want ...string) {
		t.Helper()
		if !errors.Is(err, sentinel) {
			t.Fatalf("%s: %v does not match %v", what, err, sentinel)
		}
		if n := strings.Count(err.Error(), "pmi:"); n != 1 {
			t.Errorf("%s: %q says pmi: %d times", what, err, n)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", what, err, w)
			}
		}
	}
	_, err = c.Get(ctx(t), 1, "nokey")
	once("get", err, ErrNotFound, "key not found", `"nokey"`)
	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	once("fence timeout", c.Fence(short), context.DeadlineExceeded, "fence")
	h.x.Fail(errors.New("rank 1 died"))
	once("aborted fence", c.Fence(ctx(t)), ErrAborted, "job aborted", "rank 1 died")
	s.Close()
	once("after close", c.Put(ctx(t), "k", nil), ErrClosed, "connection closed")

	// init against an agent that hangs up at once.
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "mute.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if conn, err := ln.Accept(); err == nil {
			conn.Close()
		}
	}()
	_, err = Dial(ctx(t), ln.Addr().String(), 3, "job1")
	once("init", err, ErrClosed, "init rank 3")
}
