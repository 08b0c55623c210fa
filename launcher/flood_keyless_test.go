package launcher

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// TestFloodKeylessJobs floods a real `golaunch agent`'s control port from a keyless
// client on the submitters' own address (127.0.0.1): 1,500 silent connections held (each
// opened again a second after the agent sheds it) and batches of 70 silent connections
// churned every quarter second, while 20 jobs are submitted with --join, four at a time.
// Every job must succeed: the strangers' connections never take a submitter's slot.
func TestFloodKeylessJobs(t *testing.T) {
	if testing.Short() {
		t.Skip("a flood of several thousand connections (-short)")
	}
	binaries(t)
	key := writeKey(t)
	a := startGL(t, "agent", "--bind", "127.0.0.1:0", "--slots", "2", "--keyfile", key, "--name", "fk")
	f := strings.Fields(a.line(t, "golaunch agent fk: gossip ", 10*time.Second))
	gossip, control := strings.TrimSuffix(f[4], ","), strings.TrimSuffix(f[6], ",")

	const nHeld, nChurn, nJobs, parallel = 1500, 70, 20, 4
	stop := make(chan struct{})
	var flood sync.WaitGroup
	var opened atomic.Int64
	dial := func() net.Conn {
		c, err := net.DialTimeout("tcp", control, time.Second)
		if err != nil {
			return nil
		}
		opened.Add(1)
		return c
	}
	for range nHeld {
		flood.Add(1)
		go func() { // held: silent, and opened again after the agent sheds it
			defer flood.Done()
			for {
				if c := dial(); c != nil {
					go func() { <-stop; c.Close() }()
					var b [1]byte
					c.Read(b[:]) // the agent writes nothing: this returns when it closes c
					c.Close()
				}
				select {
				case <-stop:
					return
				case <-time.After(time.Second):
				}
			}
		}()
	}
	flood.Add(1)
	go func() { // churned: a batch of silent connections, replaced by the next
		defer flood.Done()
		var batch []net.Conn
		defer func() {
			for _, c := range batch {
				c.Close()
			}
		}()
		for {
			for _, c := range batch {
				c.Close()
			}
			batch = batch[:0]
			for range nChurn {
				if c := dial(); c != nil {
					batch = append(batch, c)
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	defer func() {
		close(stop)
		flood.Wait()
	}()
	a.waitStderr(t, "silent, shed for a newer connection", 30*time.Second)

	budget := testbudget.Scale(90 * time.Second)
	type outcome struct {
		i    int
		code int
		out  string
		err  error
	}
	results := make(chan outcome, nJobs)
	sem := make(chan struct{}, parallel)
	for i := range nJobs {
		go func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), budget)
			defer cancel()
			cmd := exec.CommandContext(ctx, golaunchBin, "--join", gossip, "--keyfile", key, "-n", "2", pmiprogBinPath(t), "ok")
			cmd.Env = glEnv()
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code, err = ee.ExitCode(), nil
			}
			if ctx.Err() != nil {
				err = fmt.Errorf("did not end within %v", budget)
			}
			results <- outcome{i, code, out.String(), err}
		}()
	}
	failed := 0
	for range nJobs {
		r := <-results
		if r.err != nil || r.code != 0 || !strings.Contains(r.out, "[1] rank 1/2 host fk") {
			failed++
			t.Errorf("job %d under the flood: exit %d, %v:\n%s", r.i, r.code, r.err, r.out)
		}
	}
	if failed > 0 {
		t.Logf("agent's log:\n%s", a.stderr.String())
	}
	t.Logf("%d of %d jobs failed while a keyless client opened %d connections", failed, nJobs, opened.Load())
}
