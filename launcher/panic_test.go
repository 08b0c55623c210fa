package launcher

import (
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// panicWatch finds the first line of a Go crash in stderr however it is split into
// chunks, and nothing in output that merely looks like one. The texts are what Go
// prints under each GOTRACEBACK level, cut after the trace's first lines.
func TestPanicWatch(t *testing.T) {
	long := strings.Repeat("x", 2*maxPanicLine)
	const nilDeref = "panic: runtime error: invalid memory address or nil pointer dereference"
	tests := []struct {
		name, stderr, want string
	}{
		{"panic", "hello\npanic: boom\n\ngoroutine 1 [running]:\nmain.main()\n", "panic: boom"},
		{"nil deref", nilDeref + "\n" +
			"[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4a]\n\ngoroutine 7 [running]:\n", nilDeref},
		{"fatal error", "fatal error: all goroutines are asleep - deadlock!\n\ngoroutine 1 [chan receive]:\n",
			"fatal error: all goroutines are asleep - deadlock!"},
		{"recovered and re-panicked", "panic: first [recovered]\n\tpanic: second\n\ngoroutine 1 [running]:\n",
			"panic: first [recovered]"},
		{"multi-line value", "panic: line one\nline two\nline three\n\ngoroutine 1 [running]:\n", "panic: line one"},
		{"crlf", "panic: boom\r\n\r\ngoroutine 1 [running]:\r\n", "panic: boom"},
		{"long first line", "panic: " + long + "\n\ngoroutine 1 [running]:\n", ("panic: " + long)[:maxPanicLine] + "..."},

		// GOTRACEBACK=system and crash, and any runtime error: the header names gp and m.
		{"system", "panic: boom\n\ngoroutine 1 gp=0x3923116341e0 m=0 mp=0x5572a0 [running]:\n" +
			"panic({0x492ec0?, 0x4b3f58?})\n\t/usr/local/go/src/runtime/panic.go:879 +0x16f fp=0x3923116b0f18 sp=0x3923116b0e68 pc=0x4773ef\n",
			"panic: boom"},
		{"system, no m", "panic: boom\n\ngoroutine 5 gp=0xc000007c00 m=nil [chan receive]:\n", "panic: boom"},
		{"system, nil write", nilDeref + "\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4897ad]\n\n" +
			"goroutine 1 gp=0x2dbe865c81e0 m=0 mp=0x5572a0 [running]:\n", nilDeref},
		{"fault", "unexpected fault address 0xdead0000\nfatal error: fault\n" +
			"[signal SIGSEGV: segmentation violation code=0x1 addr=0xdead0000 pc=0x489759]\n\n" +
			"goroutine 1 gp=0x3484508041e0 m=0 mp=0x5572a0 [running]:\nruntime.throw({0x4a9f6b?, 0x34845086a000?})\n",
			"fatal error: fault"},
		{"runtime stack", "fatal error: all goroutines are asleep - deadlock!\n\nruntime stack:\nruntime.fatal({0x4b0823, 0x25})\n",
			"fatal error: all goroutines are asleep - deadlock!"},
		{"unexpected signal", "fatal error: unexpected signal during runtime execution\n" +
			"[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x45e1a2]\n\nruntime stack:\nruntime.throw({0x4b5c2e?, 0x0?})\n",
			"fatal error: unexpected signal during runtime execution"},
		{"signal from outside", "SIGSEGV: segmentation violation\nPC=0x40816e m=0 sigcode=0 addr=0x2be2\n\n" +
			"goroutine 1 gp=0x53a14fb81e0 m=0 mp=0x5572c0 [running, locked to thread]:\n", "SIGSEGV: segmentation violation"},
		{"SIGQUIT", "SIGQUIT: quit\nPC=0x40816e m=0 sigcode=0\n\ngoroutine 0 gp=0x5570a0 m=0 mp=0x5572c0 [idle]:\n", "SIGQUIT: quit"},

		// GOTRACEBACK=none: no trace; the header and its tail end the stream.
		{"none", "panic: boom\n", "panic: boom"},
		{"none, nil write", nilDeref + "\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4897ad]\n", nilDeref},
		{"none, multi-line value", "panic: line one\n\tline two\n", "panic: line one"},
		{"none, nested", "panic: first [recovered]\n\tpanic: second\n", "panic: first [recovered]"},
		{"none, re-panicked", "panic: x [recovered, repanicked]\n", "panic: x [recovered, repanicked]"},
		{"none, fatal error", "fatal error: concurrent map writes\n", "fatal error: concurrent map writes"},
		{"none, after a false start", "panic: no\nall is well\npanic: yes\n", "panic: yes"},

		{"no trace", "panic: not really\nall is well\n", ""},
		{"unfinished last line", "panic: not really\nstill typ", ""},
		{"signal header without trace", "SIGTERM: caught, exiting\n", ""},
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

// Every way a Go rank crashes, under every GOTRACEBACK level, ends a real job with
// ExitPanic and one summary line that names the rank and the crash's first line: a
// panic, a nil-pointer write (a panic after SIGSEGV), the runtime's "fatal error: fault"
// (a write to a read-only page), and a program's fatal error (a mutex unlocked twice).
// Under none Go prints no trace; under system and crash the trace's header names gp and
// m; under crash the runtime raises SIGABRT instead of exiting 2.
func TestRankCrashes(t *testing.T) {
	prog := rtprog(t)
	noCoreDumps(t)
	firstLine := map[string]string{
		"panic":    "panic: rtprog: crash on purpose",
		"nilwrite": "panic: runtime error: invalid memory address or nil pointer dereference",
		"fault":    "fatal error: fault",
		"unlock":   "fatal error: sync: unlock of unlocked mutex",
	}
	for _, how := range []string{"panic", "nilwrite", "fault", "unlock"} {
		for _, level := range []string{"none", "single", "all", "system", "crash"} {
			t.Run(how+"/"+level, func(t *testing.T) {
				r := runGL(t, "", "-n", "2", "-x", "GOTRACEBACK="+level, prog, "crash", "1", how)
				tail := ""
				if level == "crash" {
					tail = ` \(killed by signal 6 \(SIGABRT\)\)`
				}
				want := regexp.MustCompile(`^golaunch: rank 1 \(host ` + regexp.QuoteMeta(hostName()) +
					`, pid \d+\) panicked: ` + regexp.QuoteMeta(firstLine[how]) + tail + `; job aborted$`)
				var sum []string
				for _, l := range summaryLines(r.stderr) {
					if strings.HasSuffix(l, "; job aborted") {
						sum = append(sum, l)
					}
				}
				if r.code != ExitPanic || len(sum) != 1 || !want.MatchString(sum[0]) {
					t.Errorf("exit %d, summary lines %q; want exit %d and one line %q\nstderr:\n%s",
						r.code, sum, ExitPanic, want, r.stderr)
				}
			})
		}
	}
}

// noCoreDumps keeps the processes this test starts from writing core files: a rank under
// GOTRACEBACK=crash dies of SIGABRT.
func noCoreDumps(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_CORE, &lim); err != nil || lim.Cur == 0 {
		return
	}
	old := lim
	lim.Cur = 0
	if err := syscall.Setrlimit(syscall.RLIMIT_CORE, &lim); err != nil {
		t.Logf("core dumps stay on: %v", err)
		return
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_CORE, &old) })
}
