package runtime

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gorma-hpc/gorma/transport/verbs"
	"github.com/gorma-hpc/gorma/transport/verbs/arena"

	// The providers register themselves with the verbs registry.
	_ "github.com/gorma-hpc/gorma/transport/verbs/shm"
	"github.com/gorma-hpc/gorma/transport/verbs/tcp"
)

// Queue sizes per peer. The eager slots of a peer connection are registered arena memory:
// txSlots send buffers and rxSlots pre-posted receive buffers, each hdrLen plus the eager
// limit long. Every Send, RTS, FIN and RDMA read holds one send queue entry until its
// completion, or for an unsignaled message that of a later signaled one, is polled.
const (
	maxSlots     = 32
	minSlots     = 8
	slotBudget   = 512 // receive slots per rank, spread over its peers
	readChunk    = 64 << 20
	regCacheSize = 64
	// regCacheIdle bounds the bytes of idle cached registrations of user buffers, which
	// keep those buffers alive: a program sending from a fresh large buffer each time
	// would otherwise hold regCacheSize of them (1 GiB at 16 MiB).
	regCacheIdle = 256 << 20
)

func slotsPerPeer(peers int) int {
	return min(maxSlots, max(minSlots, slotBudget/max(peers, 1)))
}

// device is one opened provider with its protection domain, its completion queue (shared
// by all its peers' QPs) and a registration cache for rendezvous sends.
type device struct {
	name string
	caps verbs.Caps // what the provider can do: the runtime's choices read these
	desc byte       // the code of its keys in region descriptions (descCodes)
	dev  verbs.Device
	pd   verbs.PD
	cq   verbs.CQ
	regs *arena.RegCache
	// fastbox is true when the provider offers what fast boxes need (fastbox.go): its CQ
	// takes a wait check, and its QPs map peer memory and ring the peer's doorbell.
	fastbox bool
	closed  bool // closed by this rank (Finalize); guarded by engine.mu
	broken  bool // its CQ failed: no longer polled; guarded by engine.mu

	// atomicHooks maps the keys of regions that set Region.OnRemoteAtomic to their
	// function: a copy-on-write map (hooksMu serializes writers), read by the provider's
	// goroutines through remoteAtomic without a lock.
	atomicHooks atomic.Pointer[map[uint64]func()]
	hooksMu     sync.Mutex
}

// remoteAtomic is the device's Config.OnRemoteAtomic: the region's function, if it has one.
func (d *device) remoteAtomic(key, _ uint64) {
	if m := d.atomicHooks.Load(); m != nil {
		if fn := (*m)[key]; fn != nil {
			fn()
		}
	}
}

// setAtomicHook sets (fn non-nil) or removes the function of key.
func (d *device) setAtomicHook(key uint64, fn func()) {
	d.hooksMu.Lock()
	defer d.hooksMu.Unlock()
	cur := d.atomicHooks.Load()
	if fn == nil && (cur == nil || (*cur)[key] == nil) {
		return // nothing to remove: most regions never set one
	}
	next := make(map[uint64]func())
	if cur != nil {
		maps.Copy(next, *cur)
	}
	if fn == nil {
		delete(next, key)
	} else {
		next[key] = fn
	}
	d.atomicHooks.Store(&next)
}

// descCodes name the providers' keys in region descriptions (rma.go). Every provider the
// runtime opens has one, and a code never changes meaning: ranks of one job exchange them.
var descCodes = map[string]byte{"shm": 1, "tcp": 2}

// providerCaps returns the caps of the registered provider name, or 0.
func providerCaps(name string) verbs.Caps {
	if p, ok := verbs.Lookup(name); ok {
		return p.Caps()
	}
	return 0
}

// deviceOrder returns the providers that serve peers (count), in the order the runtime
// opens them: those that map memory first, since the first device's arena holds the
// regions (rma.go), then by name.
func deviceOrder(count map[string]int) []string {
	var names []string
	for _, n := range verbs.Providers() {
		if count[n] > 0 {
			names = append(names, n)
		}
	}
	slices.SortStableFunc(names, func(a, b string) int {
		ma, mb := providerCaps(a).Has(verbs.CapMap), providerCaps(b).Has(verbs.CapMap)
		switch {
		case ma && !mb:
			return -1
		case mb && !ma:
			return 1
		}
		return 0
	})
	return names
}

// hostOnly reports whether a provider of caps c connects only processes of one host.
func hostOnly(c verbs.Caps) bool { return c.Has(verbs.CapSameHost) && !c.Has(verbs.CapCrossHost) }

// eagerLimits returns the eager limits of a connection on d: this rank's and the peer's
// (card c). A provider for one host uses the shm limits, any other the tcp ones.
func (d *device) eagerLimits(cfg *config, c *card) (mine, theirs int) {
	if hostOnly(d.caps) {
		return cfg.eagerSHM, int(c.eagerSHM)
	}
	return cfg.eagerTCP, int(c.eagerTCP)
}

// openDevice opens provider name for npeers connections. A tcp device authenticates them
// with secret.
func openDevice(name string, cfg *config, wait verbs.WaitMode, rank, npeers, slots int, secret []byte) (*device, error) {
	d := &device{name: name, desc: descCodes[name]}
	if d.desc == 0 {
		return nil, fmt.Errorf("%w: provider %s has no region description code (runtime/device.go descCodes)", ErrTransport, name)
	}
	vc := verbs.Config{Wait: wait, Spin: cfg.spin, Name: fmt.Sprintf("rank %d", rank), OnRemoteAtomic: d.remoteAtomic}
	if name == "tcp" {
		host := cfg.tcpAddr
		if host == "" {
			host = "127.0.0.1"
		}
		opts := tcp.Options{Secret: secret, Addr: net.JoinHostPort(host, "0"), Congestion: cfg.tcpCC}
		opts.IdleWatch, cfg.idleWatch = cfg.idleWatch, nil
		vc.Provider = opts
	}
	dev, err := verbs.Open(name, vc)
	if err != nil {
		if name == "tcp" && cfg.tcpCC != "" && errors.Is(err, verbs.ErrUnsupported) {
			return nil, fmt.Errorf("%w: %s=%q: open %s device: %w", ErrConfig, EnvTCPCongestion, cfg.tcpCC, name, err)
		}
		return nil, fmt.Errorf("%w: open %s device: %w", ErrTransport, name, err)
	}
	d.dev, d.caps = dev, dev.Caps()
	if d.caps.Has(verbs.CapCrossHost) {
		cfg.crossHost()
	}
	if d.pd, err = dev.AllocPD(); err == nil {
		d.cq, err = dev.CreateCQ(max(npeers*(2*slots+slots), 64))
	}
	if err != nil {
		dev.Close()
		return nil, fmt.Errorf("%w: %s device: %w", ErrTransport, name, err)
	}
	_, d.fastbox = d.cq.(waitChecker)
	pd := d.pd
	d.regs = arena.NewRegCache(func(buf []byte, a verbs.Access) (verbs.MR, error) { return pd.RegMR(buf, a) }, regCacheSize)
	d.regs.SetIdleLimit(regCacheIdle)
	return d, nil
}

func (d *device) close() {
	if d.closed {
		return
	}
	d.closed = true
	d.regs.Close()
	d.dev.Close()
}
