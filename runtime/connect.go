package runtime

import (
	"context"
	"fmt"
	"os"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// keyCard is the key under which a rank publishes its card through the agent.
const keyCard = "gorma/card"

// connect opens this rank's connection listener, publishes its card, reads every peer's
// after the agent's fence, and opens the devices the peers need. Queue pairs connect on
// first contact (cm.go).
func (e *engine) connect(ctx context.Context, id hostIdentity) error {
	if err := e.listenCM(e.cfg.tcpAddr); err != nil {
		return err
	}
	me := e.myCard(id)
	if err := e.pm.Put(ctx, keyCard, me.encode()); err != nil {
		return err
	}
	if err := e.pm.Fence(ctx); err != nil {
		return err
	}
	count, err := e.readCards(ctx, me)
	if err != nil {
		return err
	}
	e.slots = slotsPerPeer(e.size - 1)
	return e.openDevices(count, e.deviceWait(count))
}

// myCard is this rank's card, with host identity id.
func (e *engine) myCard(id hostIdentity) card {
	return card{host: e.host, id: id, pid: int32(os.Getpid()), probe: probeAddr(),
		eagerSHM: uint32(e.cfg.eagerSHM), eagerTCP: uint32(e.cfg.eagerTCP), cpu: boundCPU(), cm: e.cm.addr}
}

// readCards reads every peer's card (after the fence that follows this rank's own card,
// me), records them, and counts the peers each provider serves.
func (e *engine) readCards(ctx context.Context, me card) (count map[string]int, err error) {
	e.learnCardLocked(e.rank, me)
	for r := range e.size {
		if r == e.rank {
			continue
		}
		b, err := e.pm.Get(ctx, r, keyCard)
		var c card
		if err == nil {
			c, err = decodeCard(b)
		}
		if err != nil {
			return nil, fmt.Errorf("card of rank %d: %w", r, err)
		}
		e.learnCardLocked(r, c)
	}
	return e.providerCounts()
}

// deviceWait decides who spins (progress.go), given how many peers each provider serves.
// Either the runtime spins, over every device, and then only sleeps in CQ.Wait
// (verbs.WaitBlock). Or, when every device's completions come from reader goroutines
// (verbs.CapReaders: tcp) and the mode is hybrid, the device's CQ.Wait spins. Its spin
// leaves the processor to the readers, and its leader (a wait on the only connection)
// tries its socket for GORMA_SPIN before it sleeps. The exception is a host whose ranks
// outnumber its processors: the peer may need the very processor such a spin holds.
func (e *engine) deviceWait(count map[string]int) verbs.WaitMode {
	readers := false
	for name, n := range count {
		if n == 0 {
			continue
		}
		if !providerCaps(name).Has(verbs.CapReaders) {
			return verbs.WaitBlock
		}
		readers = true
	}
	if !readers || e.cfg.progress != verbs.WaitHybrid {
		return verbs.WaitBlock
	}
	e.poll.providerSpins = true
	if e.localSize <= e.ncpu {
		return verbs.WaitHybrid
	}
	return verbs.WaitBlock
}

// openDevices opens a device per provider that serves peers (count), in deviceOrder,
// each waiting in mode wait.
func (e *engine) openDevices(count map[string]int, wait verbs.WaitMode) error {
	for _, name := range deviceOrder(count) {
		if _, err := e.addDevice(name, wait, count[name]); err != nil {
			return err
		}
	}
	return nil
}

// addDevice opens provider name for npeers peers, with the job secret, and adds it to
// e.devs, the returners and the poller's CQs. A device whose CQ takes a wait check
// checks the fast boxes and the held sends (waitCheck) before its CQ.Wait sleeps.
func (e *engine) addDevice(name string, wait verbs.WaitMode, npeers int) (*device, error) {
	d, err := openDevice(name, &e.cfg, wait, e.rank, npeers, e.slots, e.secret)
	if err != nil {
		return nil, err
	}
	e.devs = append(e.devs, d)
	e.poll.cqs = append(e.poll.cqs, d.cq)
	if r, ok := d.cq.(roleReturner); ok {
		e.returners = append(e.returners, r)
	}
	if wc, ok := d.cq.(waitChecker); ok {
		wc.SetWaitCheck(e.waitCheck)
	}
	return d, nil
}

// encodeEP is the endpoint value a rank sends a peer in the connection handshake
// (cm_wire.go): the QP's endpoint bytes, then the key of the fast box it allocated for
// that peer (0: none), u64 little-endian.
func encodeEP(ep []byte, fbKey uint64) []byte {
	return le.AppendUint64(append([]byte(nil), ep...), fbKey)
}

// decodeEP splits a keyEP value; it never panics.
func decodeEP(b []byte) (ep []byte, fbKey uint64, err error) {
	if len(b) < 8 {
		return nil, 0, fmt.Errorf("endpoint card of %d bytes, shorter than its 8-byte fast box key", len(b))
	}
	n := len(b) - 8
	return b[:n:n], le.Uint64(b[n:]), nil
}
