package pmi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// testCtx bounds a test's PMI waits; no test relies on it expiring.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
	t.Cleanup(cancel)
	return ctx
}

// blob returns n deterministic bytes, every byte value included.
func blob(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + seed*13)
	}
	return b
}

// TestRFC13Grammar runs the PMI-1 client against answers that RFC 13's grammar allows
// and Flux, Hydra and Slurm send: reordered keys, extra keys, rc and msg omitted, found=,
// 1.2 answers; and against rc != 0 refusals.
func TestRFC13Grammar(t *testing.T) {
	card := blob(300, 1)
	tests := []struct {
		name    string
		answers map[string]string // cmd -> answer line replacing the default
		err     string            // "" when Connect, Put, Fence, Get and Finalize all work
		errIs   error
	}{
		{name: "defaults"},
		{name: "reordered keys", answers: map[string]string{
			"init":      "cmd=response_to_init rc=0 pmi_subversion=1 pmi_version=1",
			"get_maxes": "cmd=maxes vallen_max=1024 keylen_max=64 rc=0 kvsname_max=256",
		}},
		{name: "extra keys", answers: map[string]string{
			"init":           "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0 msg=success extra=1",
			"get_maxes":      "cmd=maxes rc=0 msg=success kvsname_max=256 keylen_max=64 vallen_max=1024 flux=yes",
			"get_my_kvsname": "cmd=my_kvsname info=ok kvsname=kvs_42_0 rc=0",
			"barrier_in":     "cmd=barrier_out rc=0 group=world",
		}},
		{name: "rc and msg omitted", answers: map[string]string{
			"init":           "cmd=response_to_init pmi_version=1 pmi_subversion=1",
			"get_maxes":      "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024",
			"get_my_kvsname": "cmd=my_kvsname kvsname=kvs_42_0",
			"put":            "cmd=put_result",
			"finalize":       "cmd=finalize_ack",
		}},
		{name: "1.2 answer", answers: map[string]string{"init": "cmd=response_to_init pmi_version=1 pmi_subversion=2 rc=0"}},
		{name: "spaces and tabs", answers: map[string]string{"get_maxes": "cmd=maxes   kvsname_max=256\tkeylen_max=64  vallen_max=1024 "}},
		{name: "appnum refused", answers: map[string]string{"get_appnum": "cmd=appnum rc=-1 msg=no_appnum"}},
		{name: "init refused", answers: map[string]string{"init": "cmd=response_to_init rc=-1 msg=version_mismatch pmi_version=1 pmi_subversion=0"},
			err: "version_mismatch", errIs: ErrRefused},
		{name: "init answers 3", answers: map[string]string{"init": "cmd=response_to_init rc=0 pmi_version=3 pmi_subversion=0"},
			err: "asked for pmi_version=1", errIs: ErrProtocol},
		{name: "put refused", answers: map[string]string{"put": "cmd=put_result rc=-1 msg=duplicate_key"},
			err: "duplicate_key", errIs: ErrRefused},
		{name: "barrier refused", answers: map[string]string{"barrier_in": "cmd=barrier_out rc=1 msg=failed_to_send_temp_kvs"},
			err: "barrier_in (rank 0): server answered", errIs: ErrRefused},
		{name: "maxes too small", answers: map[string]string{"get_maxes": "cmd=maxes kvsname_max=256 keylen_max=8 vallen_max=1024"},
			err: "too short for gorma", errIs: ErrProtocol},
		{name: "maxes missing", answers: map[string]string{"get_maxes": "cmd=maxes rc=0"},
			err: "answer without kvsname_max=", errIs: ErrProtocol},
		{name: "other command", answers: map[string]string{"barrier_in": "cmd=put_result rc=0"},
			err: `barrier_in (rank 0): server answered "cmd=put_result rc=0": protocol error: want cmd=barrier_out`, errIs: ErrProtocol},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pm := newFakePM(t, func(p *fakePM, cmd string, _ Field2, def string) string {
				if a, ok := tt.answers[cmd]; ok {
					return a
				}
				return def
			})
			err := putFenceGet(testCtx(t), pm.env(), card)
			if tt.err == "" {
				if err != nil {
					t.Fatalf("got %v, want success", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, tt.errIs) || !strings.Contains(err.Error(), "PMI-1") {
				t.Fatalf("got %v, want an error naming PMI-1 with %q (errors.Is %v)", err, tt.err, tt.errIs)
			}
		})
	}
}

// putFenceGet connects, puts value, fences, gets it back, gets a missing key, finalizes.
func putFenceGet(ctx context.Context, getenv func(string) string, value []byte) error {
	f, err := Connect(ctx, getenv)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Put(ctx, "card", value); err != nil {
		return err
	}
	if err := f.Fence(ctx); err != nil {
		return err
	}
	got, err := f.Get(ctx, f.Rank(), "card")
	if err != nil {
		return err
	}
	if !bytes.Equal(got, value) {
		return fmt.Errorf("got back %d bytes, not the %d put", len(got), len(value))
	}
	if _, err := f.Get(ctx, f.Rank(), "absent"); !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("get of an absent key: %v, want ErrNotFound", err)
	}
	return f.Finalize(ctx)
}

func TestForeignFoundAnswers(t *testing.T) {
	// found=TRUE with the value, found=FALSE with rc=0 (RFC 13's get_result).
	pm := newFakePM(t, func(p *fakePM, cmd string, req Field2, def string) string {
		if cmd == "get" && strings.HasPrefix(def, "cmd=get_result rc=0") {
			return strings.Replace(def, "rc=0", "found=TRUE rc=0", 1)
		}
		if cmd == "get" {
			return "cmd=get_result rc=0 found=FALSE"
		}
		return def
	})
	if err := putFenceGet(testCtx(t), pm.env(), blob(50, 2)); err != nil {
		t.Fatal(err)
	}
}

func TestForeignEnvErrors(t *testing.T) {
	ctx := testCtx(t)
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	if Detect(env()) || !Detect(env(EnvPMIFD, "3")) || !Detect(env(EnvPMIPort, "h:1")) {
		t.Error("Detect")
	}
	tests := []struct {
		getenv func(string) string
		err    string
	}{
		{env(), ErrNoPMI.Error()},
		{env(EnvPMIFD, "x"), `PMI_FD="x"`},
		{env(EnvPMIFD, "99", EnvPMISize, "2"), "PMI_RANK is not"},
		{env(EnvPMIFD, "99", EnvPMIRank, "0"), "PMI_SIZE is not"},
		{env(EnvPMIFD, "99", EnvPMIRank, "2", EnvPMISize, "2"), "PMI_RANK=2 is not below PMI_SIZE=2"},
		{env(EnvPMIFD, "99", EnvPMIRank, "-1", EnvPMISize, "2"), `PMI_RANK="-1"`},
		{env(EnvPMIFD, "99", EnvPMIRank, "0", EnvPMISize, "0"), `PMI_SIZE="0"`},
		{env(EnvPMIFD, "99", EnvPMIRank, "0", EnvPMISize, "1", EnvPMIWire, "3"), `GORMA_PMI="3"`},
		{env(EnvPMIFD, "1023", EnvPMIRank, "0", EnvPMISize, "1"), "PMI_FD=1023 is not a usable socket"},
		{env(EnvPMIPort, "nocolon", EnvPMIID, "0"), `PMI_PORT="nocolon"`},
		{env(EnvPMIPort, "127.0.0.1:1"), `PMI_ID=""`},
	}
	for _, tt := range tests {
		_, err := Connect(ctx, tt.getenv)
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("Connect = %v, want an error with %q", err, tt.err)
		}
	}
	if _, err := Connect(ctx, env()); !errors.Is(err, ErrNoPMI) {
		t.Errorf("no PMI: %v, want ErrNoPMI", err)
	}
}

func TestForeignShortSize(t *testing.T) {
	ctx := testCtx(t)
	pm := newFakePM(t, func(p *fakePM, cmd string, req Field2, def string) string {
		if cmd == "get" && req("key") == ProcessMappingKey {
			return "cmd=get_result rc=0 msg=success value=(vector,(0,1,4))"
		}
		return def
	})
	_, err := Connect(ctx, pm.env(EnvPMISize, "2"))
	if err == nil || !strings.Contains(err.Error(), "PMI_SIZE") || !strings.Contains(err.Error(), "more ranks than the job's 2") {
		t.Fatalf("got %v, want an error naming PMI_SIZE", err)
	}
	// PMI-2: fullinit says 4, the environment 2.
	pm2 := newFakePM(t, func(p *fakePM, cmd string, req Field2, def string) string {
		if cmd == "fullinit" {
			return strings.Replace(def, "size=1", "size=4", 1)
		}
		return def
	})
	_, err = Connect(ctx, pm2.env(EnvPMIWire, "2", EnvPMISize, "2"))
	if err == nil || !strings.Contains(err.Error(), "server says size 4 but PMI_SIZE=2") || !strings.Contains(err.Error(), "PMI-2 fullinit") {
		t.Fatalf("got %v, want a fullinit error naming PMI_SIZE", err)
	}
}

func TestForeignNodes(t *testing.T) {
	ctx := testCtx(t)
	pm := newFakePM(t, func(p *fakePM, cmd string, req Field2, def string) string {
		if cmd == "get" && req("key") == ProcessMappingKey {
			return "cmd=get_result rc=0 value=(vector,(0,2,2))"
		}
		return def
	})
	f, err := Connect(ctx, pm.env(EnvPMIRank, "1", EnvPMISize, "4"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n, err := f.Nodes(ctx); err != nil || !reflect.DeepEqual(n, []int{0, 0, 1, 1}) {
		t.Errorf("Nodes = %v, %v", n, err)
	}
	if f.Version() != "1.1" || f.KVSName() != "kvs_42_0" || f.AppNum() != 0 || f.Rank() != 1 || f.Size() != 4 {
		t.Errorf("version %q kvsname %q appnum %d rank %d size %d", f.Version(), f.KVSName(), f.AppNum(), f.Rank(), f.Size())
	}
	// No mapping: nil, nil.
	pm2 := newFakePM(t, nil)
	f2, err := Connect(ctx, pm2.env())
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	if n, err := f2.Nodes(ctx); n != nil || err != nil {
		t.Errorf("Nodes without a mapping = %v, %v", n, err)
	}
}

// TestForeignBadServer: garbage, a hang-up in the middle of a fence, a server that never
// answers. Each gives an error naming PMI and the command, never a hang.
func TestForeignBadServer(t *testing.T) {
	ctx := testCtx(t)
	t.Run("garbage", func(t *testing.T) {
		pm := newFakePM(t, func(p *fakePM, cmd string, _ Field2, def string) string {
			if cmd == "get_maxes" {
				return "\x00\x01garbage"
			}
			return def
		})
		_, err := Connect(ctx, pm.env())
		if err == nil || !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "PMI-1 get_maxes") || !strings.Contains(err.Error(), "not printable") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("not PMI", func(t *testing.T) {
		pm := newFakePM(t, func(*fakePM, string, Field2, string) string { return "HTTP/1.1 400 Bad Request" })
		_, err := Connect(ctx, pm.env())
		if err == nil || !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "PMI-1 init") || !strings.Contains(err.Error(), "HTTP/1.1") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("line too long", func(t *testing.T) {
		pm := newFakePM(t, func(p *fakePM, cmd string, _ Field2, def string) string {
			if cmd == "get_my_kvsname" {
				return "cmd=my_kvsname kvsname=" + strings.Repeat("k", MaxSimpleLine+1)
			}
			return def
		})
		_, err := Connect(ctx, pm.env())
		if err == nil || !errors.Is(err, ErrLineTooLong) || !strings.Contains(err.Error(), "get_my_kvsname") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("close mid-fence", func(t *testing.T) {
		pm := newFakePM(t, func(p *fakePM, cmd string, _ Field2, def string) string {
			if cmd == "barrier_in" {
				p.conn.Close()
				return ""
			}
			return def
		})
		f, err := Connect(ctx, pm.env())
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		err = f.Fence(ctx)
		if err == nil || !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "PMI-1 barrier_in") || !strings.Contains(err.Error(), "hung up") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("context", func(t *testing.T) {
		pm := newFakePM(t, func(p *fakePM, cmd string, _ Field2, def string) string {
			if cmd == "barrier_in" {
				return "" // never answers
			}
			return def
		})
		f, err := Connect(ctx, pm.env())
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fctx, cancel := context.WithCancel(ctx)
		go func() {
			waitRequest(ctx, t, pm, "barrier_in")
			cancel()
		}()
		err = f.Fence(fctx)
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "PMI-1 barrier_in") {
			t.Fatalf("got %v, want context.Canceled naming barrier_in", err)
		}
		// The session is out of step now: later requests fail at once.
		if _, err := f.Get(ctx, 0, "card"); !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "unusable") {
			t.Fatalf("after an abandoned request: %v", err)
		}
	})
	t.Run("context during init", func(t *testing.T) {
		pm := newFakePM(t, func(*fakePM, string, Field2, string) string { return "" }) // never answers
		cctx, cancel := context.WithCancel(ctx)
		go func() {
			waitRequest(ctx, t, pm, "cmd=init")
			cancel()
		}()
		_, err := Connect(cctx, pm.env())
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "PMI-1 init") {
			t.Fatalf("got %v, want context.Canceled naming init", err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		pm := newFakePM(t, func(*fakePM, string, Field2, string) string { return "" }) // never answers
		dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		_, err := Connect(dctx, pm.env())
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "PMI-1 init") {
			t.Fatalf("got %v, want context.DeadlineExceeded naming init", err)
		}
	})
	t.Run("closed on this side", func(t *testing.T) {
		pm := newFakePM(t, func(p *fakePM, cmd string, _ Field2, def string) string {
			if cmd == "barrier_in" {
				return ""
			}
			return def
		})
		f, err := Connect(ctx, pm.env())
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			waitRequest(ctx, t, pm, "barrier_in")
			f.Close()
		}()
		if err := f.Fence(ctx); !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "by Close on this side") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("answer cut short", func(t *testing.T) {
		pm := newFakePM(t, func(p *fakePM, cmd string, _ Field2, def string) string {
			if cmd == "get_appnum" {
				p.conn.Write([]byte("cmd=appn"))
				p.conn.Close()
				return ""
			}
			return def
		})
		_, err := Connect(ctx, pm.env())
		if err == nil || !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "get_appnum") {
			t.Fatalf("got %v", err)
		}
	})
}

func TestForeignAbort(t *testing.T) {
	ctx := testCtx(t)
	for _, wire := range []string{"1", "2"} {
		pm := newFakePM(t, nil)
		f, err := Connect(ctx, pm.env(EnvPMIWire, wire))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Abort(3, "bad; input\n"); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"1": "cmd=abort exitcode=3", "2": "cmd=abort;isworld=TRUE;exitcode=3;msg=bad_ input_;"}[wire]
		if got := waitRequest(ctx, t, pm, "abort"); got != want {
			t.Errorf("abort request %q, want %q", got, want)
		}
		f.Close()
	}
}

// TestPMIPort runs the PMI_PORT handshake against a fake server on a TCP port.
func TestPMIPort(t *testing.T) {
	ctx := testCtx(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tc := range []struct{ name, sets, size, err string }{
		{"ok", "cmd=set size=3\ncmd=set rank=2\ncmd=set debug=0\n", "3", ""},
		{"any order", "cmd=set rank=2\ncmd=set debug=0\ncmd=set size=3\n", "", ""},
		{"size mismatch", "cmd=set size=4\ncmd=set rank=2\ncmd=set debug=0\n", "3", "server says size 4 but PMI_SIZE=3"},
		{"garbage", "cmd=set colour=blue\n", "", "want cmd=set with size="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				r := NewSimpleReader(c)
				if l, err := r.ReadLine(); err != nil || l.Raw != "cmd=initack pmiid=7" {
					return
				}
				c.Write([]byte("cmd=initack\n" + tc.sets))
				if l, err := r.ReadLine(); err != nil || l.Cmd != "init" {
					return
				}
				c.Write([]byte("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n"))
				answers := map[string]string{"get_maxes": "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024",
					"get_my_kvsname": "cmd=my_kvsname kvsname=k", "get_appnum": "cmd=appnum appnum=0", "get": "cmd=get_result rc=1"}
				for {
					l, err := r.ReadLine()
					if err != nil {
						return
					}
					c.Write([]byte(answers[l.Cmd] + "\n"))
				}
			}()
			m := map[string]string{EnvPMIPort: ln.Addr().String(), EnvPMIID: "7", EnvPMISize: tc.size}
			f, err := Connect(ctx, func(k string) string { return m[k] })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "initack") {
					t.Fatalf("got %v, want an initack error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.Rank() != 2 || f.Size() != 3 {
				t.Errorf("rank %d size %d, want 2 of 3", f.Rank(), f.Size())
			}
		})
	}
}

// waitRequest returns the first request the server sees whose text contains sub.
func waitRequest(ctx context.Context, t *testing.T, pm *fakePM, sub string) string {
	t.Helper()
	for {
		select {
		case r := <-pm.reqs:
			if strings.Contains(r, sub) {
				return r
			}
		case <-ctx.Done():
			t.Fatalf("no request with %q: %v", sub, ctx.Err())
			return ""
		}
	}
}

// TestForeignConcurrent: requests from several goroutines are serialized on the one
// lock-step connection.
func TestForeignConcurrent(t *testing.T) {
	ctx := testCtx(t)
	pm := newFakePM(t, func(p *fakePM, cmd string, _ Field2, def string) string {
		if cmd == "get_maxes" {
			return "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=200"
		}
		return def
	})
	f, err := Connect(ctx, pm.env())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := 0; i < 8; i++ {
		if err := f.Put(ctx, fmt.Sprintf("k%d", i), blob(1000+i, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Fence(ctx); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		go func() {
			v, err := f.Get(ctx, 0, fmt.Sprintf("k%d", i))
			if err == nil && !bytes.Equal(v, blob(1000+i, i)) {
				err = fmt.Errorf("k%d: wrong value", i)
			}
			errs <- err
		}()
	}
	for i := 0; i < 8; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestForeignOwedAnswer: a Get that its context abandons while the server's answer is on
// its way, half of it read, leaves the answer owed, over both wires: the next request
// reads the rest of that answer first, and then gets its own. An abandoned Fence still
// ends the connection ("context" above).
func TestForeignOwedAnswer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
	defer cancel()
	for _, wire := range []string{"1", "2"} {
		t.Run("PMI-"+wire, func(t *testing.T) {
			var armed atomic.Bool
			halfway, release := make(chan struct{}), make(chan struct{})
			pm := newFakePM(t, func(p *fakePM, cmd string, _ Field2, def string) string {
				if cmd != "get" && cmd != "kvs-get" || !armed.CompareAndSwap(true, false) {
					return def
				}
				// The first get's answer comes in two pieces, with the client's context
				// ending between them.
				whole := def + "\n"
				if wire == "2" {
					whole = fmt.Sprintf("%-6d%s", len(def), def)
				}
				io.WriteString(p.conn, whole[:9])
				close(halfway)
				<-release
				io.WriteString(p.conn, whole[9:])
				return ""
			})
			f, err := Connect(ctx, pm.env(EnvPMIWire, wire))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Put(ctx, "card", []byte("first")); err != nil {
				t.Fatal(err)
			}
			gctx, gcancel := context.WithCancel(ctx)
			go func() {
				<-halfway
				time.Sleep(20 * time.Millisecond) // the client reads the first piece
				gcancel()
			}()
			armed.Store(true)
			if _, err := f.Get(gctx, 0, "card"); !errors.Is(err, context.Canceled) {
				t.Fatalf("abandoned Get: %v, want context.Canceled", err)
			}
			close(release)
			if err := f.Put(ctx, "other", []byte("second")); err != nil {
				t.Fatalf("Put after an abandoned Get: %v", err)
			}
			for key, want := range map[string]string{"card": "first", "other": "second"} {
				if v, err := f.Get(ctx, 0, key); err != nil || string(v) != want {
					t.Fatalf("Get %q after an abandoned Get = %q, %v; want %q", key, v, err, want)
				}
			}
		})
	}
}
