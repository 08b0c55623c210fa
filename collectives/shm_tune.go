package collectives

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/gorma-hpc/gorma/runtime"
)

// EnvSHMTune names the environment variable that overrides the size classes of the
// one-host (shared-memory) algorithms, for measuring them: a comma-separated list of
// key=value. scripts/device16-select.sh sweeps it to make the selection table.
//
//   - medium=BYTES: Allreduce and Reduce reduce by blocks (reduce-scatter, then
//     allgather) from this vector size on; shorter vectors take one step in which every
//     member reduces every slot. 0 or absent: shmMediumFor's rule. Above shmSmallMax
//     every vector goes by blocks.
//   - chunk=BYTES: the most bytes of one big buffer (a power of two from 4 KiB to
//     16 MiB), whatever the host's budget (shmHostBig); absent: shmChunkFor's rule.
//   - nt=on|off|auto: whether the copies into big buffers use non-temporal stores
//     (copyShared): on, every one; off, none; auto (the default), on amd64 those of
//     Alltoall and ReduceScatter only, whose blocks each go to one other member
//     (shmNTAuto). Elsewhere the peers read the lines at once, from this core's cache.
//   - single=BYTES|off: Bcast and Allgather read the owners' buffers directly (single
//     copy, single_shm.go) from blocks of this size on, and Alltoall beyond
//     alltoallSHMMost bytes per rank; off, never. Absent: shmSingleMin.
const EnvSHMTune = "GORMA_SHM_TUNE"

// shmTuning is EnvSHMTune's value, read once per process.
type shmTuning struct {
	medium   int  // bytes from which Allreduce reduces by blocks; 0: shmMediumFor
	chunkMax int  // most bytes of a big buffer
	chunkSet bool // chunkMax was given: the host's budget does not bound it
	nt       bool // non-temporal stores into big buffers
	ntSpread bool // non-temporal stores into the big buffers of Alltoall and ReduceScatter
	single   int  // block bytes from which Bcast and Allgather move by single copy; 0: never
}

// shmTuned returns the process's tuning, or the error of a bad EnvSHMTune, which every
// one-host collective call returns.
var shmTuned = sync.OnceValues(func() (shmTuning, error) {
	return parseSHMTune(os.Getenv(EnvSHMTune))
})

// shmTune is the tuning of the one-host algorithms; with a bad EnvSHMTune the
// defaults (the calls fail in prepare before they read it).
func shmTune() shmTuning {
	t, _ := shmTuned()
	return t
}

// parseSHMTune parses EnvSHMTune's value.
func parseSHMTune(v string) (shmTuning, error) {
	t := shmTuning{chunkMax: shmChunkMax, ntSpread: shmNTAuto, single: shmSingleMin}
	bad := func(kv, why string) (shmTuning, error) {
		return shmTuning{chunkMax: shmChunkMax, ntSpread: shmNTAuto, single: shmSingleMin},
			fmt.Errorf("%w: %s: %q %s (want medium=BYTES, chunk=BYTES, nt=on|off|auto, single=BYTES|off)", runtime.ErrConfig, EnvSHMTune, kv, why)
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
				t.nt, t.ntSpread = false, shmNTAuto
			default:
				return bad(kv, "is not on, off or auto")
			}
		default:
			return bad(kv, "has an unknown key")
		}
	}
	return t, nil
}

// shmMediumFor returns the vector size (bytes) from which a one-host Allreduce of p
// members reduces by blocks. One step costs each member a read of p vectors; by blocks,
// two steps and about two vectors. scripts/device16-select.sh measures the crossing.
func shmMediumFor(p int) int {
	if t := shmTune().medium; t > 0 {
		return t
	}
	switch {
	case p < 4:
		return shmSmallMax + 1 // never
	case p == 4:
		return 4 << 10
	case p <= 16:
		return 2 << 10
	case p <= 32:
		return 4 << 10
	}
	return 8 << 10
}
