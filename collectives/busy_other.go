//go:build !amd64 || race

package collectives

import "sync/atomic"

// releaseBusy ends a call's hold on its state (open takes it by CAS).
func releaseBusy(b *uint32) { atomic.StoreUint32(b, 0) }
