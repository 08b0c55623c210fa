package launcher

import (
	"os/exec"
	"testing"

	"github.com/gorma-hpc/gorma/pmi"
)

// TestRankOfPid: a PMI protocol error on the socket before gorma-init is blamed on the
// rank whose process sent it: one in procs, or a child of this process that is still
// being started and whose environment names the job and a local rank; no other process.
func TestRankOfPid(t *testing.T) {
	start := func(job, rank string) *exec.Cmd {
		cmd := exec.Command("sleep", "60")
		cmd.Env = []string{pmi.EnvJobID + "=" + job, pmi.EnvRank + "=" + rank}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	j := &agentJob{spec: jobSpec{ID: "job1"}, local: []int{1, 3}, procs: map[int]*rankProc{}}
	inProcs := start("other", "0")
	j.procs[3] = &rankProc{rank: 3, pid: inProcs.Process.Pid}
	for _, tc := range []struct {
		what string
		pid  int
		want int
	}{
		{"a rank in procs", inProcs.Process.Pid, 3},
		{"a rank being started", start("job1", "1").Process.Pid, 1},
		{"a child of another job", start("job2", "1").Process.Pid, -1},
		{"a child naming a rank of another host", start("job1", "2").Process.Pid, -1},
		{"no child of this process", 1, -1},
		{"no process", 0, -1},
	} {
		if got := j.rankOf(tc.pid); got != tc.want {
			t.Errorf("%s (pid %d): rank %d, want %d", tc.what, tc.pid, got, tc.want)
		}
	}
}
