package runtime

import (
	"fmt"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// A job grows when ranks are spawned into it (spawn.go). Init opened the devices that
// the peers of the job's start need; a spawned rank on another host needs tcp of a rank
// that had only shm peers, and one on this host shm of a rank that had only tcp peers.
// The connection that first needs such a provider opens its device then
// (lateDeviceLocked), under mu. The poller takes the device's CQ at its next pass, when
// no goroutine holds the role (installDevicesLocked): the role holder reads the CQ list
// and sleeps on it without mu. A regions made before a device opened is not registered
// with it (region.devs).

// devices returns the devices open now, for a caller without mu.
func (l *links) devices() []*device {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.devs
}

// openLateLocked opens provider prov after Init, for a peer that needs it. The
// engine's devices hook has the poller take it.
func openLateLocked(l *links, prov string) (*device, error) {
	if err := l.stop.Err(); err != nil {
		return nil, fmt.Errorf("%w: the %s transport is needed after Finalize began", ErrTransport, prov)
	}
	d, err := openDevice(prov, l.cfg, verbs.WaitBlock, l.rank, max(l.known(), 8), l.slots, l.cm.secret)
	if err != nil {
		return nil, err
	}
	// A new slice: regions made before hold the old one (links.devices).
	l.devs = append(l.devs[:len(l.devs):len(l.devs)], d)
	l.late = append(l.late, d)
	l.hooks.devices()
	return d, nil
}

// devicesOpenedLocked is the links' devices hook: a device opened after Init waits for
// the poller, which takes it now if no goroutine holds the role, or at its holder's next
// pass (untilWaitingLocked), which the kick brings about at once.
func (s *spawner) devicesOpenedLocked() {
	if !s.e.poll.active {
		s.installDevicesLocked()
		return
	}
	s.e.poll.kickLocked()
}

// installDevicesLocked gives the poller the CQs of the devices opened after Init. No
// goroutine holds the poller role. With two devices, each CQ gets a relay (poller.go).
func (s *spawner) installDevicesLocked() {
	e := s.e
	for _, d := range e.links.late {
		e.poll.cqs = append(e.poll.cqs, d.cq)
		if wc, ok := d.cq.(waitChecker); ok {
			wc.SetWaitCheck(e.poll.waitCheck)
		}
		if !d.caps.Has(verbs.CapReaders) {
			e.poll.providerSpins = false // the runtime spins over both (deviceWait)
		}
	}
	e.links.late = nil
	if len(e.poll.cqs) < 2 {
		return
	}
	for i := len(e.poll.relays); i < len(e.poll.cqs); i++ {
		rl := &relay{cq: e.poll.cqs[i], polled: make(chan struct{}, 1)}
		e.poll.relays = append(e.poll.relays, rl)
		e.bg.Add(1)
		go func() {
			defer e.bg.Done()
			e.poll.runRelay(rl, e.stop)
		}()
	}
}
