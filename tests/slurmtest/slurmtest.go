package slurmtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// Srun builds an srun command with args under ctx: its environment names the local
// cluster, ctx's end sends it SIGTERM and, 10 s later, SIGKILL. The caller may set Dir,
// Stdout, Stderr and append to Env before starting it.
type Srun func(ctx context.Context, args ...string) *exec.Cmd

// Conf is the configuration scripts/slurm-local.sh generates (its DIR default).
const Conf = "/var/tmp/gorma-slurm/slurm.conf"

const (
	upTimeout   = 5 * time.Minute // the script waits up to 5 min for another caller's lock
	downTimeout = 2 * time.Minute
	killDelay   = 10 * time.Second
)

// tools are the programs the cluster needs and the Debian package of each.
var tools = []struct{ name, pkg string }{
	{"srun", "slurm-wlm"}, {"sinfo", "slurm-wlm"}, {"slurmctld", "slurm-wlm"}, {"slurmd", "slurm-wlm"},
	{"munged", "munge"}, {"mungekey", "munge"},
}

var (
	running atomic.Bool // Run is running the tests
	once    sync.Once
	state   struct {
		skip   string // why the tests cannot use Slurm here
		err    error  // the cluster did not come up
		script string // scripts/slurm-local.sh
		srun   string // the srun executable
		leased bool   // this binary holds a lease
	}
)

// Run runs the tests of m and then gives up this binary's use of the cluster (stopping it
// when no other test binary uses it). It returns m.Run's exit code, or 1 when the cluster
// did not stop. Call it from TestMain.
func Run(m *testing.M) int {
	running.Store(true)
	code := testbudget.Run(m)
	running.Store(false)
	if err := down(); err != nil {
		fmt.Fprintln(os.Stderr, "slurmtest:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Up returns an Srun for the local cluster, starting the cluster on the first call of the
// test binary. It skips t when the machine cannot run it (a program missing, not root) and
// fails t when it does not come up or when TestMain does not call Run.
func Up(t testing.TB) Srun {
	t.Helper()
	if !running.Load() {
		t.Fatal("slurmtest: the package's TestMain must call slurmtest.Run(m), which stops the cluster after the tests: " +
			"func TestMain(m *testing.M) { os.Exit(slurmtest.Run(m)) }")
	}
	once.Do(start)
	switch {
	case state.skip != "":
		testbudget.SkipEngine(t, "%s", "slurmtest: "+state.skip)
	case state.err != nil:
		t.Fatalf("slurmtest: %v", state.err)
	}
	return srun
}

// Env returns the environment srun gets: the process's minus the variables of an
// enclosing job or launcher, plus SLURM_CONF. Use it to run other Slurm commands (sinfo,
// squeue, scancel) against the local cluster.
func Env() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "SLURM_") || strings.HasPrefix(name, "PMI_") ||
			strings.HasPrefix(name, "PMIX_") || strings.HasPrefix(name, "GOLAUNCH_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "SLURM_CONF="+Conf)
}

func srun(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, state.srun, args...)
	cmd.Env = Env()
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = killDelay
	return cmd
}

// start checks the machine and runs the script's up, once.
func start() {
	if os.Geteuid() != 0 {
		state.skip = "needs root: scripts/slurm-local.sh runs munged as munge and slurmctld and slurmd as root"
		return
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool.name); err != nil {
			state.skip = fmt.Sprintf("%s not found on PATH: apt-get install %s (scripts/slurm-local.sh needs slurm-wlm and munge)", tool.name, tool.pkg)
			return
		}
	}
	state.srun, _ = exec.LookPath("srun")
	root, err := moduleRoot()
	if err != nil {
		state.err = err
		return
	}
	state.script = filepath.Join(root, "scripts", "slurm-local.sh")
	state.leased = true // a failed up may have left daemons: Run's down stops them
	if out, err := script(upTimeout, "up"); err != nil {
		state.err = fmt.Errorf("%s up: %w\n%s", state.script, err, out)
	}
}

// down gives up this binary's lease, if it took one.
func down() error {
	if !state.leased {
		return nil
	}
	state.leased = false
	if out, err := script(downTimeout, "down"); err != nil {
		return fmt.Errorf("%s down: %w\n%s", state.script, err, out)
	}
	return nil
}

// script runs scripts/slurm-local.sh CMD --lease <this pid>.
func script(timeout time.Duration, cmd string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c := exec.CommandContext(ctx, state.script, cmd, "--lease", strconv.Itoa(os.Getpid()))
	c.Env = Env()
	c.WaitDelay = killDelay
	out, err := c.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("not done after %v: %w", timeout, ctx.Err())
	}
	return out, err
}

// moduleRoot returns the nearest directory above the working directory holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("slurmtest: no go.mod above the working directory, so no scripts/slurm-local.sh")
		}
		dir = parent
	}
}
