package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/gorma-hpc/gorma/pmi"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// keyCard is the key under which a rank publishes its card through the agent.
const keyCard = "gorma/card"

// join is the part that connects a rank to its job at Init: its card, the peers' cards,
// its locality and its devices, under golaunch (connect) or a foreign process manager
// (connectForeign, foreign.go). Init calls it before the engine's goroutines start, so
// it takes no lock; it holds nothing after Init. It sets the engine's locality and opens
// the links' devices and the poller's CQs through e.
type join struct {
	e *engine
}

// connect opens this rank's connection listener, publishes its card, and opens the
// devices the peers need after the agent's fence. Queue pairs connect on first contact
// (cm.go), which reads the peer's card then. The agent's node map (info's
// ProcessMapping, and Hosts naming its nodes) places every rank, so Init reads one card
// at most: its node's first rank's, which must share memory with this rank. Without a
// map (an agent that serves none) it reads every card.
func (j join) connect(ctx context.Context, id hostIdentity, info pmi.Info) error {
	e := j.e
	if err := e.links.cm.listenCM(e.cfg.tcpAddr); err != nil {
		return err
	}
	me := e.links.myCard(id)
	if err := e.pm.Put(ctx, keyCard, me.encode()); err != nil {
		return err
	}
	if err := e.pm.Fence(ctx); err != nil {
		return err
	}
	e.links.slots = slotsPerPeer(e.size - 1)
	if info.ProcessMapping == "" {
		count, err := e.links.readCards(ctx, me, e.spawn.optionalCard)
		if err != nil {
			return err
		}
		return j.openDevices(count)
	}
	// The job may have grown since this rank started (spawn.go): the map then places
	// more ranks than this rank knows of, and those are placed by their cards.
	nodes, err := pmi.ParseProcessMapping(info.ProcessMapping, max(info.Size, e.size))
	if err == nil {
		nodes = nodes[:min(len(nodes), e.size)]
		err = e.links.placeRanks(nodes, info.Hosts)
	}
	if err != nil {
		return fmt.Errorf("%w: the agent's node map: %w", pmi.ErrProtocol, err)
	}
	e.links.learnCardLocked(e.rank, me)
	if e.links.nodeShares() {
		if err := j.checkNode(ctx, nodes); err != nil {
			return err
		}
	}
	count, err := e.links.providerCounts()
	if err != nil {
		return err
	}
	return j.openDevices(count)
}

// placeRanks records the node map of a job started by golaunch: nodes gives each rank's
// node index, hosts each node's name. This rank's node must bear its own host name.
func (l *links) placeRanks(nodes []int, hosts []string) error {
	t := l.table()
	if len(nodes) != len(t.hosts) {
		return fmt.Errorf("it places %d ranks in a job of %d", len(nodes), len(t.hosts))
	}
	for r, n := range nodes {
		if n >= len(hosts) {
			return fmt.Errorf("rank %d is on node %d, but it names %d nodes", r, n, len(hosts))
		}
	}
	if h := hosts[nodes[l.rank]]; h != t.hosts[l.rank] {
		return fmt.Errorf("it puts this rank on host %q, but golaunch started it on %q", h, t.hosts[l.rank])
	}
	for r, n := range nodes {
		t.hosts[r] = hosts[n]
	}
	l.nodes = nodes
	return nil
}

// myCard is this rank's card, with host identity id.
func (l *links) myCard(id hostIdentity) card {
	allowPeerReads()
	c := card{host: l.table().hosts[l.rank], id: id, pid: int32(os.Getpid()), probe: probeAddr(),
		eagerSHM: uint32(l.cfg.eagerSHM), eagerTCP: uint32(l.cfg.eagerTCP), cpus: affinity(), cm: l.cm.addr}
	c.cpu = onlyCPU(&c.cpus)
	return c
}

// readCards reads every peer's card (after the fence that follows this rank's own card,
// me), records them, and counts the peers each provider serves. A card that optional
// says may be missing is skipped when it is (spawn.go).
func (l *links) readCards(ctx context.Context, me card, optional func(r int) bool) (count map[string]int, err error) {
	l.learnCardLocked(l.rank, me)
	for r := range l.size {
		if r == l.rank {
			continue
		}
		b, err := l.pm.Get(ctx, r, keyCard)
		if errors.Is(err, pmi.ErrNotFound) && optional(r) {
			continue
		}
		var c card
		if err == nil {
			c, err = decodeCard(b)
		}
		if err != nil {
			return nil, fmt.Errorf("card of rank %d: %w", r, err)
		}
		l.learnCardLocked(r, c)
	}
	return l.providerCounts()
}

// deviceWait decides who spins (progress.go), given how many peers each provider serves,
// the GORMA_PROGRESS mode and whether the host's ranks outnumber its processors. Either
// the runtime spins, over every device, and then only sleeps in CQ.Wait
// (verbs.WaitBlock). Or, when every device's completions come from reader goroutines
// (verbs.CapReaders: tcp) and the mode is hybrid, the provider spins (providerSpins). Its
// CQ.Wait spins, leaving the processor to the readers, and its leader (a wait on the only
// connection) tries its socket for GORMA_SPIN before it sleeps. The exception is an
// oversubscribed host: the peer may need the very processor such a spin holds.
func deviceWait(count map[string]int, mode verbs.WaitMode, oversubscribed bool) (wait verbs.WaitMode, providerSpins bool) {
	readers := false
	for name, n := range count {
		if n == 0 {
			continue
		}
		if !providerCaps(name).Has(verbs.CapReaders) {
			return verbs.WaitBlock, false
		}
		readers = true
	}
	if !readers || mode != verbs.WaitHybrid {
		return verbs.WaitBlock, false
	}
	if oversubscribed {
		return verbs.WaitBlock, true
	}
	return verbs.WaitHybrid, true
}

// openDevices opens the devices that serve peers (count: how many each provider serves),
// decides who spins (deviceWait), and gives the poller their CQs. A device whose CQ takes
// a wait check checks the fast boxes and the held sends (waitCheck) before it sleeps.
func (j join) openDevices(count map[string]int) error {
	e := j.e
	wait, spins := deviceWait(count, e.cfg.progress, e.waiting.Oversub())
	e.poll.providerSpins = spins
	if err := e.links.openDevices(count, wait); err != nil {
		return err
	}
	for _, d := range e.links.devs {
		e.poll.cqs = append(e.poll.cqs, d.cq)
		if wc, ok := d.cq.(waitChecker); ok {
			wc.SetWaitCheck(e.poll.waitCheck)
		}
	}
	return nil
}

// openDevices opens a device per provider that serves peers (count), in deviceOrder,
// each waiting in mode wait.
func (l *links) openDevices(count map[string]int, wait verbs.WaitMode) error {
	for _, name := range deviceOrder(count) {
		if _, err := l.addDevice(name, wait, count[name]); err != nil {
			return err
		}
	}
	return nil
}

// addDevice opens provider name for npeers peers, with the job secret, and adds it to
// l.devs and, if its CQ may be led, to the returners.
func (l *links) addDevice(name string, wait verbs.WaitMode, npeers int) (*device, error) {
	d, err := openDevice(name, l.cfg, wait, l.rank, npeers, l.slots, l.cm.secret)
	if err != nil {
		return nil, err
	}
	l.devs = append(l.devs, d)
	if r, ok := d.cq.(roleReturner); ok {
		l.returners = append(l.returners, r)
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
