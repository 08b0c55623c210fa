package collectives

import (
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
)

// EnvAllreduce names the environment variable that forces an Allreduce algorithm:
// auto (the default: selectAllreduce decides), recdbl, rabenseifner or ring.
const EnvAllreduce = "GORMA_ALLREDUCE"

// algo identifies an Allreduce algorithm.
type algo uint8

const (
	algoAuto algo = iota
	algoRecdbl
	algoRabenseifner
	algoRing
	// Next: algoShm and algoHier, for allreduce_shm.go and allreduce_hier.go.
)

var algoNames = [...]string{"auto", "recdbl", "rabenseifner", "ring"}

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
	}
	return algoAuto, fmt.Errorf("%w: %s=%q: want auto, recdbl, rabenseifner or ring", runtime.ErrConfig, EnvAllreduce, v)
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
)

// selectAllreduce picks the Allreduce algorithm for a vector of bytes bytes over p ranks,
// honouring force (GORMA_ALLREDUCE). It is the only place that decides. Ring reduces in
// ring order, so a non-commutative operator never gets it (Rabenseifner instead, which
// keeps rank order).
func selectAllreduce(force algo, bytes, count, p int, commutative bool) algo {
	a := force
	if a == algoAuto {
		pof2 := p&(p-1) == 0
		switch {
		case bytes <= allreduceShortMsg || count < p:
			a = algoRecdbl
		case pof2 || !commutative:
			a = algoRabenseifner
		default:
			a = algoRing
		}
	}
	if a == algoRing && !commutative {
		a = algoRabenseifner
	}
	return a
}
