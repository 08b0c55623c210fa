package pmi

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// pmixJobOf is a one-node job of size ranks on host "node0".
func pmixJobOf(size int) PMIxJob {
	return PMIxJob{Nspace: "golaunch.job1", JobID: "job1", Hosts: []string{"node0"}, NodeOf: make([]int, size)}
}

func listenPMIx(t *testing.T, h Handler, job PMIxJob) *PMIxServer {
	t.Helper()
	s, err := ListenPMIx(h, job)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// envOf turns the server's environment for rank into a getenv.
func envOf(s *PMIxServer, rank int) func(string) string {
	m := map[string]string{}
	for _, kv := range s.Environ(rank) {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return func(k string) string { return m[k] }
}

// gorma's own PMIx client against the server: four ranks put, fence and read each
// other's values over three rounds, then finalize.
func TestPMIxServerGoClient(t *testing.T) {
	const n = 4
	h := newJob(n)
	s := listenPMIx(t, h, pmixJobOf(n))
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- func() error {
				c, err := ConnectPMIx(ctx(t), envOf(s, r))
				if err != nil {
					return err
				}
				defer c.Close()
				if c.Size() != n || c.Rank() != r {
					return fmt.Errorf("rank %d: size %d rank %d", r, c.Size(), c.Rank())
				}
				if nodes, _ := c.Nodes(ctx(t)); len(nodes) != n {
					return fmt.Errorf("rank %d: nodes %v", r, nodes)
				}
				for round := range 3 {
					v := []byte(fmt.Sprintf("card %d round %d \x00\xff =", r, round))
					if err := c.Put(ctx(t), "ep", v); err != nil {
						return err
					}
					if round == 0 {
						if err := c.Put(ctx(t), "first", v); err != nil {
							return err
						}
					}
					if err := c.Fence(ctx(t)); err != nil {
						return err
					}
					for p := range n {
						got, err := c.Get(ctx(t), p, "ep")
						if err != nil {
							return err
						}
						if want := fmt.Sprintf("card %d round %d \x00\xff =", p, round); string(got) != want {
							return fmt.Errorf("rank %d round %d: rank %d's ep %q, want %q", r, round, p, got, want)
						}
						// A key committed in an earlier round stays.
						if got, err := c.Get(ctx(t), p, "first"); err != nil || !bytes.HasPrefix(got, []byte(fmt.Sprintf("card %d round 0", p))) {
							return fmt.Errorf("rank %d round %d: rank %d's first %q, %v", r, round, p, got, err)
						}
					}
				}
				if _, err := c.Get(ctx(t), (r+1)%n, "never"); err == nil {
					return fmt.Errorf("rank %d: a get of a key nobody put succeeded", r)
				}
				return c.Finalize(ctx(t))
			}()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.finalized) != n {
		t.Errorf("finalized %v, want every rank", h.finalized)
	}
	if len(h.broken) != 0 {
		t.Errorf("protocol errors: %v", h.broken)
	}
}

// openMPIProg builds src with Debian's mpicc.openmpi, or skips.
func openMPIProg(t *testing.T, src string) string {
	t.Helper()
	mpicc, err := exec.LookPath("mpicc.openmpi")
	if err != nil {
		t.Skip("mpicc.openmpi not found: install Debian's openmpi-bin and libopenmpi-dev")
	}
	bin := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(src), ".c"))
	if out, err := exec.Command(mpicc, "-O1", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("mpicc.openmpi %s: %v\n%s", src, err, out)
	}
	return bin
}

// ompiEnv is this process's environment without PMIx and Open MPI variables, plus env.
func ompiEnv(env []string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PMIX_") && !strings.HasPrefix(kv, "OMPI_") && !strings.HasPrefix(kv, "PMI_") {
			out = append(out, kv)
		}
	}
	return append(append(out, "OMPI_MCA_btl_vader_single_copy_mechanism=none", "OMPI_ALLOW_RUN_AS_ROOT=1",
		"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "JSM_JSRUN_PORT=golaunch"), env...)
}

// Open MPI 4.1 programs against the server alone: each rank started with the server's
// environment forms one world of four and passes its checks.
func TestPMIxServerOpenMPI(t *testing.T) {
	const n = 4
	for _, prog := range []string{"../tests/mpi/allreduce.c", "../tests/mpi/split.c", "../tests/mpi/putfence.c"} {
		t.Run(filepath.Base(prog), func(t *testing.T) {
			bin := openMPIProg(t, prog)
			h := newJob(n)
			s := listenPMIx(t, h, pmixJobOf(n))
			c, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
			defer cancel()
			outs := make([]bytes.Buffer, n)
			errs := make(chan error, n)
			for r := range n {
				cmd := exec.CommandContext(c, bin)
				cmd.Env = ompiEnv(s.Environ(r))
				cmd.Stdout, cmd.Stderr = &outs[r], &outs[r]
				go func() { errs <- cmd.Run() }()
			}
			for range n {
				if err := <-errs; err != nil {
					t.Errorf("a rank: %v", err)
				}
			}
			for r := range n {
				if t.Failed() || !strings.Contains(outs[r].String(), fmt.Sprintf(" ok rank %d ", r)) || strings.Contains(outs[r].String(), " of 1") {
					t.Errorf("rank %d:\n%s", r, outs[r].String())
				}
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			if len(h.finalized) != n || len(h.broken) != 0 {
				t.Errorf("finalized %v, protocol errors %v", h.finalized, h.broken)
			}
		})
	}
}
