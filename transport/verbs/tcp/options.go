package tcp

import (
	"github.com/gorma-hpc/gorma/transport/verbs"
	"github.com/gorma-hpc/gorma/transport/verbs/idlewatch"
)

// Options are the tcp provider's own settings. Pass them as verbs.Config.Provider, as a
// tcp.Options or a non-nil *tcp.Options; Open fails with a *verbs.Error wrapping
// verbs.ErrInvalid for a value of any other type. nil means the zero Options, which
// lack the secret that Open requires.
type Options struct {
	// Secret is the per-job secret that authenticates every connection; at least
	// MinSecretLen random bytes shared by every device of the job (the launcher
	// distributes one).
	Secret []byte
	// DeferSecret opens the device without a secret (Secret must then be empty): the
	// device listens and its endpoints can be published at once, and the secret comes
	// later, once, through the device's SetSecret method (see SecretSetter). Until then
	// ToRTR on the dialing side fails with verbs.ErrInvalid and an inbound connection
	// waits for the secret within the handshake deadline before its handshake starts.
	DeferSecret bool
	// Addr is the address the device listens on. Default DefaultAddr.
	Addr string
	// Congestion is the TCP congestion control of the device's connections
	// (TCP_CONGESTION): "" for DefaultCongestion (the kernel's default where the kernel
	// refuses it), CongestionSystem for the kernel's default, or the name of an algorithm
	// the kernel lets this process use (net.ipv4.tcp_allowed_congestion_control; root may
	// use any available one), which Open checks. One the kernel refuses fails Open with
	// verbs.ErrUnsupported.
	Congestion string
	// IdleWatch, if set, hands the device's idle reading roles to a watcher in another
	// process (idlewatch.Watcher, the launcher's). A CQ waiter then leaves Wait without a
	// system call, and the watcher wakes the connection's reader when a role stayed idle
	// through one of its ticks. The device takes ownership of both files, also when Open
	// fails. nil: the device wakes the reader itself as each wait ends.
	IdleWatch *idlewatch.Files
}

const (
	// DefaultAddr is the address a device listens on unless Options.Addr says otherwise.
	DefaultAddr = "127.0.0.1:0"
	// DefaultCongestion is the TCP congestion control a device sets on its connections
	// unless Options.Congestion says otherwise. A collective keeps several flows per link
	// that start and stop together. With BBR (the kernel default on some systems) the
	// flows left at a round's end are slow to claim the bandwidth the others freed. A
	// large Allreduce across hosts stays further from its bandwidth bound than with CUBIC
	// (scripts/netns-allreduce.sh measures it against the bound).
	DefaultCongestion = "cubic"
	// CongestionSystem as Options.Congestion leaves the kernel's default
	// (net.ipv4.tcp_congestion_control) on the device's connections.
	CongestionSystem = "system"
)

// optionsOf returns cfg.Provider as Options with defaults filled in.
func optionsOf(cfg verbs.Config) (Options, error) {
	var o Options
	switch p := cfg.Provider.(type) {
	case nil:
	case Options:
		o = p
	case *Options:
		if p == nil {
			return o, newErr("open", 0, verbs.ErrInvalid, "Config.Provider is a nil *tcp.Options; pass tcp.Options")
		}
		o = *p
	default:
		return o, newErr("open", 0, verbs.ErrInvalid,
			"Config.Provider is a %T; the tcp provider takes a tcp.Options (or *tcp.Options)", p)
	}
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	return o, nil
}
