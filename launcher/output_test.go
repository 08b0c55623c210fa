package launcher

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
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
