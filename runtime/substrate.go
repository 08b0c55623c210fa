package runtime

import "github.com/gorma-hpc/gorma/runtime/internal/subcore"

// subWorld is a World as the layers above the runtime see it through package
// runtime/substrate: the calls of subcore.World, which an MPI program does not make. Its
// methods live beside the state they use (rma.go, hang.go, reach.go, free.go, world.go).
type subWorld World

func init() {
	subcore.Of = func(w any) subcore.World { return (*subWorld)(w.(*World)) }
	subcore.ReadsUser = func(w any, r int) (bool, error) { return readsUser(w.(*World), r) }
}

// AllocRegion returns n bytes of pre-registered arena memory, accessible to every peer.
func (s *subWorld) AllocRegion(n int) (*subcore.Region, error) { return s.alloc(n, false) }

// AllocHostRegion returns n bytes of the shared-memory device's arena, for this host's
// ranks only.
func (s *subWorld) AllocHostRegion(n int) (*subcore.Region, error) { return s.alloc(n, true) }

func (s *subWorld) alloc(n int, host bool) (*subcore.Region, error) {
	r, err := (*World)(s).allocRegion(n, host)
	if err != nil {
		return nil, err
	}
	return r.public(), nil
}

// RegisterRegion registers buf (ordinary memory, kept alive until Free) with every device.
func (s *subWorld) RegisterRegion(buf []byte) (*subcore.Region, error) {
	r, err := (*World)(s).registerRegion(buf)
	if err != nil {
		return nil, err
	}
	return r.public(), nil
}

// Attach opens rank's region described by desc.
func (s *subWorld) Attach(rank int, desc []byte) (*subcore.Remote, error) {
	return (*World)(s).attach(rank, desc)
}

// NewCounter returns a counter for this World's one-sided requests.
func (s *subWorld) NewCounter() *subcore.Counter {
	return subcore.NewCounter((*World)(s).newCounter())
}

// ServePeers makes this rank's transports serve peers' requests while the caller waits
// outside the runtime (on a word of shared memory that a peer changes by a remote atomic,
// say), as they do while a goroutine waits in the runtime. Over tcp, a wait for a
// completion reads the connection itself (it leads) and leaves the reading to the
// connection's goroutine only lazily once it returns: within a millisecond or two, or
// when the process idles. ServePeers hands it back now. Call it before such a wait; it
// costs a system call per connection whose reading is waiting to be handed back, a lock
// per tcp device otherwise, and nothing on a rank without one.
func (s *subWorld) ServePeers() {
	for _, r := range s.e.links.returners {
		r.HandBack()
	}
}

// PollPeers serves, on the calling goroutine and without waiting, the requests that peers
// have already sent over connections that nobody reads at the moment, and reports whether
// it served any. Over tcp those are connections whose reading a completion wait took over
// and left idle (see ServePeers). A goroutine that spins outside the runtime on a
// condition that a peer's request sets (a remote atomic on this rank's memory) calls it
// in its spin, and ServePeers before it sleeps: the request is served as soon as it
// lands, without a wake-up of the connection's goroutine. It costs a lock per tcp device,
// and a system call per idle connection; nothing on a rank without tcp.
func (s *subWorld) PollPeers() bool {
	served := false
	for _, r := range s.e.links.returners {
		if r.Progress() {
			served = true
		}
	}
	return served
}
