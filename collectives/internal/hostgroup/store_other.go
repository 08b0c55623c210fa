//go:build !amd64

package hostgroup

import (
	"sync/atomic"

	"github.com/gorma-hpc/gorma/runtime"
)

// storeRelease stores v at *p with (at least) release ordering: no earlier store is seen
// after it.
func storeRelease(p *uint64, v uint64) { atomic.StoreUint64(p, v) }

// ntAuto says whether the big buffers of Alltoall and ReduceScatter take
// non-temporal stores by default (EnvTune's nt=auto).
const ntAuto = false

// copyShared copies src into dst, scratch that peers will read, and returns the number of
// elements copied (a plain copy here; non-temporal stores on amd64).
func copyShared[T runtime.Elem](dst, src []T) int { return copy(dst, src) }
