package launcher

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorma-hpc/gorma/pmi"
)

// pmixJob describes the job for the agent's PMIx server: every rank's host and program
// as the job started. Ranks spawned later are gorma ranks, which the PMI-1 server serves.
func (j *agentJob) pmixJob() pmi.PMIxJob {
	r := j.spec.Roster
	apps := make([]int, r.Size)
	for rank := range apps {
		apps[rank] = j.spec.appOf(rank)
	}
	return pmi.PMIxJob{Nspace: "golaunch." + j.spec.ID, JobID: j.spec.ID, Hosts: r.Hosts,
		NodeOf: r.RankHost, AppNum: apps, Universe: r.Size, Node: j.spec.Node, Topology: hostTopology}
}

var topology struct {
	once sync.Once
	xml  string
}

// hostTopology returns this host's hwloc topology as XML, from hwloc's lstopo when it is
// installed (Debian's hwloc-nox), or "". It runs lstopo once per process. Open MPI ranks
// that get it skip discovering the topology each on its own, which is most of their
// MPI_Init on a full node (scripts/compare-launchers.sh measures startup).
func hostTopology() string {
	topology.once.Do(func() {
		for _, name := range []string{"lstopo-no-graphics", "lstopo"} {
			path, err := exec.LookPath(name)
			if err != nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			out, err := exec.CommandContext(ctx, path, "--of", "xml").Output()
			cancel()
			if err == nil && strings.Contains(string(out), "<topology") {
				topology.xml = string(out)
			}
			return
		}
	})
	return topology.xml
}

// envJSM names IBM's jsrun port. Open MPI 4 (schizo/jsm) takes a process that has it for
// one started directly by a PMIx launcher, and joins its job through PMIx; without it,
// Open MPI 4 runs a process that mpirun did not start as a singleton. Open MPI 5 needs
// no hint.
const envJSM = "JSM_JSRUN_PORT"

// envOMPIYield makes Open MPI ranks yield the CPU while they wait.
const envOMPIYield = "OMPI_MCA_mpi_yield_when_idle"

// pmixEnv is what a rank needs to reach the agent's PMIx server, and the variables
// Open MPI's mpirun gives its ranks (some programs and scripts read them). As mpirun
// does, it asks Open MPI ranks to yield while they wait when the host has more ranks
// than CPUs, unless env (the rank's environment so far) says otherwise. It is empty for
// a rank the job did not start with.
func (j *agentJob) pmixEnv(c pmi.Contract, env []string) []string {
	out := j.pmix.Environ(c.Rank)
	if out == nil {
		return nil
	}
	itoa := strconv.Itoa
	out = append(out, envJSM+"=golaunch",
		"OMPI_COMM_WORLD_RANK="+itoa(c.Rank), "OMPI_COMM_WORLD_SIZE="+itoa(c.Size),
		"OMPI_COMM_WORLD_LOCAL_RANK="+itoa(c.LocalRank), "OMPI_COMM_WORLD_LOCAL_SIZE="+itoa(c.LocalSize),
		"OMPI_COMM_WORLD_NODE_RANK="+itoa(c.LocalRank), "OMPI_UNIVERSE_SIZE="+itoa(c.Size))
	if c.LocalSize > len(j.cpus) && !hasVar(env, envOMPIYield) {
		out = append(out, envOMPIYield+"=1")
	}
	return out
}

func hasVar(env []string, name string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, name+"=") {
			return true
		}
	}
	return false
}
