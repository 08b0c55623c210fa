package verbs

import "strings"

// Caps are capability flags advertised by a provider or device.
type Caps uint32

// Capability flags.
const (
	CapSend          Caps = 1 << iota // Send and receive
	CapRDMAWrite                      // RDMAWrite and RDMAWriteWithImm
	CapRDMARead                       // RDMARead
	CapAtomic                         // AtomicFetchAdd and AtomicCmpSwap on arena MRs
	CapUserMemRDMA                    // RegMR memory is a valid RDMA read/write target
	CapUserMemAtomic                  // RegMR memory is a valid atomic target
	CapSameHost                       // connects processes on one host
	CapCrossHost                      // connects processes on different hosts
	CapZeroCopy                       // RDMA reads and writes are single copies by the initiator; the target CPU does nothing
	CapAuth                           // connections are authenticated with a per-job secret (a provider option)
	CapMap                            // QPs implement Mapper: a peer's arena regions can be mapped and accessed directly
	CapCMA                            // peers share this host, and RegMR memory is reached with cross-memory calls (process_vm_readv)
	CapLocalRTS                       // QP.ToRTS completes at once, without waiting for the peer's QP
	CapReaders                        // completions come from goroutines the provider runs, one reader per connection
)

var capNames = []string{"send", "rdma-write", "rdma-read", "atomic", "user-mem-rdma",
	"user-mem-atomic", "same-host", "cross-host", "zero-copy", "auth", "map", "cma",
	"local-rts", "readers"}

// Has reports whether every flag of want is set.
func (c Caps) Has(want Caps) bool { return c&want == want }

// String lists the set flags, separated by '|'.
func (c Caps) String() string {
	var b strings.Builder
	for i, n := range capNames {
		if c&(1<<i) != 0 {
			if b.Len() > 0 {
				b.WriteByte('|')
			}
			b.WriteString(n)
		}
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}

// Access are the rights of a memory region.
type Access uint32

// Access flags.
const (
	LocalWrite   Access = 1 << iota // the local side may write (receive, RDMA read sink, atomic result)
	RemoteRead                      // peers may RDMARead
	RemoteWrite                     // peers may RDMAWrite
	RemoteAtomic                    // peers may run atomics
)

// AccessAll is every right.
const AccessAll = LocalWrite | RemoteRead | RemoteWrite | RemoteAtomic

// Has reports whether every right of want is granted.
func (a Access) Has(want Access) bool { return a&want == want }

// String lists the rights, separated by '|'.
func (a Access) String() string {
	names := []string{"local-write", "remote-read", "remote-write", "remote-atomic"}
	var b strings.Builder
	for i, n := range names {
		if a&(1<<i) != 0 {
			if b.Len() > 0 {
				b.WriteByte('|')
			}
			b.WriteString(n)
		}
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}
