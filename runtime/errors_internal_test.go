package runtime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/gorma-hpc/gorma/pmi"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// A peer failure's text leads with the rank, its host and what became of it; what the
// transport saw stays in the chain, and in the text only with GORMA_VERBOSE=1 (or when it
// cannot be put in a user's words).
func TestProcErrorText(t *testing.T) {
	flush := &verbs.StatusError{Op: verbs.WCRecv, WRID: 144115192370823168, QPN: 1, Status: verbs.WRFlushErr}
	attach := fmt.Errorf("%w: connect to rank 1 (shm, host vm): map the arena of process 4242: %w", ErrTransport,
		fmt.Errorf("arena: open segment of pid 4242 at /proc/4242/fd/8: %w", syscall.ENOENT))
	refused := fmt.Errorf("%w: connect to rank 1: %w", ErrTransport, syscall.ECONNREFUSED)
	other := errors.New("shm: the peer refused a memory access")
	tests := []struct {
		name    string
		pe      *ProcError
		want    string // the text without GORMA_VERBOSE
		verbose string // the text with it
	}{
		{"flushed", &ProcError{Op: "recv", Rank: 1, Host: "vm", Err: ErrProcFailed, Why: transportWhy(flush), Cause: flush},
			"rank 1 on host vm is gone: its process exited or closed its transport (in recv)",
			"rank 1 on host vm is gone: its process exited or closed its transport (in recv): " + flush.Error()},
		{"attach ENOENT", &ProcError{Op: "send", Rank: 1, Host: "vm", Err: ErrProcFailed, Why: transportWhy(attach), Cause: attach},
			"rank 1 on host vm is gone: its process exited (in send)",
			"rank 1 on host vm is gone: its process exited (in send): " + attach.Error()},
		{"refused", &ProcError{Rank: 1, Host: "vm", Err: ErrProcFailed, Why: transportWhy(refused), Cause: refused},
			"rank 1 on host vm is gone: its process exited",
			"rank 1 on host vm is gone: its process exited: " + refused.Error()},
		{"not in words", &ProcError{Op: "get", Rank: 2, Host: "h1", Err: ErrProcFailed, Why: transportWhy(other), Cause: other},
			"rank 2 on host h1 failed: " + other.Error() + " (in get)",
			"rank 2 on host h1 failed: " + other.Error() + " (in get)"},
		{"launcher", &ProcError{Op: "barrier", Rank: 1, Host: "vm", Err: ErrProcFailed,
			Why:   "failed: " + launcherWhy(1, "rank 1 (host vm, pid 77) exited with code 3"),
			Cause: errors.New("launcher reports: rank 1 (host vm, pid 77) exited with code 3")},
			"rank 1 on host vm failed: exited with code 3 (in barrier)",
			"rank 1 on host vm failed: exited with code 3 (in barrier): launcher reports: rank 1 (host vm, pid 77) exited with code 3"},
		{"abort", &ProcError{Rank: 2, Host: "h1", Err: ErrAborted, Why: "aborted the job: " + launcherWhy(2, "rank 2 (host h1, pid 9) called Abort(7): bad input"),
			Cause: abortCause(7, "rank 2 (host h1, pid 9) called Abort(7): bad input")},
			"rank 2 on host h1 aborted the job: called Abort(7): bad input",
			"rank 2 on host h1 aborted the job: called Abort(7): bad input: abort with code 7: rank 2 (host h1, pid 9) called Abort(7): bad input"},
		{"job", &ProcError{Op: "barrier", Rank: -1, Err: ErrAborted, Cause: errors.New("lost the connection to the launcher's agent")},
			"job aborted: lost the connection to the launcher's agent (in barrier)",
			"job aborted: lost the connection to the launcher's agent (in barrier)"},
	}
	saved := verbose
	defer func() { verbose = saved }()
	for _, tt := range tests {
		for _, v := range []bool{false, true} {
			verbose = func() bool { return v }
			want := tt.want
			if v {
				want = tt.verbose
			}
			if got := tt.pe.Error(); got != want {
				t.Errorf("%s, verbose %v:\n got %q\nwant %q", tt.name, v, got, want)
			}
		}
	}
	// The chain keeps the identities callers test.
	pe := tests[1].pe
	var se *ProcError
	if !errors.Is(pe, ErrProcFailed) || !errors.Is(pe, ErrTransport) || !errors.Is(pe, fs.ErrNotExist) || !errors.As(error(pe), &se) {
		t.Errorf("attach failure %v lost an identity of its chain", pe)
	}
	var st *verbs.StatusError
	if fe := tests[0].pe; !errors.As(error(fe), &st) || st.Status != verbs.WRFlushErr {
		t.Errorf("flushed failure %v: verbs.StatusError not in its chain", fe)
	}
	if strings.Contains(tests[1].want, "/proc/") {
		t.Errorf("non-verbose text names /proc")
	}
}

// Finalize's fence, failed by the agent's abort, names the rank golaunch blames.
func TestAgentErrText(t *testing.T) {
	saved := verbose
	defer func() { verbose = saved }()
	verbose = func() bool { return false }
	for _, tt := range []struct{ cause, want string }{
		{"rank 1 (host vm, pid 5) exited with code 3", "rank 1 on host vm failed: exited with code 3"},
		{"rank 2 (host h1, pid 9) called Abort(7): bad input", "rank 2 on host h1 aborted the job: called Abort(7): bad input"},
		{"rank 0 (host h1) could not be started: no such file", "rank 0 on host h1 failed: could not be started: no such file"},
		{"job timed out after 1s", "job aborted: pmi: job aborted: job timed out after 1s"},
	} {
		x := pmi.NewExchange(1)
		x.Fail(errors.New(tt.cause))
		ferr := x.Fence(context.Background(), 0, nil)
		err := agentErr(ferr)
		if !errors.Is(err, ErrAborted) || !errors.Is(err, pmi.ErrAborted) || err.Error() != tt.want {
			t.Errorf("agentErr(%v) = %q, want %q wrapping ErrAborted and pmi.ErrAborted", ferr, err, tt.want)
		}
	}
}

// The launcher's events become ProcErrors that lead with the rank and the launcher's
// reason.
func TestLauncherWhy(t *testing.T) {
	for _, tt := range []struct {
		rank        int
		cause, want string
	}{
		{1, "rank 1 (host vm, pid 5) exited with code 3", "exited with code 3"},
		{1, "rank 1 (host vm, pid 5) panicked: panic: boom", "panicked: panic: boom"},
		{3, "rank 3 (host h1) could not be started: exec: no such file", "could not be started: exec: no such file"},
		{2, "rank 1 (host vm, pid 5) exited with code 3", "rank 1 (host vm, pid 5) exited with code 3"},
		{0, "job timed out after 10s", "job timed out after 10s"},
	} {
		if got := launcherWhy(tt.rank, tt.cause); got != tt.want {
			t.Errorf("launcherWhy(%d, %q) = %q, want %q", tt.rank, tt.cause, got, tt.want)
		}
	}
}
