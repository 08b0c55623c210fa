package verbstest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// Helper processes. A multi-process case re-executes the test binary (os.Args[0] with
// -test.run=^$) with roleEnv naming a role; the provider's TestMain calls Main, which sees
// the variable and runs the role instead of the tests. Parent and child talk in lines: the
// parent writes to the child's stdin, the child answers on stdout with lines starting with
// linePrefix (other output is kept for the log), and byte strings such as endpoints travel
// as hex. A child exits when its role returns, when its stdin closes (the parent is gone),
// or after childLife, whichever comes first, so no helper outlives its test. (Pdeathsig is
// not used: Linux sends it when the forking thread exits, which in Go can happen at any time.)

const (
	roleEnv    = "GORMA_VERBSTEST_ROLE" // role of a helper process
	linePrefix = "@verbstest "
)

// childLife is how long a helper lives at most: 2 minutes scaled by the test slack.
var childLife = testbudget.Scale(2 * time.Minute)

// role is the body of a helper process.
type role func(c *child) error

// roles maps role names to their bodies; roles.go fills it.
var roles = map[string]role{}

// child is a helper process's side of the conversation with its parent.
type child struct {
	f   Factory
	ctx context.Context // done when the parent closes stdin or childLife passes
	in  <-chan string   // lines from the parent
	mu  sync.Mutex      // serializes writes to out
	out *bufio.Writer
}

// runRole runs the role called name in this (helper) process and returns the exit code.
func runRole(name string, f Factory) int {
	fn, ok := roles[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "verbstest: unknown helper role %q\n", name)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), childLife)
	defer cancel()
	in := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			in <- sc.Text()
		}
		cancel() // the parent closed our stdin or died
	}()
	go func() { // a role stuck outside its context still ends
		<-ctx.Done()
		time.Sleep(5 * time.Second)
		fmt.Fprintf(os.Stderr, "verbstest: helper %q still running 5s after its context ended; exiting\n", name)
		os.Exit(3)
	}()
	c := &child{f: f, ctx: ctx, in: in, out: bufio.NewWriter(os.Stdout)}
	if err := fn(c); err != nil {
		c.say("ERR", strings.ReplaceAll(err.Error(), "\n", " | "))
		fmt.Fprintf(os.Stderr, "verbstest: helper %q: %v\n", name, err)
		return 1
	}
	return 0
}

// say writes one line to the parent: the words separated by spaces.
func (c *child) say(words ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out.WriteString(linePrefix + fmt.Sprintln(words...))
	c.out.Flush()
}

// expect returns the fields after word of the next line from the parent, which must begin
// with word.
func (c *child) expect(word string) ([]string, error) {
	select {
	case line := <-c.in:
		fields := strings.Fields(line)
		if len(fields) == 0 || fields[0] != word {
			return nil, fmt.Errorf("expected %q from the parent, got %q", word, line)
		}
		return fields[1:], nil
	case <-c.ctx.Done():
		return nil, fmt.Errorf("waiting for %q: %w", word, context.Cause(c.ctx))
	}
}

// next returns the next line from the parent, split into fields.
func (c *child) next() ([]string, error) {
	select {
	case line := <-c.in:
		return strings.Fields(line), nil
	case <-c.ctx.Done():
		return nil, context.Cause(c.ctx)
	}
}

// proc is the parent's handle on a helper process.
type proc struct {
	t      testing.TB
	role   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // protocol lines from the child; closed at EOF
	output lockedBuffer
	done   chan struct{} // closed when the process has been reaped
	err    error         // Wait's result, valid after done
}

// startProc starts a helper process running role. t's cleanup ends it: it closes stdin,
// gives it a few seconds, then kills it, and logs its output if t failed.
func startProc(t testing.TB, f Factory, role string) *proc {
	t.Helper()
	if !mainCalled.Load() {
		t.Fatalf("multi-process cases need verbstest.Main: call it from the provider test's TestMain")
	}
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), roleEnv+"="+role)
	p := &proc{t: t, role: role, cmd: cmd, lines: make(chan string, 64), done: make(chan struct{})}
	cmd.Stderr = &p.output
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start helper %q: %v", role, err)
	}
	go p.read(stdout)
	t.Cleanup(p.stop)
	return p
}

func (p *proc) read(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, linePrefix); ok {
			p.lines <- rest
		} else {
			p.output.WriteString("stdout: " + line + "\n")
		}
	}
	close(p.lines)
	p.err = p.cmd.Wait()
	close(p.done)
}

// pid is the helper's process id.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// say writes one line to the helper.
func (p *proc) say(words ...any) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, fmt.Sprintln(words...)); err != nil {
		p.t.Fatalf("helper %q (pid %d): write: %v%s", p.role, p.pid(), err, p.describe())
	}
}

// recv returns the fields after word of the helper's next line, which must begin with word.
// An "ERR" line, the helper's exit or waitTimeout end it with an error.
func (p *proc) recv(word string, d time.Duration) ([]string, error) {
	select {
	case line, ok := <-p.lines:
		if !ok {
			<-p.done
			return nil, fmt.Errorf("helper %q exited (%v) while the parent waited for %q", p.role, p.err, word)
		}
		fields := strings.Fields(line)
		if len(fields) > 0 && fields[0] == "ERR" {
			return nil, fmt.Errorf("helper %q failed: %s", p.role, strings.TrimPrefix(line, "ERR "))
		}
		if len(fields) == 0 || fields[0] != word {
			return nil, fmt.Errorf("helper %q said %q, want %q", p.role, line, word)
		}
		return fields[1:], nil
	case <-time.After(d):
		return nil, fmt.Errorf("helper %q did not say %q within %v", p.role, word, d)
	}
}

// expect is recv that fails the test on error.
func (p *proc) expect(word string) []string {
	p.t.Helper()
	fields, err := p.recv(word, waitTimeout)
	if err != nil {
		p.t.Fatalf("%v%s", err, p.describe())
	}
	return fields
}

// kill sends SIGKILL and waits until the helper has been reaped.
func (p *proc) kill() {
	p.t.Helper()
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
	case <-time.After(waitTimeout):
		p.t.Fatalf("helper %q (pid %d) not reaped %v after SIGKILL", p.role, p.pid(), waitTimeout)
	}
}

// finish tells the helper to quit and checks that it exits cleanly.
func (p *proc) finish() {
	p.t.Helper()
	p.say("QUIT")
	select {
	case <-p.done:
		if p.err != nil {
			p.t.Errorf("helper %q: %v%s", p.role, p.err, p.describe())
		}
	case <-time.After(waitTimeout):
		p.t.Errorf("helper %q did not exit within %v of QUIT%s", p.role, waitTimeout, p.describe())
	}
}

func (p *proc) stop() {
	_ = p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	if p.t.Failed() {
		p.t.Logf("helper %q (pid %d) exit: %v%s", p.role, p.pid(), p.err, p.describe())
	}
}

func (p *proc) describe() string {
	if s := p.output.String(); s != "" {
		return "\n--- helper output ---\n" + s
	}
	return ""
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) WriteString(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Hex helpers for byte strings on the line protocol.
func hexOf(b []byte) string { return hex.EncodeToString(b) }

func unhex(s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, errors.New("bad hex from the other process: " + err.Error())
	}
	return b, nil
}
