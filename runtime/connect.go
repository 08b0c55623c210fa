package runtime

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// Keys under which ranks publish through the agent.
const (
	keyCard = "gorma/card"
	keyEP   = "gorma/ep/" // + the rank the endpoint is for
)

// connect publishes this rank's card, reads every peer's, opens the devices the peers
// need, and connects one QP (and, on shm, a pair of fast boxes) to every peer. Every rank
// runs the same steps, meeting at the agent's fences.
func (e *engine) connect(ctx context.Context, id hostIdentity) error {
	me := e.myCard(id)
	if err := e.pm.Put(ctx, keyCard, me.encode()); err != nil {
		return err
	}
	if err := e.pm.Fence(ctx); err != nil {
		return err
	}
	prov, count, err := e.readCards(ctx, me)
	if err != nil {
		return err
	}
	slots := slotsPerPeer(e.size - 1)
	devs, err := e.openDevices(count, e.deviceWait(count), slots)
	if err != nil {
		return err
	}
	if err := e.publishEndpoints(ctx, devs, prov, slots); err != nil {
		return err
	}
	if err := e.pm.Fence(ctx); err != nil {
		return err
	}
	fbKeys, err := e.connectQPs(ctx, func(r int) ([]byte, error) {
		return e.pm.Get(ctx, r, keyEP+strconv.Itoa(e.rank))
	})
	if err != nil {
		return err
	}
	return e.connectFastboxes(fbKeys)
}

// myCard is this rank's card, with host identity id.
func (e *engine) myCard(id hostIdentity) card {
	return card{host: e.host, id: id, pid: int32(os.Getpid()), probe: probeAddr(),
		eagerSHM: uint32(e.cfg.eagerSHM), eagerTCP: uint32(e.cfg.eagerTCP), cpu: boundCPU()}
}

// readCards reads every peer's card (after the fence that follows this rank's own card,
// me) and chooses the provider of each: prov by rank, and how many peers each provider
// serves. It sets e.cards and e.hosts.
func (e *engine) readCards(ctx context.Context, me card) (prov []string, count map[string]int, err error) {
	cards := make([]card, e.size)
	prov = make([]string, e.size)
	count = map[string]int{}
	for r := range e.size {
		if r == e.rank {
			continue
		}
		b, err := e.pm.Get(ctx, r, keyCard)
		if err == nil {
			cards[r], err = decodeCard(b)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("card of rank %d: %w", r, err)
		}
		e.hosts[r] = cards[r].host
		if prov[r], err = chooseProvider(e.cfg.transport, &me, &cards[r], r); err != nil {
			return nil, nil, err
		}
		count[prov[r]]++
	}
	cards[e.rank] = me
	e.cards = cards
	return prov, count, nil
}

// deviceWait decides who spins (progress.go), given how many peers each provider serves:
// the runtime, over every device, which then only sleeps in CQ.Wait (verbs.WaitBlock);
// or, when tcp is the only device and the mode is hybrid, tcp's CQ.Wait, whose spin
// leaves the processor to the reader goroutines that produce completions, and whose
// leader (a wait on the only connection) tries its socket for GORMA_SPIN before it
// sleeps, unless this host's ranks outnumber its processors: the peer may need the very
// processor such a spin holds.
func (e *engine) deviceWait(count map[string]int) verbs.WaitMode {
	if count["tcp"] == 0 || count["shm"] > 0 || e.cfg.progress != verbs.WaitHybrid {
		return verbs.WaitBlock
	}
	e.poll.providerSpins = true
	if e.localSize <= e.ncpu {
		return verbs.WaitHybrid
	}
	return verbs.WaitBlock
}

// openDevices opens a device per provider that serves peers (count), shm first, each
// waiting in mode wait, and returns them by provider name. It sets e.devs, e.returners
// and the poller's CQs.
func (e *engine) openDevices(count map[string]int, wait verbs.WaitMode, slots int) (map[string]*device, error) {
	devs := map[string]*device{}
	for _, name := range []string{"shm", "tcp"} {
		if count[name] == 0 {
			continue
		}
		d, err := e.addDevice(name, wait, count[name], slots, false)
		if err != nil {
			return nil, err
		}
		devs[name] = d
	}
	return devs, nil
}

// addDevice opens provider name for npeers peers and adds it to e.devs, the returners
// and the poller's CQs. A tcp device takes the job secret e.secret, or with deferSecret
// none: it gets it later through setSecret.
func (e *engine) addDevice(name string, wait verbs.WaitMode, npeers, slots int, deferSecret bool) (*device, error) {
	secret := e.secret
	if deferSecret {
		secret = nil
	}
	d, err := openDevice(name, &e.cfg, wait, e.rank, npeers, slots, secret, deferSecret)
	if err != nil {
		return nil, err
	}
	e.devs = append(e.devs, d)
	e.poll.cqs = append(e.poll.cqs, d.cq)
	if r, ok := d.cq.(roleReturner); ok {
		e.returners = append(e.returners, r)
	}
	return d, nil
}

// publishEndpoints makes every peer (on the device of its provider, prov by rank) with
// its QP and, on shm, the fast box it writes into here, and publishes the QP's endpoint
// and the box's key for that peer.
func (e *engine) publishEndpoints(ctx context.Context, devs map[string]*device, prov []string, slots int) error {
	for r := range e.size {
		if r == e.rank {
			continue
		}
		d, c := devs[prov[r]], &e.cards[r]
		mine, theirs := e.cfg.eagerTCP, int(c.eagerTCP)
		if d.name == "shm" {
			mine, theirs = e.cfg.eagerSHM, int(c.eagerSHM)
		}
		ep, err := e.makePeer(d, r, *c, mine, theirs, slots)
		if err != nil {
			return err
		}
		e.peers[r].cma = d.name == "shm" && cmaPossible(c)
		if err := e.pm.Put(ctx, keyEP+strconv.Itoa(r), ep); err != nil {
			return err
		}
	}
	return nil
}

// makePeer makes the peer of rank r on d (see newPeer) with its fast box, sets
// e.peers[r], and returns the endpoint value to send to r (encodeEP).
func (e *engine) makePeer(d *device, r int, c card, mine, theirs, slots int) ([]byte, error) {
	p, err := newPeer(d, r, c, mine, theirs, slots)
	if err != nil {
		return nil, err
	}
	e.peers[r] = p
	fbKey, err := newFastboxIn(d, p)
	if err != nil {
		return nil, err
	}
	return encodeEP(p.qp.Endpoint(), fbKey), nil
}

// connectQPs reads every peer's endpoint for this rank with get (after the fence that
// follows the endpoints' publication), moves every QP to RTR and then to RTS, and
// returns the keys of the peers' fast boxes for this rank's messages, by rank.
func (e *engine) connectQPs(ctx context.Context, get func(r int) ([]byte, error)) ([]uint64, error) {
	fbKeys := make([]uint64, e.size)
	for r, p := range e.peers {
		if p == nil {
			continue
		}
		b, err := get(r)
		var ep []byte
		if err == nil {
			ep, fbKeys[r], err = decodeEP(b)
		}
		if err == nil {
			err = p.qp.ToRTR(ctx, ep)
		}
		if err != nil {
			return nil, fmt.Errorf("connect to rank %d (%s, host %s): %w", r, p.dev.name, p.host, err)
		}
	}
	for r, p := range e.peers {
		if p == nil {
			continue
		}
		if err := p.qp.ToRTS(ctx); err != nil {
			return nil, fmt.Errorf("connect to rank %d (%s, host %s): %w", r, p.dev.name, p.host, err)
		}
	}
	return fbKeys, nil
}

// connectFastboxes maps every peer's fast box for this rank's messages (keys from their
// endpoint cards) and makes the poller, spinning or asleep in the CQ, look into the boxes
// the peers write into here.
func (e *engine) connectFastboxes(keys []uint64) error {
	for r, p := range e.peers {
		if p == nil {
			continue
		}
		if err := mapFastboxOut(p, keys[r]); err != nil {
			return fmt.Errorf("connect to rank %d (%s, host %s): %w", r, p.dev.name, p.host, err)
		}
		if p.fin.box != nil {
			e.poll.boxes = append(e.poll.boxes, p)
		}
	}
	if len(e.poll.boxes) == 0 {
		return nil
	}
	for _, d := range e.devs {
		if wc, ok := d.cq.(waitChecker); ok && d.fastbox {
			wc.SetWaitCheck(e.fastboxReady)
		}
	}
	return nil
}

// encodeEP is the value a rank publishes under keyEP for one peer: the QP's endpoint
// bytes, then the key of the fast box it allocated for that peer (0: none), u64
// little-endian.
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
