package collectives

import (
	"fmt"

	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime"
)

// EnvAllreduce names the environment variable that forces an Allreduce algorithm:
// auto (the default: selectAllreduce decides), recdbl, rabenseifner, ring, shm, hier,
// direct or lanes.
const EnvAllreduce = "GORMA_ALLREDUCE"

// EnvSHMTune names the environment variable that overrides the size classes of the
// one-host (shared-memory) algorithms, for measuring them: a comma-separated list of
// key=value (medium, chunk, nt, single). scripts/device16-select.sh sweeps it. A bad
// value makes every one-host collective fail with an error wrapping runtime.ErrConfig.
const EnvSHMTune = hostgroup.EnvTune

// algo identifies an Allreduce algorithm.
type algo uint8

const (
	algoAuto algo = iota
	algoRecdbl
	algoRabenseifner
	algoRing
	algoSHM
	algoHier
	algoDirect
	algoLanes
)

var algoNames = [...]string{"auto", "recdbl", "rabenseifner", "ring", "shm", "hier", "direct", "lanes"}

func (a algo) String() string {
	if int(a) < len(algoNames) {
		return algoNames[a]
	}
	return fmt.Sprintf("algo(%d)", a)
}

// parseAllreduceEnv parses GORMA_ALLREDUCE's value ("" is auto).
func parseAllreduceEnv(v string) (algo, error) {
	switch v {
	case "", "auto":
		return algoAuto, nil
	case "recdbl":
		return algoRecdbl, nil
	case "rabenseifner":
		return algoRabenseifner, nil
	case "ring":
		return algoRing, nil
	case "shm":
		return algoSHM, nil
	case "hier":
		return algoHier, nil
	case "direct":
		return algoDirect, nil
	case "lanes":
		return algoLanes, nil
	}
	return algoAuto, fmt.Errorf("%w: %s=%q: want auto, recdbl, rabenseifner, ring, shm, hier, direct or lanes", runtime.ErrConfig, EnvAllreduce, v)
}

// Thresholds of the selection, in bytes of one rank's vector.
const (
	// allreduceShortMsg: up to this size Allreduce uses recursive doubling (latency
	// bound: log2(p) rounds of the whole vector).
	allreduceShortMsg = 4 << 10
	// bcastLongMsg: from this size Bcast scatters then gathers (bandwidth bound).
	bcastLongMsg = 64 << 10
	// allgatherLongMsg: from this total size (p blocks) Allgather uses the ring.
	allgatherLongMsg = 256 << 10
	// reduceScatterShortMsg: up to this total size (p blocks) ReduceScatter halves
	// recursively (power-of-two rank counts).
	reduceScatterShortMsg = 64 << 10
	// allreduceHierLongMsg: from this size a job spanning hosts whose ranks are
	// consecutive on each host, on a power of two, uses Rabenseifner instead of hier. Its
	// first rounds pair ranks of one host (through shm), every rank reduces and sends its
	// share, and no on-host broadcast follows. With a commutative operator, the same
	// number of ranks on every host and at most allreduceDirectMaxRanks hosts, lanes
	// instead, which saves Rabenseifner's copy of the input. scripts/netns-allreduce.sh
	// with PPH=2 (2 ranks on each of 4 network-namespace hosts) and ALGO=hier,
	// rabenseifner or lanes measures each.
	allreduceHierLongMsg = 1 << 20
	// allreduceDirectMaxRanks: up to this many ranks, each on a host of its own, a long
	// Allreduce with a commutative operator uses the direct algorithm (2 rounds, p-1
	// messages in flight each way) instead of Rabenseifner or ring
	// (scripts/netns-allreduce.sh with PPH=1 and ALGO=direct, rabenseifner or ring
	// measures each on 4 hosts). Beyond 4 hosts its p-1 concurrent flows per link are
	// unmeasured. It bounds the hosts of lanes, whose step across hosts is direct,
	// likewise.
	allreduceDirectMaxRanks = 4
)

// selectAllreduce picks the Allreduce algorithm for a vector of bytes bytes over p ranks
// placed as loc says, honouring force (GORMA_ALLREDUCE). It is the only place that
// decides. With every rank on this host and mapped: shm. With several hosts of which one
// at least holds more than one rank: hier, with two exceptions. The first is an operator
// that is not commutative while some host's ranks are not consecutive (the host partials
// could not be combined in rank order). The second is a vector of allreduceHierLongMsg
// bytes or more, with p a power of two and each host's ranks consecutive. Then the
// choice is lanes when the operator is commutative, every host has as many ranks and
// there are at most allreduceDirectMaxRanks hosts, and Rabenseifner otherwise. Otherwise
// the point-to-point algorithms by size: recursive doubling for short vectors; for long
// ones direct when every rank has a host of its own and there are at most
// allreduceDirectMaxRanks, else Rabenseifner or ring. Ring, direct and lanes do not
// combine in rank order, so a non-commutative operator never gets them (Rabenseifner
// instead, which keeps rank order); a forced hier that cannot keep rank order gives way
// the same way. A forced shm or lanes is kept even where its placement does not allow
// it: the call then fails with an error saying why.
func selectAllreduce(force algo, bytes, count, p int, commutative bool, loc locality) algo {
	hierOK := commutative || loc.contiguous
	a := force
	if a == algoAuto {
		pof2 := p&(p-1) == 0
		switch {
		case loc.oneHost && p > 1:
			a = algoSHM
		case loc.hosts > 1 && loc.shared && hierOK && !(pof2 && loc.contiguous && bytes >= allreduceHierLongMsg):
			a = algoHier
		case loc.hosts > 1 && loc.shared && loc.even && loc.hosts <= allreduceDirectMaxRanks && commutative:
			a = algoLanes // long, on a power of two, each host's ranks consecutive
		case bytes <= allreduceShortMsg || count < p:
			a = algoRecdbl
		case loc.hosts == p && p <= allreduceDirectMaxRanks && commutative:
			a = algoDirect
		case pof2 || !commutative:
			a = algoRabenseifner
		default:
			a = algoRing
		}
	}
	if ((a == algoRing || a == algoDirect || a == algoLanes) && !commutative) || (a == algoHier && !hierOK) {
		a = algoRabenseifner
	}
	return a
}
