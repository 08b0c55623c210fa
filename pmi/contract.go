package pmi

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Environment variables of the launch contract.
const (
	EnvJobID     = "GOLAUNCH_JOBID"      // job id (hex)
	EnvRank      = "GOLAUNCH_RANK"       // this rank
	EnvSize      = "GOLAUNCH_SIZE"       // ranks in the job
	EnvLocalRank = "GOLAUNCH_LOCAL_RANK" // rank among this host's ranks
	EnvLocalSize = "GOLAUNCH_LOCAL_SIZE" // ranks on this host
	EnvNodeRank  = "GOLAUNCH_NODE_RANK"  // index of this host in the job's host order
	EnvNumNodes  = "GOLAUNCH_NUM_NODES"  // hosts in the job
	EnvHost      = "GOLAUNCH_HOST"       // this host's name (the agent's memberlist name)
	EnvAgentSock = "GOLAUNCH_AGENT_SOCK" // the agent's Unix socket
	EnvTransport = "GOLAUNCH_TRANSPORT"  // auto, shm or tcp
	EnvTCPAddr   = "GOLAUNCH_TCP_ADDR"   // IP a rank's tcp device listens on (port 0)
	EnvIdleWatch = "GOLAUNCH_IDLE_WATCH" // "page,bell": inherited descriptors of the rank's idle-role watch (tcp)
	EnvHostCPUs  = "GOLAUNCH_HOST_CPUS"  // processors the agent may use, whatever this rank is bound to
	EnvSpawn     = "GOLAUNCH_SPAWN"      // "first,count,leader": a spawned rank's group and the job rank of its spawners' leader
)

// EnvTraceRing is the inherited descriptor of a rank's ring file under GORMA_TRACE: a
// memfd that holds the rank's flight recorder (internal/trace.MapRecorder), which the
// rank's agent reads once the rank has ended, however it ended.
const EnvTraceRing = "GOLAUNCH_TRACE_RING"

// SpawnGroup is the group of ranks that one spawn started: job ranks First to
// First+Count-1, spawned by a World whose rank 0 is job rank Leader.
type SpawnGroup struct {
	First, Count, Leader int
}

// EnvFT, set to 1, asks for a fault-tolerant job: the runtime reads it, and a peer's
// failure becomes an error of the calls that need that peer instead of the end of the
// process. golaunch --ft sets it for every rank; under Slurm, Hydra or Flux the user sets
// it, and tells the process manager not to kill the job when a rank dies.
const EnvFT = "GORMA_FT"

// Contract is a rank's place in a job, from the GOLAUNCH_* environment.
type Contract struct {
	JobID                string
	Rank, Size           int
	LocalRank, LocalSize int
	NodeRank, NumNodes   int
	Host                 string
	AgentSock            string
	Transport            string // "auto", "shm" or "tcp"
	TCPAddr              string // IP to listen on, e.g. "10.0.0.2"; "" means 127.0.0.1
	// IdleWatch holds the descriptors (page, bell) of the rank's idle-role watch, which
	// the spawner passes as inherited files; both 0 when there is none.
	IdleWatch [2]int
	// HostCPUs is the number of processors the agent may use (its own set); 0 when not
	// given. The runtime decides from its host's ranks' affinities instead.
	HostCPUs int
	// Spawn is the group a spawned rank belongs to; Count is 0 for a rank the job started
	// with.
	Spawn SpawnGroup
}

// ErrNoContract means the GOLAUNCH_* variables are absent: the program was not started by
// golaunch (a world of one rank).
var ErrNoContract = errors.New("pmi: not started by golaunch (no " + EnvRank + ")")

// ReadContract reads the contract from getenv (os.Getenv in a real rank). It returns
// ErrNoContract when EnvRank is unset, and an error naming the variable when one is
// malformed or inconsistent.
func ReadContract(getenv func(string) string) (Contract, error) {
	if getenv(EnvRank) == "" {
		return Contract{}, ErrNoContract
	}
	var c Contract
	var errs []error
	num := func(name string, dst *int, min int) {
		v := getenv(name)
		n, err := strconv.Atoi(v)
		if err != nil || n < min {
			errs = append(errs, fmt.Errorf("%s=%q: want an integer >= %d", name, v, min))
			return
		}
		*dst = n
	}
	num(EnvRank, &c.Rank, 0)
	num(EnvSize, &c.Size, 1)
	num(EnvLocalRank, &c.LocalRank, 0)
	num(EnvLocalSize, &c.LocalSize, 1)
	num(EnvNodeRank, &c.NodeRank, 0)
	num(EnvNumNodes, &c.NumNodes, 1)
	c.JobID, c.Host, c.AgentSock = getenv(EnvJobID), getenv(EnvHost), getenv(EnvAgentSock)
	c.Transport, c.TCPAddr = getenv(EnvTransport), getenv(EnvTCPAddr)
	for name, v := range map[string]string{EnvJobID: c.JobID, EnvHost: c.Host, EnvAgentSock: c.AgentSock} {
		if v == "" {
			errs = append(errs, fmt.Errorf("%s is empty", name))
		}
	}
	if v := getenv(EnvIdleWatch); v != "" {
		w, err := parseIdleWatch(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", EnvIdleWatch, v, err))
		}
		c.IdleWatch = w
	}
	if v := getenv(EnvHostCPUs); v != "" {
		num(EnvHostCPUs, &c.HostCPUs, 1)
	}
	if v := getenv(EnvSpawn); v != "" {
		g, err := parseSpawn(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", EnvSpawn, v, err))
		}
		c.Spawn = g
	}
	switch c.Transport {
	case "":
		c.Transport = "auto"
	case "auto", "shm", "tcp":
	default:
		errs = append(errs, fmt.Errorf("%s=%q: want auto, shm or tcp", EnvTransport, c.Transport))
	}
	if len(errs) == 0 {
		switch {
		case c.Rank >= c.Size:
			errs = append(errs, fmt.Errorf("%s=%d is not below %s=%d", EnvRank, c.Rank, EnvSize, c.Size))
		case c.LocalRank >= c.LocalSize:
			errs = append(errs, fmt.Errorf("%s=%d is not below %s=%d", EnvLocalRank, c.LocalRank, EnvLocalSize, c.LocalSize))
		case c.NodeRank >= c.NumNodes:
			errs = append(errs, fmt.Errorf("%s=%d is not below %s=%d", EnvNodeRank, c.NodeRank, EnvNumNodes, c.NumNodes))
		case c.LocalSize > c.Size:
			errs = append(errs, fmt.Errorf("%s=%d exceeds %s=%d", EnvLocalSize, c.LocalSize, EnvSize, c.Size))
		case c.Spawn.Count > 0 && (c.Rank < c.Spawn.First || c.Rank >= c.Spawn.First+c.Spawn.Count || c.Spawn.First+c.Spawn.Count > c.Size):
			errs = append(errs, fmt.Errorf("%s=%d is not in the spawned group of %s (ranks %d to %d of %d)",
				EnvRank, c.Rank, EnvSpawn, c.Spawn.First, c.Spawn.First+c.Spawn.Count-1, c.Size))
		}
	}
	if len(errs) > 0 {
		return Contract{}, fmt.Errorf("pmi: bad launch environment (set by golaunch; do not set GOLAUNCH_* by hand): %w", errors.Join(errs...))
	}
	return c, nil
}

// Environ returns the contract as NAME=VALUE strings for a child's environment.
func (c Contract) Environ() []string {
	itoa := strconv.Itoa
	env := []string{
		EnvJobID + "=" + c.JobID,
		EnvRank + "=" + itoa(c.Rank),
		EnvSize + "=" + itoa(c.Size),
		EnvLocalRank + "=" + itoa(c.LocalRank),
		EnvLocalSize + "=" + itoa(c.LocalSize),
		EnvNodeRank + "=" + itoa(c.NodeRank),
		EnvNumNodes + "=" + itoa(c.NumNodes),
		EnvHost + "=" + c.Host,
		EnvAgentSock + "=" + c.AgentSock,
		EnvTransport + "=" + c.Transport,
	}
	if c.TCPAddr != "" {
		env = append(env, EnvTCPAddr+"="+c.TCPAddr)
	}
	if c.IdleWatch != [2]int{} {
		env = append(env, EnvIdleWatch+"="+itoa(c.IdleWatch[0])+","+itoa(c.IdleWatch[1]))
	}
	if c.HostCPUs > 0 {
		env = append(env, EnvHostCPUs+"="+itoa(c.HostCPUs))
	}
	if g := c.Spawn; g.Count > 0 {
		env = append(env, EnvSpawn+"="+itoa(g.First)+","+itoa(g.Count)+","+itoa(g.Leader))
	}
	return env
}

// parseSpawn parses "first,count,leader": a group of count >= 1 ranks from first, whose
// spawners' leader comes before it.
func parseSpawn(v string) (SpawnGroup, error) {
	f := strings.Split(v, ",")
	if len(f) != 3 {
		return SpawnGroup{}, errors.New("want first,count,leader")
	}
	var n [3]int
	for i, s := range f {
		x, err := strconv.Atoi(s)
		if err != nil || x < 0 {
			return SpawnGroup{}, fmt.Errorf("%q: want an integer >= 0", s)
		}
		n[i] = x
	}
	g := SpawnGroup{First: n[0], Count: n[1], Leader: n[2]}
	if g.Count < 1 || g.Leader >= g.First {
		return SpawnGroup{}, fmt.Errorf("a group of %d ranks from %d spawned by rank %d: want at least 1 rank, after the leader", g.Count, g.First, g.Leader)
	}
	return g, nil
}

// parseIdleWatch parses "page,bell": two distinct descriptor numbers past stderr.
func parseIdleWatch(v string) ([2]int, error) {
	var w [2]int
	a, b, ok := strings.Cut(v, ",")
	if !ok {
		return w, errors.New("want two descriptors, page,bell")
	}
	for i, s := range []string{a, b} {
		n, err := strconv.Atoi(s)
		if err != nil || n < 3 {
			return [2]int{}, fmt.Errorf("descriptor %q: want an integer >= 3", s)
		}
		w[i] = n
	}
	if w[0] == w[1] {
		return [2]int{}, errors.New("the two descriptors must differ")
	}
	return w, nil
}
