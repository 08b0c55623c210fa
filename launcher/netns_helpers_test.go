package launcher

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/launcher/internal/netns"
)

// netnsCluster is a cluster of network-namespace hosts h0, h1, ... each running one
// golaunch agent (gossip on port 7946 of its own address); h1... joined h0.
type netnsCluster struct {
	*netns.Cluster
	testCluster
	agentList []*running // by host index
}

// startNetnsCluster creates one host per entry of slots, starts an agent with those slots
// in each, and waits until every agent reports its gossip address. The namespaces are
// removed when the test ends; ctx bounds the agents' lives.
func startNetnsCluster(t *testing.T, ctx context.Context, slots ...int) *netnsCluster {
	t.Helper()
	c, err := netns.New(len(slots))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	nc := &netnsCluster{Cluster: c, testCluster: testCluster{keyfile: writeKey(t), seed: c.Hosts[0].Addr + ":7946"}}
	for i, h := range c.Hosts {
		args := []string{"agent", "--bind", h.Addr + ":7946", "--slots", strconv.Itoa(slots[i]),
			"--keyfile", nc.keyfile, "--name", fmt.Sprintf("h%d", i)}
		if i > 0 {
			args = append(args, "--join", nc.seed)
		}
		a := startCmd(t, h.Command(ctx, golaunchBin, args...))
		a.line(t, fmt.Sprintf("golaunch agent h%d: gossip %s", i, h.Addr), 10*time.Second)
		nc.agentList = append(nc.agentList, a)
	}
	// On failure, show what every agent logged: memberlist's warnings (a suspected or
	// refuted member, a failed probe) say why an agent was declared dead.
	t.Cleanup(func() {
		if t.Failed() {
			for i, a := range nc.agentList {
				t.Logf("agent h%d stderr:\n%s", i, a.stderr.String())
			}
		}
	})
	return nc
}

// submitFrom0 starts golaunch on host h0 as a submitter to the cluster with args.
func (nc *netnsCluster) submitFrom0(t *testing.T, ctx context.Context, args ...string) *running {
	t.Helper()
	return startCmd(t, nc.Hosts[0].Command(ctx, golaunchBin, nc.submit(args...)...))
}

// stallPipe is a process's stderr that the test can stop, as a terminal stopped with
// Ctrl-S or a log pipe nobody reads would be: once stalled, the process's next write to
// its stderr blocks until drain. Nothing reads it before drain.
type stallPipe struct {
	r, w *os.File
	out  lockedBuffer
}

func newStallPipe(t *testing.T) *stallPipe {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &stallPipe{r: r, w: w}
	t.Cleanup(func() { w.Close(); r.Close() })
	return p
}

// stall fills the pipe, through a non-blocking file description of its own (the process
// keeps blocking writes).
func (p *stallPipe) stall(t *testing.T) {
	t.Helper()
	fd, err := syscall.Open(fmt.Sprintf("/proc/self/fd/%d", p.w.Fd()), syscall.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	fill := bytes.Repeat([]byte{'\n'}, 4096)
	for n := len(fill); n > 0; {
		if _, err := syscall.Write(fd, fill[:n]); err == syscall.EAGAIN {
			n /= 2
		} else if err != nil {
			t.Fatal(err)
		}
	}
}

// drain reads the pipe from now on, unblocking the process.
func (p *stallPipe) drain() {
	go io.Copy(&p.out, p.r)
}

// String returns what was drained, without the filler.
func (p *stallPipe) String() string {
	var lines []string
	for _, l := range strings.Split(p.out.String(), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// jobDirs returns the job directories (golaunch-ID-*) in the temporary directory, by
// job ID.
func jobDirs() map[string][]string {
	out := map[string][]string{}
	ents, _ := os.ReadDir(os.TempDir())
	for _, e := range ents {
		id, _, ok := strings.Cut(strings.TrimPrefix(e.Name(), "golaunch-"), "-")
		if e.IsDir() && ok && strings.HasPrefix(e.Name(), "golaunch-") && id != "test" {
			out[id] = append(out[id], filepath.Join(os.TempDir(), e.Name()))
		}
	}
	return out
}

// waitJobDirs waits until a job that was not in before has n job directories, and
// returns them.
func waitJobDirs(t *testing.T, before map[string][]string, n int) map[string]bool {
	t.Helper()
	deadline := time.Now().Add(testbudget.Scale(20 * time.Second))
	for {
		for id, dirs := range jobDirs() {
			if _, old := before[id]; !old && len(dirs) == n {
				out := map[string]bool{}
				for _, d := range dirs {
					out[d] = true
				}
				return out
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new job with %d job directories within %v: %v", n, testbudget.Scale(20*time.Second), jobDirs())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
