package hostgroup

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/gorma-hpc/gorma/runtime"
)

// The size classes of the one-host algorithms, in one table. Each names the command
// that measures it; scripts/device16-select.sh sweeps them on the 16-core machine.
const (
	// SmallMax is the largest vector (bytes) that goes in one step through the small
	// slots: every member copies it into its slot, and every member reads all of them.
	// Longer vectors go in chunks through the big buffers. scripts/device16-select.sh
	// (classes medium and big) measures the sizes on either side.
	SmallMax = 8 << 10
	// ChunkMin and ChunkMax bound a big buffer (bytes): long vectors are pipelined
	// through the two big buffers in chunks of at most ChunkMax.
	// scripts/device16-select.sh (class big) measures the chunk sizes.
	ChunkMin = 64 << 10
	ChunkMax = 1 << 20
	// hostBig bounds the big buffers of one group's members on a host (bytes, two per
	// member) beyond ChunkMin each: a host of many ranks gets smaller chunks, so that
	// its shared memory grows by a fixed share per rank. scripts/device16-select.sh
	// (class big) measures it.
	hostBig = 32 << 20
	// AlltoallMost bounds an Alltoall's bytes per rank through shared memory. A move
	// through scratch costs two copies; single copy (3 ranks or more) and point to
	// point's rendezvous one. That wins for an Alltoall beyond this many bytes per rank.
	// With 2 ranks every move from SmallMax bytes goes point to point. `golaunch -n 3
	// bin/allreducebench --test alltoall` (and -n 2 and 4, beside the C twin under Open
	// MPI) measures it.
	AlltoallMost = 256 << 10
	// AlltoallvMost bounds an Alltoallv's bytes sent per rank through shared memory.
	// Beyond it every block goes point to point: Alltoallv has no single copy. No
	// benchmark program measures Alltoallv; the bound is RootedMost's.
	AlltoallvMost = RootedMost
	// RootedMost bounds the one-host Gather and Scatter through shared memory, in bytes
	// of one block. Beyond it point to point, whose rendezvous copies each block once:
	// root copies (p-1) blocks either way, and shared memory adds a copy of each block
	// into scratch. `golaunch -n 4 bin/allreducebench --test gather,scatter` (and its C
	// twin under Open MPI and MPICH) measures the crossing.
	RootedMost = 256 << 10
	// singleMinDefault is the block size (bytes) from which Bcast and Allgather read
	// the owners' buffers directly (single copy), and Alltoall beyond AlltoallMost.
	// scripts/device16-select.sh (class single) measures the crossing.
	singleMinDefault = 1 << 20
	// flatMaxDefault is the most ranks of a host that make one group; teamMaxDefault
	// the most ranks of a team on a larger host. scripts/device16-select.sh (class team)
	// found one group faster than teams up to 32 ranks. Every rank of a group connects
	// to every other, and each connection holds shared memory: `apps/scalebench`
	// measures the cost of a job at 8 to 256 ranks.
	flatMaxDefault = 32
	teamMaxDefault = 16
	// ntSpreadMin is the fewest members of a group whose blocks that each go to one
	// other member (Alltoall, ReduceScatter, the rooted moves) take non-temporal stores
	// under nt=auto. In smaller groups plain stores win: the reader takes the lines
	// from this core's cache. scripts/device16-select.sh (class a2a, docs/select16.json)
	// and `golaunch -n 4 bin/allreducebench --test alltoall,gather,scatter` with
	// GORMA_SHM_TUNE=nt=off and without it measure it.
	ntSpreadMin = 8
	// scatterSingleMin is the block size from which a one-host Scatter goes by single
	// copy: its members read their blocks at once, where through scratch root copies
	// every block in alone. A Gather's root would read every block alone either way, so
	// Gather keeps scratch up to RootedMost. `golaunch -n 3 bin/allreducebench --test
	// scatter,gather` (and -n 4, beside the C twin under Open MPI) measures it.
	scatterSingleMin = 128 << 10
)

// MediumFor returns the vector size (bytes) from which a one-host Allreduce of p
// members reduces by blocks. One step costs each member a read of p vectors; by blocks,
// two steps and about two vectors. scripts/device16-select.sh measures the crossing.
func MediumFor(p int) int {
	if t := tune().medium; t > 0 {
		return t
	}
	switch {
	case p < 4:
		return SmallMax + 1 // never
	case p == 4:
		return 4 << 10
	case p <= 16:
		return 2 << 10
	case p <= 32:
		return 4 << 10
	}
	return 8 << 10
}

// ChunkFor returns the big buffer size that suits vectors of bytes bytes on a host
// of local ranks.
func ChunkFor(bytes, local int) int {
	t := tune()
	c := min(ChunkMin, t.chunkMax)
	for c < bytes && c < t.chunkMax && (t.chunkSet || 2*(2*c)*2*local <= hostBig) {
		c *= 2
	}
	return c
}

// FlatMax is the most ranks of a host that make one group; TeamMax the most of a team
// on a larger host (teams.go). GORMA_SHM_TEAM (at least 4) sets both.
func FlatMax() int {
	if v, ok := teamEnv(); ok {
		return v
	}
	return flatMaxDefault
}

// TeamMax is the most ranks of a team (FlatMax).
func TeamMax() int {
	if v, ok := teamEnv(); ok {
		return v
	}
	return teamMaxDefault
}

// teamEnv returns GORMA_SHM_TEAM's value, if it is a count of at least 4.
func teamEnv() (int, bool) {
	if v, err := strconv.Atoi(os.Getenv("GORMA_SHM_TEAM")); err == nil && v >= 4 {
		return v, true
	}
	return 0, false
}

// SingleMin returns the block size from which Bcast and Allgather move by single copy,
// or 0 when the tuning turns it off.
func SingleMin() int { return tune().single }

// ScatterSingleMin is the block size (bytes) from which a one-host Scatter's members read
// their blocks from root's buffer directly (single copy), with no bound above
// (RootedMost); math.MaxInt under single=off.
func ScatterSingleMin() int {
	if tune().single == 0 {
		return math.MaxInt
	}
	return scatterSingleMin
}

// EnvTune names the environment variable that overrides the size classes of the
// one-host (shared-memory) algorithms, for measuring them: a comma-separated list of
// key=value. scripts/device16-select.sh sweeps it to make the selection table.
//
//   - medium=BYTES: Allreduce and Reduce reduce by blocks (reduce-scatter, then
//     allgather) from this vector size on; shorter vectors take one step in which every
//     member reduces every slot. 0 or absent: MediumFor's rule. Above SmallMax
//     every vector goes by blocks.
//   - chunk=BYTES: the most bytes of one big buffer (a power of two from 4 KiB to
//     16 MiB), whatever the host's budget (hostBig); absent: ChunkFor's rule.
//   - nt=on|off|auto: whether the copies into big buffers use non-temporal stores
//     (copyShared): on, every one; off, none; auto (the default), on amd64 those of
//     blocks that each go to one other member (Alltoall, ReduceScatter, the rooted
//     moves; ntAuto), in groups of ntSpreadMin members or more. Elsewhere the peers read
//     the lines at once, from this core's cache.
//   - single=BYTES|off: Bcast and Allgather read the owners' buffers directly (single
//     copy, collectives/single_shm.go) from blocks of this size on, Alltoall beyond
//     AlltoallMost bytes per rank and Scatter from scatterSingleMin bytes per block;
//     off, never. Absent: singleMinDefault.
const EnvTune = "GORMA_SHM_TUNE"

// tuning is EnvTune's value, read once per process.
type tuning struct {
	medium   int  // bytes from which Allreduce reduces by blocks; 0: MediumFor
	chunkMax int  // most bytes of a big buffer
	chunkSet bool // chunkMax was given: the host's budget does not bound it
	nt       bool // non-temporal stores into big buffers
	ntSpread bool // non-temporal stores into the big buffers of Alltoall and ReduceScatter
	single   int  // block bytes from which Bcast and Allgather move by single copy; 0: never
}

// spreadNT reports whether a group of members copies the blocks that each go to one
// other member with non-temporal stores: always under nt=on, from ntSpreadMin members
// under nt=auto.
func (t tuning) spreadNT(members int) bool {
	return t.nt || t.ntSpread && members >= ntSpreadMin
}

// tuned returns the process's tuning, or the error of a bad EnvTune, which every
// one-host collective call returns.
var tuned = sync.OnceValues(func() (tuning, error) {
	return parseTune(os.Getenv(EnvTune))
})

// tune is the tuning of the one-host algorithms; with a bad EnvTune the
// defaults (the calls fail in prepare before they read it).
func tune() tuning {
	t, _ := tuned()
	return t
}

// parseTune parses EnvTune's value.
func parseTune(v string) (tuning, error) {
	t := tuning{chunkMax: ChunkMax, ntSpread: ntAuto, single: singleMinDefault}
	bad := func(kv, why string) (tuning, error) {
		return tuning{chunkMax: ChunkMax, ntSpread: ntAuto, single: singleMinDefault},
			fmt.Errorf("%w: %s: %q %s (want medium=BYTES, chunk=BYTES, nt=on|off|auto, single=BYTES|off)", runtime.ErrConfig, EnvTune, kv, why)
	}
	for kv := range strings.SplitSeq(v, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, val, ok := strings.Cut(kv, "=")
		if !ok {
			return bad(kv, "has no '='")
		}
		switch k {
		case "medium", "chunk":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				return bad(kv, "is not a byte count")
			}
			if k == "medium" {
				t.medium = n
				continue
			}
			if n < 4<<10 || n > 16<<20 || n&(n-1) != 0 {
				return bad(kv, "is not a power of two from 4096 to 16777216")
			}
			t.chunkMax, t.chunkSet = n, true
		case "single":
			if val == "off" {
				t.single = 0
				continue
			}
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 {
				return bad(kv, "is not a positive byte count or off")
			}
			t.single = n
		case "nt":
			switch val {
			case "on":
				t.nt, t.ntSpread = true, true
			case "off":
				t.nt, t.ntSpread = false, false
			case "auto":
				t.nt, t.ntSpread = false, ntAuto
			default:
				return bad(kv, "is not on, off or auto")
			}
		default:
			return bad(kv, "has an unknown key")
		}
	}
	return t, nil
}
