package launcher

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestOutputTagged(t *testing.T) {
	var out, errb lockedBuffer
	s := newOutputSink(&out, &errb, true, true, "")
	s.write(1, 1, []byte("hel"))
	s.write(0, 1, []byte("a\nb\nc"))
	s.write(1, 1, []byte("lo\nwor"))
	s.write(1, 2, []byte("oops\n"))
	s.flushRank(1)
	s.flushRank(0)
	want := "[0] a\n[0] b\n[1] hello\n[1] wor\n[0] c\n"
	if out.String() != want {
		t.Errorf("stdout %q, want %q", out.String(), want)
	}
	if errb.String() != "[1] oops\n" {
		t.Errorf("stderr %q", errb.String())
	}
}

func TestOutputWholeLinesUnderConcurrency(t *testing.T) {
	var out lockedBuffer
	s := newOutputSink(&out, &out, true, true, "")
	var wg sync.WaitGroup
	line := strings.Repeat("x", 100) + "\n"
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data := []byte(strings.Repeat(line, 50))
			for len(data) > 0 { // odd chunk sizes split lines everywhere
				n := min(len(data), 37+r)
				s.write(r, 1, data[:n])
				data = data[n:]
			}
			s.flushRank(r)
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 200 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		if len(l) != 104 || l[0] != '[' || strings.Count(l, "x") != 100 {
			t.Fatalf("broken line %q", l)
		}
	}
}

func TestOutputLongLineAndRaw(t *testing.T) {
	var out lockedBuffer
	s := newOutputSink(&out, &out, false, true, "")
	s.write(0, 1, bytes.Repeat([]byte("y"), maxPartial+10))
	if got := out.String(); len(got) != maxPartial+11 || !strings.HasSuffix(got, "y\n") {
		t.Errorf("a long line was held: %d bytes out", len(got))
	}
	var raw lockedBuffer
	r := newOutputSink(&raw, &raw, false, false, "")
	r.write(0, 1, []byte("prompt> "))
	if raw.String() != "prompt> " {
		t.Errorf("raw mode held a partial line: %q", raw.String())
	}
}

func TestOutputDir(t *testing.T) {
	dir := t.TempDir()
	s := newOutputSink(nil, nil, true, true, dir)
	s.write(1, 1, []byte("one\n"))
	s.write(1, 2, []byte("err\n"))
	s.flushRank(1)
	s.flushRank(0)
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(rankFile(dir, 1)); string(b) != "one\nerr\n" {
		t.Errorf("rank 1 file: %q", b)
	}
	if b, err := os.ReadFile(rankFile(dir, 0)); err != nil || len(b) != 0 {
		t.Errorf("rank 0 file: %q %v", b, err)
	}
}

// gateWriter blocks every write until open is closed, then records it.
type gateWriter struct {
	open chan struct{}
	mu   sync.Mutex
	got  []string
}

func (g *gateWriter) Write(p []byte) (int, error) {
	<-g.open
	g.mu.Lock()
	g.got = append(g.got, string(p))
	g.mu.Unlock()
	return len(p), nil
}

// TestStallWriter: a write to a stuck stderr returns after the bound, messages written
// while it is stuck are dropped, and writing resumes in order once it drains.
func TestStallWriter(t *testing.T) {
	g := &gateWriter{open: make(chan struct{})}
	s := newStallWriter(g, 50*time.Millisecond)
	start := time.Now()
	fmt.Fprint(s, "first")
	if d := time.Since(start); d < 50*time.Millisecond || d > testbudget.Scale(5*time.Second) {
		t.Fatalf("a stuck write returned after %v, want the 50ms bound", d)
	}
	fmt.Fprint(s, "dropped") // at once: still stuck
	if d := time.Since(start); d > testbudget.Scale(5*time.Second) {
		t.Fatalf("a write behind a stuck one took %v", d)
	}
	close(g.open)
	// The stuck write completes once the gate opens; the writer notices it when its
	// goroutine has returned, which is after gateWriter recorded the bytes.
	s.mu.Lock()
	pending := s.pending
	s.mu.Unlock()
	if pending == nil {
		t.Fatal("no write was left pending behind the stuck stderr")
	}
	select {
	case <-pending:
	case <-time.After(testbudget.Scale(5 * time.Second)):
		t.Fatal("the stuck write never completed")
	}
	fmt.Fprint(s, "third")
	g.mu.Lock()
	defer g.mu.Unlock()
	if strings.Join(g.got, ",") != "first,third" {
		t.Fatalf("written %q, want first,third", g.got)
	}
}
