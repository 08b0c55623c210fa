package pmi

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// fakePM is a one-rank PMI server over a real socketpair: PMI-1 lines, and PMI-2 frames
// once a client's init asks for version 2. It keeps a real KVS. Tests change its answers
// through answer (a PMI-1 line or PMI-2 frame body, without newline or length; "" for
// none) and watch the requests through seen.
type fakePM struct {
	t      *testing.T
	conn   net.Conn
	fd     int // the client's end, for PMI_FD
	answer func(p *fakePM, cmd string, req Field2, def string) string

	mu     sync.Mutex
	kvs    map[string]string
	seen   []string // each request's raw text, in order
	reqs   chan string
	done   chan struct{}
	errOut error
}

// Field2 gives a request's fields to an answer hook, whichever the wire.
type Field2 func(key string) string

// newFakePM starts a fake server on a socketpair and returns it; the client end's
// descriptor is fake.fd (Connect takes it over and closes it).
func newFakePM(t *testing.T, answer func(p *fakePM, cmd string, req Field2, def string) string) *fakePM {
	t.Helper()
	conn, fd := serverPair(t)
	p := &fakePM{t: t, conn: conn, fd: fd, answer: answer, kvs: map[string]string{},
		reqs: make(chan string, 1000), done: make(chan struct{})}
	go p.serve()
	t.Cleanup(func() {
		conn.Close()
		<-p.done
	})
	return p
}

// env returns a getenv for a client of this server, with extra variables.
func (p *fakePM) env(kv ...string) func(string) string {
	m := map[string]string{EnvPMIFD: strconv.Itoa(p.fd), EnvPMIRank: "0", EnvPMISize: "1"}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func (p *fakePM) serve() {
	defer close(p.done)
	// Like Slurm, read the init line with one fixed-size read: it must arrive whole.
	buf := make([]byte, 64)
	n, err := p.conn.Read(buf)
	if err != nil {
		return
	}
	first, err := ParseSimpleLine(string(buf[:n]))
	if err != nil || !strings.HasSuffix(string(buf[:n]), "\n") || n > 63 {
		p.fail(fmt.Errorf("init not one whole line of at most 63 bytes: %q (%v)", buf[:n], err))
		return
	}
	version := p.reply1(first)
	br := NewSimpleReader(p.conn)
	for {
		if version == "2" {
			f, err := br.ReadFrame()
			if err != nil {
				return
			}
			p.reply2(f)
			continue
		}
		l, err := br.ReadLine()
		if err != nil {
			return
		}
		if v := p.reply1(l); v == "2" {
			version = "2"
		}
	}
}

func (p *fakePM) fail(err error) {
	p.mu.Lock()
	p.errOut = err
	p.mu.Unlock()
}

// record notes a request.
func (p *fakePM) record(raw string) {
	p.mu.Lock()
	p.seen = append(p.seen, raw)
	p.mu.Unlock()
	select {
	case p.reqs <- raw:
	default:
	}
}

// reply1 answers one PMI-1 line; it returns the version an init chose ("" otherwise).
func (p *fakePM) reply1(l SimpleLine) string {
	p.record(l.Raw)
	def, version := "", ""
	switch l.Cmd {
	case "init":
		version = l.Value("pmi_version")
		def = "cmd=response_to_init pmi_version=" + version + " pmi_subversion=" + l.Value("pmi_subversion") + " rc=0"
	case "get_maxes":
		def = "cmd=maxes rc=0 kvsname_max=256 keylen_max=64 vallen_max=1024"
	case "get_my_kvsname":
		def = "cmd=my_kvsname rc=0 kvsname=kvs_42_0"
	case "get_appnum":
		def = "cmd=appnum rc=0 appnum=0"
	case "put":
		p.mu.Lock()
		p.kvs[l.Value("key")] = l.Value("value")
		p.mu.Unlock()
		def = "cmd=put_result rc=0 msg=success"
	case "get":
		p.mu.Lock()
		v, ok := p.kvs[l.Value("key")]
		p.mu.Unlock()
		def = "cmd=get_result rc=0 msg=success value=" + v
		if !ok {
			def = "cmd=get_result rc=-1 msg=key_" + l.Value("key") + "_not_found"
		}
	case "barrier_in":
		def = "cmd=barrier_out"
	case "finalize":
		def = "cmd=finalize_ack"
	case "abort":
		return ""
	default:
		def = "cmd=" + l.Cmd + "_unknown rc=-1"
	}
	ans := def
	if p.answer != nil {
		ans = p.answer(p, l.Cmd, func(k string) string { return l.Value(k) }, def)
	}
	if ans != "" {
		io.WriteString(p.conn, ans+"\n")
	}
	if l.Cmd == "init" {
		if al, err := ParseSimpleLine(ans); err == nil && al.Value("pmi_version") == "2" {
			return "2"
		}
		return "1"
	}
	return version
}

// reply2 answers one PMI-2 frame.
func (p *fakePM) reply2(f Frame) {
	p.record(f.Raw)
	def := ""
	switch f.Cmd {
	case "fullinit":
		def = "cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;rank=" + f.Value("pmirank") + ";size=1;appnum=0;debugged=FALSE;pmiverbose=FALSE;"
	case "job-getid":
		def = "cmd=job-getid-response;rc=0;jobid=42.0;"
	case "info-getjobattr":
		def = "cmd=info-getjobattr-response;rc=0;found=FALSE;"
	case "kvs-put":
		p.mu.Lock()
		p.kvs[f.Value("key")] = f.Value("value")
		p.mu.Unlock()
		def = "cmd=kvs-put-response;rc=0;"
	case "kvs-get":
		p.mu.Lock()
		v, ok := p.kvs[f.Value("key")]
		p.mu.Unlock()
		def = "cmd=kvs-get-response;rc=0;found=TRUE;value=" + v + ";"
		if !ok {
			def = "cmd=kvs-get-response;rc=0;found=FALSE;"
		}
	case "kvs-fence":
		def = "cmd=kvs-fence-response;rc=0;"
	case "finalize":
		def = "cmd=finalize-response;rc=0;"
	case "abort":
		return
	default:
		def = "cmd=" + f.Cmd + "-response;rc=-1;errmsg=unknown;"
	}
	ans := def
	if p.answer != nil {
		ans = p.answer(p, f.Cmd, func(k string) string { return f.Value(k) }, def)
	}
	if ans != "" {
		io.WriteString(p.conn, fmt.Sprintf("%-6d%s", len(ans), ans))
	}
}

// requests returns the raw requests seen so far.
func (p *fakePM) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.errOut != nil {
		p.t.Error(p.errOut)
	}
	return append([]string(nil), p.seen...)
}

// scriptedPM answers the n-th PMI-1 request of a client with the n-th line of script
// (raw bytes, newline added), then hangs up; it reports nothing itself.
func scriptedPM(t testing.TB, script []string) (fd int) {
	conn, fd := serverPair(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer conn.Close()
		r := NewSimpleReader(conn)
		for _, ans := range script {
			if _, err := r.ReadLine(); err != nil {
				return
			}
			if _, err := io.WriteString(conn, ans+"\n"); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		conn.Close()
		<-done
	})
	return fd
}

// serverPair makes a socketpair: the server's end as a net.Conn, and the descriptor of
// the client's end (a rank's PMI_FD), which the test hands to the client.
func serverPair(t testing.TB) (net.Conn, int) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	file := os.NewFile(uintptr(fds[1]), "pmi-server")
	conn, err := net.FileConn(file)
	file.Close()
	if err != nil {
		t.Fatal(err)
	}
	return conn, fds[0]
}
