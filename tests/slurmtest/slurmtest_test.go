package slurmtest_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/tests/slurmtest"
)

func TestMain(m *testing.M) { os.Exit(slurmtest.Run(m)) }

// labelled matches a line of `srun --label`: the task's rank, then its output.
var labelled = regexp.MustCompile(`^\s*(\d+): (PMI_[A-Za-z_]+)=(.*)$`)

// TestSrunPMIEnv runs a shell command as 4 tasks under srun --mpi=pmi2 and checks that each
// sees the PMI-2 plugin's variables: PMI_FD, PMI_RANK (its task id), PMI_SIZE and
// PMI_JOBID (<job>.<step>), and no PMI_PORT.
func TestSrunPMIEnv(t *testing.T) {
	srun := slurmtest.Up(t)
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(2*time.Minute))
	defer cancel()
	cmd := srun(ctx, "-n", "4", "--mpi=pmi2", "--label", "sh", "-c", "env | grep '^PMI_'")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", cmd, err, out, stderr.Bytes())
	}
	vars := map[int]map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := labelled.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		task, _ := strconv.Atoi(m[1])
		if vars[task] == nil {
			vars[task] = map[string]string{}
		}
		vars[task][m[2]] = m[3]
	}
	jobID := regexp.MustCompile(`^\d+\.\d+$`)
	for task := range 4 {
		v := vars[task]
		if v == nil {
			t.Errorf("task %d printed no PMI_* variable; output:\n%s", task, out)
			continue
		}
		if _, err := strconv.Atoi(v["PMI_FD"]); err != nil {
			t.Errorf("task %d: PMI_FD=%q, want a file descriptor number", task, v["PMI_FD"])
		}
		if v["PMI_RANK"] != strconv.Itoa(task) {
			t.Errorf("task %d: PMI_RANK=%q, want %d", task, v["PMI_RANK"], task)
		}
		if v["PMI_SIZE"] != "4" {
			t.Errorf("task %d: PMI_SIZE=%q, want 4", task, v["PMI_SIZE"])
		}
		if !jobID.MatchString(v["PMI_JOBID"]) {
			t.Errorf("task %d: PMI_JOBID=%q, want <job>.<step>", task, v["PMI_JOBID"])
		}
		if p, ok := v["PMI_PORT"]; ok {
			t.Errorf("task %d: PMI_PORT=%q set; srun --mpi=pmi2 serves PMI over PMI_FD only", task, p)
		}
	}
}

// TestUpAgain checks that a second up of the running cluster leaves it as it is, and that
// status reports it up.
func TestUpAgain(t *testing.T) {
	slurmtest.Up(t)
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(time.Minute))
	defer cancel()
	up := exec.CommandContext(ctx, "../../scripts/slurm-local.sh", "up", "--lease", strconv.Itoa(os.Getpid()))
	up.Env = slurmtest.Env()
	out, err := up.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "already up") {
		t.Fatalf("second up: %v; want success and \"already up\"; output:\n%s", err, out)
	}
	status := exec.CommandContext(ctx, "../../scripts/slurm-local.sh", "status")
	status.Env = slurmtest.Env()
	if out, err := status.CombinedOutput(); err != nil {
		t.Fatalf("status: %v; want exit 0 while up; output:\n%s", err, out)
	}
}

// TestSrunContextEnds checks that the end of srun's context ends srun and its job: a step
// that would sleep for 10 minutes is gone from squeue soon after its context expires.
func TestSrunContextEnds(t *testing.T) {
	srun := slurmtest.Up(t)
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(3*time.Second))
	defer cancel()
	name := "slurmtest-ctx-" + strconv.Itoa(os.Getpid())
	cmd := srun(ctx, "-n", "2", "--job-name", name, "sleep", "600")
	out, err := cmd.CombinedOutput()
	if err == nil || ctx.Err() == nil {
		t.Fatalf("%s: %v (context: %v); want srun ended by its context; output:\n%s", cmd, err, ctx.Err(), out)
	}
	wait, cancelWait := context.WithTimeout(context.Background(), testbudget.Scale(time.Minute))
	defer cancelWait()
	for {
		q := exec.CommandContext(wait, "squeue", "-h", "-n", name, "-o", "%i %T")
		q.Env = slurmtest.Env()
		jobs, err := q.Output()
		if err == nil && len(bytes.TrimSpace(jobs)) == 0 {
			return
		}
		if wait.Err() != nil {
			t.Fatalf("job %s still listed a minute after srun's context ended (squeue: %v):\n%s", name, err, jobs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
