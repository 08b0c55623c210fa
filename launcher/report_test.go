package launcher

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// TestHangReports runs real jobs that hang and checks golaunch's report of where every
// rank is blocked and why: a deadlock at --timeout (exit 124), a collective mismatch
// (and, under GORMA_CHECK=1, that mismatch as an error at every rank), and on SIGUSR1 with --stacks a report after which the job goes on.
func TestHangReports(t *testing.T) {
	prog := rtprog(t)
	t.Run("deadlock", func(t *testing.T) {
		r := runGL(t, "", "-n", "2", "--timeout", "3s", prog, "deadlock")
		if r.code != ExitTimeout {
			t.Fatalf("exit %d, want %d\n%s", r.code, ExitTimeout, r.stderr)
		}
		for _, want := range []string{
			"golaunch: where the ranks are (job timed out after 3s):\n",
			"golaunch:   rank 0: Recv(src=1, tag=0, World) for ",
			"golaunch:   rank 1: Finalize for ",
			"golaunch: deadlock: rank 0 waits for rank 1 in Recv; rank 1 waits in Finalize\n",
			"golaunch: job timed out after 3s; job aborted",
		} {
			mustContain(t, "stderr", r.stderr, want)
		}
	})
	t.Run("mismatch", func(t *testing.T) {
		r := runGL(t, "", "-n", "3", "--timeout", "3s", prog, "mismatch")
		if r.code != ExitTimeout {
			t.Fatalf("exit %d, want %d\n%s", r.code, ExitTimeout, r.stderr)
		}
		for _, want := range []string{
			"golaunch:   rank 0: window.Allocate #2 (World) for ",
			"golaunch:   rank 2: Allreduce #2 (1 float64, sum, World) for ",
			"golaunch: mismatch: rank 0 is in window.Allocate #2, ranks 1-2 in Allreduce #2 on World\n",
		} {
			mustContain(t, "stderr", r.stderr, want)
		}
	})
	t.Run("first", func(t *testing.T) {
		// A World's first window sets the windows' Dup up with a step of the World's
		// scratch (collectives.SetupDup), which meets the others' Allreduce: every rank
		// fails at once, naming both calls, without GORMA_CHECK.
		r := runGL(t, "", "-n", "3", "--timeout", testbudget.Scale(20*time.Second).String(), prog, "mismatchfirst")
		if r.code != 1 {
			t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
		}
		for _, want := range []string{
			"[0] rtprog: rank 0: mismatch: the call returned: window create: collectives: window creation: mismatched collective call: rank ",
			"[1] rtprog: rank 1: mismatch: the call returned: collectives: allreduce: mismatched collective call: rank 0 is in window creation, rank 1 in Allreduce",
			"[2] rtprog: rank 2: mismatch: the call returned: collectives: allreduce: mismatched collective call: rank 0 is in window creation, rank 2 in Allreduce",
		} {
			mustContain(t, "stderr", r.stderr, want)
		}
	})
	t.Run("checked", func(t *testing.T) {
		// Under GORMA_CHECK=1 the same mismatch, and one of operators, fail at every rank
		// before the calls run, each naming both calls.
		const rule = ": every rank of World must make its collective calls in the same order, with the same count, type, operator and root\n"
		r := runGL(t, "", "-n", "3", "--timeout", testbudget.Scale(20*time.Second).String(), "-x", "GORMA_CHECK=1", prog, "mismatch")
		if r.code != 1 {
			t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
		}
		for _, want := range []string{
			"[0] rtprog: rank 0: mismatch: the call returned: window create: rank 0 is in window.Allocate #2 (World), rank 2 in Allreduce #2 (1 float64, sum, World)" + rule,
			"[1] rtprog: rank 1: mismatch: the call returned: collectives: allreduce: rank 0 is in window.Allocate #2 (World), rank 1 in Allreduce #2 (1 float64, sum, World)" + rule,
			"[2] rtprog: rank 2: mismatch: the call returned: collectives: allreduce: rank 0 is in window.Allocate #2 (World), rank 2 in Allreduce #2 (1 float64, sum, World)" + rule,
		} {
			mustContain(t, "stderr", r.stderr, want)
		}
		r = runGL(t, "", "-n", "3", "--timeout", testbudget.Scale(20*time.Second).String(), "-x", "GORMA_CHECK=1", prog, "mismatchop")
		if r.code != 1 {
			t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
		}
		for _, want := range []string{
			"[0] rtprog: rank 0: mismatchop: the call returned: collectives: allreduce: rank 0 is in Allreduce #1 (1 float64, sum, World), rank 2 in Allreduce #1 (1 float64, max, World)" + rule,
			"[1] rtprog: rank 1: mismatchop: the call returned: collectives: allreduce: rank 1 is in Allreduce #1 (1 float64, sum, World), rank 2 in Allreduce #1 (1 float64, max, World)" + rule,
			"[2] rtprog: rank 2: mismatchop: the call returned: collectives: allreduce: rank ",
			" is in Allreduce #1 (1 float64, sum, World), rank 2 in Allreduce #1 (1 float64, max, World)" + rule,
		} {
			mustContain(t, "stderr", r.stderr, want)
		}
	})
	t.Run("sigusr1", func(t *testing.T) {
		gl := startGL(t, "-n", "2", "--stacks", "--hang-report", "0", "--timeout", testbudget.Scale(20*time.Second).String(), prog, "deadlock")
		gl.line(t, "ready", 10*time.Second)
		gl.line(t, "ready", 10*time.Second)
		time.Sleep(500 * time.Millisecond) // both in their calls
		gl.cmd.Process.Signal(syscall.SIGUSR1)
		gl.waitStderr(t, "golaunch: rank 1's goroutines:\n", 10*time.Second)
		select {
		case <-gl.done:
			t.Fatalf("the job ended after the report (exit %d):\n%s", gl.code, gl.stderr.String())
		case <-time.After(time.Second):
		}
		log := gl.stderr.String()
		for _, want := range []string{
			"golaunch: where the ranks are (SIGUSR1 to golaunch):\n",
			"golaunch: deadlock: rank 0 waits for rank 1 in Recv; rank 1 waits in Finalize\n",
			"golaunch: rank 0's goroutines:\ngoroutine ",
		} {
			if !strings.Contains(log, want) {
				t.Errorf("stderr lacks %q:\n%s", want, log)
			}
		}
		gl.cmd.Process.Signal(syscall.SIGTERM)
		<-gl.done
	})
}

// TestHangMismatchEnds: ranks whose collective calls do not match never go on as if they
// did, at any rank count or size: Reduce with two roots, Gather against Bcast and Bcast
// against Allreduce, at 2, 3 and 4 ranks of 8 B, 64 KiB and 4 MiB (rtprog mismatchroot,
// mismatchgb, mismatchba). Each job ends in one of two ways. Every rank's call, or the
// next call of a rank whose call returned nil, fails naming the mismatch (exit 1). Or the
// first quiet check names the mismatch, a rank that returned early from its call
// included, and golaunch ends the job at once (ExitFailure) with the mismatch as its
// cause, before --timeout; then a call fails only for the job's end, and never because
// it took a message of the other call (a call's tag carries its kind and root). No call
// writes a receive buffer.
func TestHangMismatchEnds(t *testing.T) {
	prog := rtprog(t)
	for _, tc := range []struct {
		mode, call, with string // the calls the failure names, with n for the count
	}{
		{"mismatchroot", "Reduce #1 (n float64, sum, root=0)", "Reduce #1 (n float64, sum, root=1)"},
		{"mismatchgb", "Gather #1", "Bcast #1"},
		{"mismatchba", "Bcast #1", "Allreduce #1"},
	} {
		for _, np := range []int{2, 3, 4} {
			for _, n := range []string{"1", "8192", "524288"} { // float64s: 8 B, 64 KiB, 4 MiB
				t.Run(tc.mode+"/"+strconv.Itoa(np)+"x"+n, func(t *testing.T) {
					r := runGL(t, "", "-n", strconv.Itoa(np), "--hang-report", "1s", "--timeout", testbudget.Scale(60*time.Second).String(),
						prog, tc.mode, n)
					call, with := strings.ReplaceAll(tc.call, "n float64", n+" float64"), strings.ReplaceAll(tc.with, "n float64", n+" float64")
					for rank := range np {
						pre := "[" + strconv.Itoa(rank) + "] rtprog: rank " + strconv.Itoa(rank) + ": " + tc.mode + ": "
						if strings.Contains(r.stderr, pre+"buffer written") {
							t.Errorf("rank %d's call wrote its buffer:\n%s", rank, r.stderr)
						}
						if strings.Contains(r.stderr, pre+"the call returned nil, the next: <nil>") {
							t.Errorf("rank %d's call and the next returned nil:\n%s", rank, r.stderr)
						}
					}
					switch r.code {
					case ExitFailure:
						line := lineWith(r.stderr, "golaunch: mismatched collective calls (")
						if !strings.Contains(line, call) || !strings.Contains(line, with) || !strings.HasSuffix(line, "; job aborted\n") {
							t.Fatalf("the failure does not name %s and %s:\n%s", call, with, r.stderr)
						}
						for rank := range np {
							pre := "[" + strconv.Itoa(rank) + "] rtprog: rank " + strconv.Itoa(rank) + ": " + tc.mode + ": the call returned"
							if line := lineWith(r.stderr, pre); line != "" && !strings.Contains(line, "job aborted: mismatched collective calls (") {
								t.Errorf("rank %d's call failed before the job's end:\n%s", rank, r.stderr)
							}
						}
					case 1:
						for rank := range np {
							pre := "[" + strconv.Itoa(rank) + "] rtprog: rank " + strconv.Itoa(rank) + ": " + tc.mode + ": the call returned"
							if line := lineWith(r.stderr, pre); !strings.Contains(line, "mismatched collective call") {
								t.Errorf("rank %d did not fail naming the mismatch:\n%s", rank, r.stderr)
							}
						}
					default:
						t.Fatalf("exit %d, want %d (a mismatch) or 1 (every rank failed)\nstderr:\n%s", r.code, ExitFailure, r.stderr)
					}
				})
			}
		}
	}
}
