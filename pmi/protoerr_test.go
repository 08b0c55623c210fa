package pmi

import (
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// TestProtocolErrors: each bad form gets a failed answer and reaches the Handler as a
// ProtocolError naming the rank, the command and the reason, once per connection;
// refusals (a PMI_ key, spawn) are no protocol errors.
func TestProtocolErrors(t *testing.T) {
	const init1 = "cmd=init pmi_version=1 pmi_subversion=1"
	long := strings.Repeat("k", KeyLenMax+1)
	for _, tc := range []struct {
		name      string
		init      bool   // send init1 first
		line      string // without its newline
		cmd, want string // "" cmd: a line without one; want "": no protocol error
	}{
		{"unknown command", true, "cmd=frobnicate", "frobnicate", `unknown command "frobnicate"`},
		{"pmi_version 99", false, "cmd=init pmi_version=99", "init", `pmi_version="99"`},
		{"second init", true, init1, "init", "second init"},
		{"before init", false, "cmd=barrier_in", "barrier_in", "barrier_in before init"},
		{"field without key", true, "cmd=put =v", "put", "has no key"},
		{"no cmd", true, "key=k", "", "does not start with cmd=NAME"},
		{"garbage", true, "cmd=get\x00\xff", "", "not printable ASCII"},
		{"put long key", true, "cmd=put key=" + long + " value=v", "put", "key of 65 bytes exceeds keylen_max=64"},
		{"put long value", true, "cmd=put key=k value=" + strings.Repeat("v", ValLenMax+1), "put", "value of 1025 bytes exceeds vallen_max=1024"},
		{"put long kvsname", true, "cmd=put kvsname=" + strings.Repeat("n", KVSNameMax+1) + " key=k value=v", "put", "kvsname of 257 bytes"},
		{"get long key", true, "cmd=get key=" + long, "get", "key of 65 bytes exceeds keylen_max=64"},
		{"get without key", true, "cmd=get kvsname=kvs_job1", "get", "get without key="},
		{"abort exitcode", true, "cmd=abort exitcode=x", "abort", `exitcode="x" is not an integer`},
		{"PMI_ key", true, "cmd=put key=PMI_x value=v", "put", ""},
		{"publish", true, "cmd=publish_name service=s port=p", "publish_name", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newJob(1)
			s := NewServer(h)
			defer s.Close()
			p := handTo(t, s, 0)
			p.conn.SetDeadline(time.Now().Add(testbudget.Scale(10 * time.Second)))
			if tc.init {
				p.ask(init1)
			}
			got := p.ask(tc.line)
			if !strings.Contains(got, "rc=-1") {
				t.Fatalf("%q answered %q, want a failed answer", tc.line, got)
			}
			if tc.cmd == "init" && !tc.init {
				// A refused first init ends the connection: the server hangs up.
				if rest := p.next(); rest != "" {
					t.Fatalf("after a refused first init the server sent %q, want a hang-up", rest)
				}
			} else {
				p.ask(tc.line) // a second error on the connection is not reported again
			}
			errs := h.protocolErrors()
			if tc.want == "" {
				if len(errs) != 0 {
					t.Fatalf("a refusal reported as a protocol error: %v", errs[0])
				}
				return
			}
			if len(errs) != 1 {
				t.Fatalf("%d protocol errors reported, want 1: %v", len(errs), errs)
			}
			e := errs[0]
			if e.Rank != 0 || e.Cmd != tc.cmd || !errors.Is(e, ErrProtocol) || !strings.Contains(e.Error(), tc.want) ||
				!strings.Contains(e.Detail(), "PMI protocol error in ") {
				t.Fatalf("got %+v (%v), want rank 0, cmd %q, reason %q", e, e, tc.cmd, tc.want)
			}
		})
	}
}

// TestProtocolErrorLongLine: a line over MaxLine without its newline is answered, reported
// with its command and ends the connection: what follows cannot be read in step.
func TestProtocolErrorLongLine(t *testing.T) {
	h := newJob(1)
	s := NewServer(h)
	defer s.Close()
	p := handTo(t, s, 0)
	p.conn.SetDeadline(time.Now().Add(testbudget.Scale(10 * time.Second)))
	p.ask("cmd=init pmi_version=1 pmi_subversion=1")
	go p.conn.Write([]byte("cmd=put key=k value=" + strings.Repeat("v", 1<<20)))
	if got := p.next(); !strings.HasPrefix(got, "cmd=error rc=-1 msg=") || !strings.Contains(got, "line_too_long") {
		t.Fatalf("a 1 MiB line answered %q", got)
	}
	if got := p.next(); got != "" {
		t.Fatalf("connection open after an over-long line: %q", got)
	}
	errs := h.protocolErrors()
	if len(errs) != 1 || errs[0].Cmd != "put" || !errors.Is(errs[0], ErrLineTooLong) {
		t.Fatalf("protocol errors %v, want one over-long put", errs)
	}
}

// TestProtocolErrorSocket: on the socket before gorma-init the rank is unknown, and the
// error names the peer's process (SO_PEERCRED); after gorma-init it names the rank.
func TestProtocolErrorSocket(t *testing.T) {
	h := newJob(2)
	s := serve(t, h)
	conn, err := net.Dial("unix", s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(testbudget.Scale(10 * time.Second)))
	p := &pmi1{t: t, conn: conn, rd: newReader(conn)}
	p.ask("cmd=get_maxes")
	c2, err := net.Dial("unix", s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.SetDeadline(time.Now().Add(testbudget.Scale(10 * time.Second)))
	q := &pmi1{t: t, conn: c2, rd: newReader(c2)}
	q.ask("cmd=gorma-init version=3 rank=1 job=job1 id=1")
	q.ask("cmd=frobnicate id=2")
	errs := h.protocolErrors()
	if len(errs) != 2 {
		t.Fatalf("%d protocol errors, want 2: %v", len(errs), errs)
	}
	if e := errs[0]; e.Rank != -1 || e.Pid != os.Getpid() || e.Cmd != "get_maxes" || !strings.Contains(e.Error(), "pid ") {
		t.Errorf("before gorma-init: %+v (%v), want rank -1 and this process's pid", e, e)
	}
	if e := errs[1]; e.Rank != 1 || e.Cmd != "frobnicate" {
		t.Errorf("after gorma-init: %+v (%v), want rank 1, cmd frobnicate", e, e)
	}
}

// TestPutValueRestOfLine: a PMI-1 put's value runs to the end of the line, or to the
// put's next key= or kvsname= field, spaces and '=' kept (Open MPI pads base64 with
// spaces), and a get returns it as it was put.
func TestPutValueRestOfLine(t *testing.T) {
	h := newJob(1)
	s := NewServer(h)
	defer s.Close()
	p := handTo(t, s, 0)
	p.conn.SetDeadline(time.Now().Add(testbudget.Scale(10 * time.Second)))
	p.ask("cmd=init pmi_version=1 pmi_subversion=1")
	puts := []struct{ line, key, value string }{
		{"cmd=put kvsname=kvs_job1 key=pad value=QUJD RA  ", "pad", "QUJD RA  "},
		{"cmd=put kvsname=kvs_job1 key=eq value=a=b c=d", "eq", "a=b c=d"},
		{"cmd=put value=x y key=first kvsname=kvs_job1", "first", "x y"},
		{"cmd=put kvsname=kvs_job1 key=bs value=a\\ b\\", "bs", "a\\ b\\"},
	}
	for _, put := range puts {
		if got := p.ask(put.line); got != "cmd=put_result rc=0 msg=success" {
			t.Fatalf("%q answered %q", put.line, got)
		}
	}
	p.ask("cmd=barrier_in")
	for _, put := range puts {
		want := "cmd=get_result rc=0 msg=success value=" + put.value
		if got := p.ask("cmd=get kvsname=kvs_job1 key=" + put.key); got != want {
			t.Errorf("get %s: %q, want %q", put.key, got, want)
		}
	}
}

// FuzzServerRead feeds arbitrary bytes to the server's line reader and PMI-1 parser: no
// line over MaxLine comes out, and a put's value, whatever printable text, comes back
// exactly as it was sent.
func FuzzServerRead(f *testing.F) {
	for _, seed := range []string{"cmd=put key=k value=a b  \n", "cmd=get\nkey=\x00\n", "cmd=put value= key=k\r\n", "\n\n", "mcmd=spawn\n"} {
		f.Add([]byte(seed), "QUJD RA  ")
	}
	f.Fuzz(func(t *testing.T, stream []byte, value string) {
		sc := &sconn{mode: modePMI1}
		rd := newLineReader(strings.NewReader(string(stream)))
		for {
			raw, err := rd.next()
			if err != nil && !errors.Is(err, ErrLineTooLong) {
				break
			}
			if len(raw) > MaxLine || strings.Contains(raw, "\n") {
				t.Fatalf("line of %d bytes with a newline inside: %q", len(raw), Truncate(raw))
			}
			if err != nil {
				break
			}
			if m, err := sc.parse(raw); err == nil && m["cmd"] == "" {
				t.Fatalf("%q parsed without a command", raw)
			}
		}
		if checkPrintable(value, true) != nil || strings.Contains(value, " key=") || strings.Contains(value, "\tkey=") ||
			strings.Contains(value, " kvsname=") || strings.Contains(value, "\tkvsname=") {
			return
		}
		m, err := sc.parse("cmd=put kvsname=kvs key=k value=" + value)
		if err != nil || m["value"] != value || m["key"] != "k" {
			t.Fatalf("put of value %q: %v %q", value, err, m)
		}
	})
}
