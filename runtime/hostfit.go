package runtime

import (
	"fmt"
	goruntime "runtime"
	"strconv"
)

// GORMA_PROCS (EnvProcs) sets how many processors (GOMAXPROCS) a rank's Go scheduler
// uses: auto (the default, fitHost decides), go (Go's own choice: every processor the
// rank may run on, or the GOMAXPROCS variable), or a count from 1 up.

// fullHostProcs is the GOMAXPROCS of a rank whose host's ranks fill its processors,
// under GORMA_PROCS=auto. A waiting rank runs its wait in the calling goroutine (the
// poller role, or the shared-memory collectives' flag spin). So one P waits, and the
// second lets the tcp provider's goroutines and timers run beside it, as a bound rank's
// (launcher's boundProcs). Go's default gives every rank a P per processor of the host:
// each goroutine that becomes ready then wakes an idle P's thread, which spins looking
// for work on a processor that a peer rank needs. `bin/threadwatch --comm allreducebench
// -- golaunch -n 16 bin/allreducebench` counts the runnable threads per rank, and the
// 16-core job of scripts/device16.sh compares GORMA_PROCS=auto, 1 and go.
const fullHostProcs = 2

// procsPolicy is GORMA_PROCS parsed: procsAuto, procsGo, or a count.
type procsPolicy int

const (
	procsAuto procsPolicy = 0
	procsGo   procsPolicy = -1
)

// parseProcs parses GORMA_PROCS ("" is auto).
func parseProcs(v string) (procsPolicy, error) {
	switch v {
	case "", "auto":
		return procsAuto, nil
	case "go":
		return procsGo, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 1<<16 {
		return procsAuto, fmt.Errorf("%w: %s=%q: want auto, go or a processor count such as 2", ErrConfig, EnvProcs, v)
	}
	return procsPolicy(n), nil
}

// hostProcs returns the GOMAXPROCS a rank should use, or 0 to leave Go's: policy is
// GORMA_PROCS, envSet whether the GOMAXPROCS variable is set, cur Go's current value,
// local the ranks on this host and ncpu the processors they share. A count in
// GORMA_PROCS wins; auto with GOMAXPROCS set leaves it; auto lowers cur to
// fullHostProcs when the host's ranks fill its processors (local >= ncpu), and leaves
// it otherwise.
func hostProcs(policy procsPolicy, envSet bool, cur, local, ncpu int) int {
	switch {
	case policy > 0:
		return int(policy)
	case policy == procsGo, envSet:
		return 0
	case local >= ncpu && cur > fullHostProcs:
		return fullHostProcs
	}
	return 0
}

// fitHost applies GORMA_PROCS once the rank knows its host's ranks and processors
// (Init, before the engine's goroutines start).
func (j join) fitHost() {
	e := j.e
	n := hostProcs(e.cfg.procs, e.cfg.maxProcsSet, goruntime.GOMAXPROCS(0), e.localSize, e.ncpu)
	if n > 0 {
		goruntime.GOMAXPROCS(n)
	}
}
