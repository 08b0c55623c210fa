package launcher

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// e2eProg is tests/e2eprog, the end-to-end stress rank program.
var e2eProg = &program{pkg: "../tests/e2eprog"}

// e2eSteps is the length of each run's sequence: long enough to draw every kind of step
// several times, short enough for the whole set to stay well under a minute under -race.
const e2eSteps = 16

// TestE2EStress runs e2eprog's seeded random sequence (point-to-point eager, fast-box
// and rendezvous messages in both directions at once, many outstanding, AnySource;
// Allocate and Create windows under Fence, PSCW, Lock/Unlock/Flush and LockAll with
// Put/Get/accumulates/atomics, request-based and stack origins; windows made and freed;
// Allreduce on every algorithm the layout allows, Bcast, Allgather, Alltoall, Reduce,
// ReduceScatter, Barrier), every result checked exactly at every rank, with every rank
// a real process: 2, 3 and 4 ranks, over shm (Create windows through cross-memory
// attach) and over tcp, with GOGC=10 and goroutines allocating all the time.
func TestE2EStress(t *testing.T) {
	prog := e2eProg.path(t)
	for _, tr := range []string{"shm", "tcp"} {
		for n := 2; n <= 4; n++ {
			t.Run(fmt.Sprintf("%s/%d", tr, n), func(t *testing.T) {
				seed := 10*n + len(tr)
				before := shmSegments()
				r := runGL(t, "", "-n", strconv.Itoa(n), "--transport", tr, "-x", "GOGC=10", "--timeout", testbudget.Scale(50*time.Second).String(),
					prog, "-seed", strconv.Itoa(seed), "-steps", strconv.Itoa(e2eSteps), "-gc")
				if r.code != 0 {
					t.Fatalf("seed %d: exit %d\nstdout:\n%s\nstderr:\n%s", seed, r.code, r.stdout, r.stderr)
				}
				var checked int64
				for rank := range n {
					m := regexp.MustCompile(fmt.Sprintf(`\[%d\] PASS rank %d steps %d checked (\d+)`, rank, rank, e2eSteps)).FindStringSubmatch(r.stdout)
					if m == nil {
						t.Errorf("rank %d did not pass:\n%s", rank, r.stdout)
						continue
					}
					c, _ := strconv.ParseInt(m[1], 10, 64)
					checked += c
				}
				if tr == "shm" {
					// Every algorithm but lanes (which needs more than one host) runs on one host.
					for _, alg := range []string{"hier", "shm", "direct", "ring"} {
						if strings.Contains(r.stdout, "allreduce "+alg+" not available") {
							t.Errorf("allreduce %s not available on one host over shm:\n%s", alg, r.stdout)
						}
					}
				}
				for name := range shmSegments() {
					if !before[name] {
						t.Errorf("/dev/shm/%s left behind", name)
					}
				}
				t.Logf("%d ranks over %s: %d values checked in %v", n, tr, checked, r.took)
			})
		}
	}
}

// TestE2ERankKilled runs the same sequence on 4 ranks and SIGKILLs rank 2 (it kills
// itself at a seeded step, in the middle of the sequence). The ranks ignore SIGTERM and
// --grace is long, so they end only when the runtime fails their calls: every other rank
// must fail with an error that names a failed rank (the victim, or a rank that failed
// and exited just before), promptly; golaunch must exit 137 with its one summary line
// naming the victim, and no process or /dev/shm segment of the job may be left.
func TestE2ERankKilled(t *testing.T) {
	prog := e2eProg.path(t)
	const n, victim, step = 4, 2, 11
	for _, tr := range []string{"shm", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			before := shmSegments()
			gl := startGL(t, "-n", strconv.Itoa(n), "--transport", tr, "--grace", "20s", "-x", "GOGC=10",
				prog, "-seed", "7", "-steps", "40", "-gc", "-kill", fmt.Sprintf("%d@%d", victim, step))
			pids := gl.readyPids(t, n)
			gl.line(t, fmt.Sprintf("dying %d %d", victim, pids[victim]), 30*time.Second)
			start := time.Now()
			code := gl.wait(t, 10*time.Second)
			took := time.Since(start)
			requireGone(t, pids, 5*time.Second)
			stderr := gl.stderr.String()
			want := fmt.Sprintf("golaunch: rank %d (host %s, pid %d) killed by signal 9 (SIGKILL); job aborted", victim, hostName(), pids[victim])
			checkRootCause(t, summaryLines(stderr), code, want, 137, stderr)
			namedVictim := 0
			for rank := range n {
				if rank == victim {
					continue
				}
				prefix := fmt.Sprintf("[%d] e2eprog: rank %d: step ", rank, rank)
				i := strings.Index(stderr, prefix)
				if i < 0 {
					t.Errorf("rank %d printed no error:\n%s", rank, stderr)
					continue
				}
				line, _, _ := strings.Cut(stderr[i:], "\n")
				m := regexp.MustCompile(`: rank (\d+) on host \S+ (?:failed|is gone)[: ].*\[failed rank (\d+)\]$`).FindStringSubmatch(line)
				if m == nil || strings.Contains(line, "MISMATCH") {
					t.Errorf("rank %d: %q does not report a failed process", rank, line)
					continue
				}
				if m[2] == strconv.Itoa(victim) {
					namedVictim++
				}
			}
			if namedVictim == 0 {
				t.Errorf("no survivor named the victim, rank %d:\n%s", victim, stderr)
			}
			for name := range shmSegments() {
				if !before[name] {
					t.Errorf("/dev/shm/%s left behind", name)
				}
			}
			t.Logf("golaunch ended %v after the victim died; %d of %d survivors named it", took, namedVictim, n-1)
		})
	}
}
