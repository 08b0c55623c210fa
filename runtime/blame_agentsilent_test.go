package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/pmi"
	"github.com/gorma-hpc/gorma/runtime"
)

// TestAgentSilentAfterPeerFailure: rank 0's transport dies (as its process would, but
// with its agent connection left open) while ranks 1 and 2 wait to receive from it. When
// the agent says nothing of it, as a stopped agent would, ranks 1 and 2 end themselves (the job's exit hook gets code 1) once the
// runtime's bound has passed (checked with a 30 s hang guard); when the agent reports the
// failure, no rank ends itself: the agent ends the job.
func TestAgentSilentAfterPeerFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the runtime's bound on a silent agent")
	}
	for _, agentTells := range []bool{false, true} {
		name := "agent-silent"
		if agentTells {
			name = "agent-tells"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			j := start(t, "shm", 3)
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(40*time.Second))
			defer cancel()
			var waits []<-chan error
			for _, w := range j.Worlds[1:] {
				waits = append(waits, result(func() error {
					_, err := runtime.Recv(ctx, w, make([]byte, 8), 0, 0)
					return err
				}))
			}
			time.Sleep(50 * time.Millisecond)
			failed := time.Now()
			runtime.KillTransportQuietly(j.Worlds[0])
			if agentTells {
				j.Notify(-1, pmi.Event{Kind: pmi.ProcFailed, Rank: 0, Host: j.Worlds[0].Host(), Code: -1, Cause: "killed"})
			}
			for _, c := range waits {
				wantProcError(t, c, runtime.ErrProcFailed, 0, 3*time.Second)
			}
			deadline := time.Now().Add(testbudget.Scale(30 * time.Second))
			if agentTells {
				deadline = time.Now().Add(testbudget.Scale(15 * time.Second)) // past the runtime's bound
			}
			for time.Now().Before(deadline) {
				_, ok1 := j.Exit(1)
				_, ok2 := j.Exit(2)
				if ok1 && ok2 {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			for rank := 1; rank <= 2; rank++ {
				code, ok := j.Exit(rank)
				switch {
				case agentTells && ok:
					t.Errorf("rank %d ended itself (code %d) although its agent reported the failure", rank, code)
				case !agentTells && !ok:
					t.Errorf("rank %d did not end itself within %v of a peer failure its agent said nothing of", rank, testbudget.Scale(30*time.Second))
				case !agentTells && code != 1:
					t.Errorf("rank %d ended itself with code %d, want 1", rank, code)
				}
			}
			if !agentTells && !t.Failed() {
				t.Logf("ranks 1 and 2 ended themselves %v after the peer failure", time.Since(failed).Round(time.Millisecond))
			}
		})
	}
}
