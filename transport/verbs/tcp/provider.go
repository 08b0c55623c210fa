package tcp

import (
	"fmt"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

const providerName = "tcp"

// MinSecretLen is the shortest Options.Secret the provider accepts.
const MinSecretLen = 16

// providerCaps is what the tcp provider offers. It is not CapZeroCopy: the target's
// progress goroutine copies every RDMA payload between the socket and memory. Completions
// come from the connections' readers (CapReaders). ToRTS waits until the connection to
// the peer's QP is up, so CapLocalRTS is absent.
const providerCaps = verbs.CapSend | verbs.CapRDMAWrite | verbs.CapRDMARead | verbs.CapAtomic |
	verbs.CapUserMemRDMA | verbs.CapUserMemAtomic | verbs.CapSameHost | verbs.CapCrossHost |
	verbs.CapAuth | verbs.CapReaders

// Limits of one queue pair's queues and of the number of concurrent inbound handshakes.
const (
	maxQueueDepth = 1 << 16
	maxInbound    = 256
)

type provider struct{}

func init() { verbs.Register(provider{}) }

func (provider) Name() string     { return providerName }
func (provider) Caps() verbs.Caps { return providerCaps }

// Open opens a device: an arena, a listener on Options.Addr and its accept loop.
func (provider) Open(cfg verbs.Config) (verbs.Device, error) { return openDevice(cfg.WithDefaults()) }

// newErr builds the provider's call errors.
func newErr(op string, qpn uint32, sentinel error, format string, args ...any) *verbs.Error {
	return &verbs.Error{Op: op, Provider: providerName, QPN: qpn, Err: sentinel,
		Detail: fmt.Sprintf(format, args...)}
}

// wrapErr wraps an error of a lower layer (the arena, the network) that already wraps a
// sentinel, keeping it for errors.Is.
func wrapErr(op string, qpn uint32, err error, detail string) *verbs.Error {
	return &verbs.Error{Op: op, Provider: providerName, QPN: qpn, Err: err, Detail: detail}
}

// Rejections reports how many inbound connections the tcp device d closed during the
// handshake (garbage, silence past the deadline, a wrong secret, a refused QP), and false
// if d is not a tcp device.
func Rejections(d verbs.Device) (int64, bool) {
	td, ok := d.(*device)
	if !ok {
		return 0, false
	}
	return td.rejected.Load(), true
}
