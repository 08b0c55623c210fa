package launcher

import (
	"strings"
	"testing"
)

// panicWatch finds the first line of a Go panic or fatal error in stderr however it is
// split into chunks, and nothing in output that merely looks like one.
func TestPanicWatch(t *testing.T) {
	long := strings.Repeat("x", 2*maxPanicLine)
	tests := []struct {
		name, stderr, want string
	}{
		{"panic", "hello\npanic: boom\n\ngoroutine 1 [running]:\nmain.main()\n", "panic: boom"},
		{"nil deref", "panic: runtime error: invalid memory address or nil pointer dereference\n" +
			"[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4a]\n\ngoroutine 7 [running]:\n",
			"panic: runtime error: invalid memory address or nil pointer dereference"},
		{"fatal error", "fatal error: all goroutines are asleep - deadlock!\n\ngoroutine 1 [chan receive]:\n",
			"fatal error: all goroutines are asleep - deadlock!"},
		{"recovered and re-panicked", "panic: first [recovered]\n\tpanic: second\n\ngoroutine 1 [running]:\n",
			"panic: first [recovered]"},
		{"multi-line value", "panic: line one\nline two\nline three\n\ngoroutine 1 [running]:\n", "panic: line one"},
		{"crlf", "panic: boom\r\n\r\ngoroutine 1 [running]:\r\n", "panic: boom"},
		{"long first line", "panic: " + long + "\n\ngoroutine 1 [running]:\n", ("panic: " + long)[:maxPanicLine] + "..."},
		{"no trace", "panic: not really\nall is well\n", ""},
		{"trace too far", "panic: x\n" + strings.Repeat("line\n", panicWindow+1) + "goroutine 1 [running]:\n", ""},
		{"not at line start", "log: panic: boom\n\ngoroutine 1 [running]:\n", ""},
		{"trace without panic", "goroutine 1 [running]:\n", ""},
		{"second one wins after a false start", "panic: no\n" + strings.Repeat("l\n", panicWindow+1) +
			"panic: yes\n\ngoroutine 3 [running]:\n", "panic: yes"},
	}
	for _, tt := range tests {
		for _, size := range []int{1, 3, 64, len(tt.stderr)} {
			w := panicWatch{rank: 0}
			for b := []byte(tt.stderr); len(b) > 0; {
				n := min(size, len(b))
				w.write(b[:n])
				b = b[n:]
			}
			if got := w.first(); got != tt.want {
				t.Errorf("%s in chunks of %d: %q, want %q", tt.name, size, got, tt.want)
			}
		}
	}
}

// A rank that printed another rank's failure in the runtime's words is a consequence of
// it; its own failure, or a panic first, is not.
func TestPanicWatchPeerFailure(t *testing.T) {
	for _, tt := range []struct {
		name, stderr string
		want         bool
	}{
		{"gone", "rtprog: rank 0: send: rank 1 on host vm is gone: its process exited (in send)\n", true},
		{"failed", "app: rank 1 on host h1 failed: exited with code 3 (in recv)\n", true},
		{"own rank", "rank 0 on host vm failed: something\n", false},
		{"aborted", "rank 2 on host vm aborted the job: called Abort(1)\n", false},
		{"unrelated", "frank 1 on host vm failed: no\nwork failed: rank 1\n", false},
		{"panic first", "panic: boom\n\ngoroutine 1 [running]:\nrank 1 on host vm failed: x\n", false},
	} {
		w := panicWatch{rank: 0}
		w.write([]byte(tt.stderr))
		if got := w.sawPeerFailure(); got != tt.want {
			t.Errorf("%s: sawPeerFailure %v, want %v", tt.name, got, tt.want)
		}
	}
}
