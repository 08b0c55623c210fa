package shm

import (
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// Name is the provider's registry name.
const Name = "shm"

// caps is what the shm provider can do. Atomics work on arena MRs only (CapUserMemAtomic is
// absent): a CPU atomic needs memory both processes map, and RegMR memory is reached through
// process_vm_readv/writev (CapCMA), which copies. ToRTS only changes the QP's state
// (CapLocalRTS): a peer writes into the rings it maps.
const caps = verbs.CapSend | verbs.CapRDMAWrite | verbs.CapRDMARead | verbs.CapAtomic |
	verbs.CapUserMemRDMA | verbs.CapSameHost | verbs.CapZeroCopy | verbs.CapMap |
	verbs.CapCMA | verbs.CapLocalRTS

func init() { verbs.Register(provider{}) }

type provider struct{}

func (provider) Name() string     { return Name }
func (provider) Caps() verbs.Caps { return caps }

// Open opens a device. verbs.Open applies cfg's defaults; a direct caller gets them here too.
func (provider) Open(cfg verbs.Config) (verbs.Device, error) {
	return openDevice(cfg.WithDefaults())
}

// opError builds the *verbs.Error of a failed call.
func opError(op string, qpn uint32, err error, detail string) error {
	return &verbs.Error{Op: op, Provider: Name, QPN: qpn, Detail: detail, Err: err}
}
