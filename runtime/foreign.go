package runtime

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"time"

	"github.com/gorma-hpc/gorma/pmi"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// Keys a rank publishes through a foreign PMI server. The "gorma-" prefix keeps them
// apart from an MPI library's; the session puts the rank into the PMI key.
const (
	// keyWire1 holds this rank's card, rank 0's job secret, and the endpoints for every
	// peer PMI_process_mapping places: shm for those on this rank's node, tcp for the
	// others (encodeWire).
	keyWire1 = "gorma-w1"
	// keyWire2 holds the endpoints for the peers the first round left unsettled, in the
	// second round that only a job without a node map, or whose cards contradict it,
	// needs.
	keyWire2 = "gorma-w2"
	// secretLen is the length of the job secret rank 0 draws for the tcp transport.
	secretLen = 32
)

// abortWait bounds how long a failed Init waits for the PMI server to take its abort.
const abortWait = 2 * time.Second

// initForeign joins a job that Slurm, Hydra or Flux started, through the PMI server the
// environment names (pmi.Connect, which checks the server's rank and size against
// PMI_RANK and PMI_SIZE).
func initForeign(ctx context.Context, cfg config, o options) (*World, error) {
	f, err := pmi.Connect(ctx, o.getenv)
	if err != nil {
		return nil, fmt.Errorf("runtime: init: %w", err)
	}
	rank, size := f.Rank(), f.Size()
	fail := func(err error) (*World, error) {
		err = fmt.Errorf("runtime: init rank %d (PMI %s): %w", rank, f.Version(), err)
		abortSession(f, err.Error())
		return nil, err
	}
	nodes, err := f.Nodes(ctx)
	if err != nil {
		return fail(fmt.Errorf("node map (%s) of a job of %d ranks (%s): %w", pmi.ProcessMappingKey, size, pmi.EnvPMISize, err))
	}
	if nodes != nil && len(nodes) != size {
		return fail(fmt.Errorf("%w: PMI_process_mapping places %d ranks, the PMI server says the job has %d", pmi.ErrProtocol, len(nodes), size))
	}
	host, err := os.Hostname()
	if err != nil {
		return fail(fmt.Errorf("host name: %w", err))
	}
	// tcp peers are on other nodes: listen on every interface (the device advertises the
	// first global unicast address).
	cfg.transport, cfg.tcpAddr = "auto", "0.0.0.0"
	e := newEngine(cfg, rank, size, host, o.exit)
	e.pm = f
	if err := e.connectForeign(ctx, identityWith(o.hostSalt), nodes); err != nil {
		e.shutdown()
		return fail(err)
	}
	e.start()
	return &World{e: e}, nil
}

// abortSession asks the PMI server to end the job (bounded by abortWait: a server that
// answers garbage may not read it) and closes the session.
func abortSession(s pmi.Session, msg string) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Abort(1, msg)
	}()
	select {
	case <-done:
	case <-time.After(abortWait):
	}
	s.Close()
}

// connectForeign wires the job up through a foreign PMI server. Round one, before the
// only fence: this rank opens the shm device for the peers that the node map (nodes,
// from PMI_process_mapping; nil without one) puts on its node and the tcp device, its
// job secret deferred, for the peers on other nodes, makes their QPs and fast boxes,
// and publishes its card, its endpoints for them and (rank 0) the job secret in one
// value. After the fence it takes rank 0's secret, gives it to the tcp device, and reads
// every card; the peers whose cards confirm the map are settled. A second round (peers
// the map and the cards disagree on, or every peer without a map) happens only if some
// pair of ranks is unsettled, which every rank decides alike from the same cards. Then
// every QP connects.
func (e *engine) connectForeign(ctx context.Context, id hostIdentity, nodes []int) error {
	me := e.myCard(id)
	slots := slotsPerPeer(e.size - 1)
	var secret []byte
	if e.rank == 0 {
		secret = make([]byte, secretLen)
		rand.Read(secret)
		e.secret = secret
	}
	near, err := e.openNear(nodes, slots)
	if err != nil {
		return err
	}
	far, tcpDev, err := e.openFar(nodes, slots)
	if err != nil {
		return err
	}
	if err := e.pm.Put(ctx, keyWire1, encodeWire(me.encode(), secret, append(near, far...))); err != nil {
		return fmt.Errorf("publish this rank's card and endpoints (PMI put %s): %w", keyWire1, err)
	}
	if err := e.pm.Fence(ctx); err != nil {
		return fmt.Errorf("exchange cards and endpoints (PMI fence): %w", err)
	}
	first, err := e.readFirst(ctx, tcpDev)
	if err != nil {
		return err
	}
	if err := e.adoptCards(me, first); err != nil {
		return err
	}
	e.nodes = nodes
	e.settleFirst()
	var second []wire
	late := make([]bool, e.size) // peers connected by the second round
	if needSecondRound(nodes, e.cards) {
		if second, late, err = e.secondRound(ctx, slots); err != nil {
			return err
		}
	}
	fbKeys, err := e.connectQPs(ctx, func(r int) ([]byte, error) {
		w, key := first[r], keyWire1
		if late[r] {
			w, key = second[r], keyWire2
		}
		if w.ep == nil {
			return nil, fmt.Errorf("%w: rank %d published no endpoint for rank %d under PMI key %s (does every rank see the same PMI_process_mapping?)",
				pmi.ErrProtocol, r, e.rank, key)
		}
		return w.ep, nil
	})
	if err != nil {
		return err
	}
	return e.connectFastboxes(fbKeys)
}

// openNear opens the shm device for the peers nodes puts on this rank's node and makes
// their peers, assuming they take this rank's own eager limit (settleNear lowers it to
// theirs). It returns the endpoint entries to publish.
func (e *engine) openNear(nodes []int, slots int) ([]wireEP, error) {
	var near []int
	for r := range nodes {
		if r != e.rank && nodes[r] == nodes[e.rank] {
			near = append(near, r)
		}
	}
	if len(near) == 0 {
		return nil, nil
	}
	d, err := e.addDevice("shm", verbs.WaitBlock, len(near), slots, false)
	if err != nil {
		return nil, err
	}
	eps := make([]wireEP, 0, len(near))
	for _, r := range near {
		ep, err := e.makePeer(d, r, card{}, e.cfg.eagerSHM, e.cfg.eagerSHM, slots)
		if err != nil {
			return nil, err
		}
		eps = append(eps, wireEP{rank: r, ep: ep})
	}
	return eps, nil
}

// openFar opens the tcp device for the peers nodes puts on other nodes than this rank's,
// before the job secret is known (tcp.Options.DeferSecret; rank 0 has it already), and
// makes their peers assuming they take this rank's own eager limit (settleFirst lowers
// it to theirs). The device is sized for every peer: the second round may add to it the
// peers on this node whose cards refuse shm. It returns the endpoint entries to
// publish, and the device if it waits for its secret.
func (e *engine) openFar(nodes []int, slots int) ([]wireEP, *device, error) {
	var far []int
	for r := range nodes {
		if nodes[r] != nodes[e.rank] {
			far = append(far, r)
		}
	}
	if len(far) == 0 {
		return nil, nil, nil
	}
	e.localSize = len(nodes) - len(far) // as the map says, for deviceWait; adoptCards sets it from the cards
	wait := e.deviceWait(map[string]int{"shm": e.localSize - 1, "tcp": len(far)})
	deferSecret := e.secret == nil
	d, err := e.addDevice("tcp", wait, e.size-1, slots, deferSecret)
	if err != nil {
		return nil, nil, err
	}
	eps := make([]wireEP, 0, len(far))
	for _, r := range far {
		ep, err := e.makePeer(d, r, card{}, e.cfg.eagerTCP, e.cfg.eagerTCP, slots)
		if err != nil {
			return nil, nil, err
		}
		eps = append(eps, wireEP{rank: r, ep: ep})
	}
	if !deferSecret {
		d = nil
	}
	return eps, d, nil
}

// readFirst reads every peer's first-round value, rank 0's first: its job secret goes
// to the tcp device waiting for it (tcpDev, nil if none) before the other values are
// read, so that peers which connect early do not wait long.
func (e *engine) readFirst(ctx context.Context, tcpDev *device) ([]wire, error) {
	want := make([]bool, e.size)
	for r := range want {
		want[r] = r != 0
	}
	var w0 wire
	if e.rank != 0 {
		w, err := e.readWires(ctx, keyWire1, []bool{true})
		if err != nil {
			return nil, err
		}
		w0 = w[0]
		if n := len(w0.secret); n != secretLen {
			return nil, fmt.Errorf("%w: rank 0 published a job secret of %d bytes under PMI key %s, want %d (mixed gorma builds in one job?)",
				pmi.ErrProtocol, n, keyWire1, secretLen)
		}
		e.secret = w0.secret
	}
	if tcpDev != nil {
		if err := tcpDev.setSecret(e.secret); err != nil {
			return nil, err
		}
	}
	wires, err := e.readWires(ctx, keyWire1, want)
	if err != nil {
		return nil, err
	}
	wires[0] = w0
	return wires, nil
}

// readWires reads key of every peer (of the peers with want[r] set, if want is not nil)
// (want may be shorter than the job) and returns them by rank, each holding the endpoint
// meant for this rank.
func (e *engine) readWires(ctx context.Context, key string, want []bool) ([]wire, error) {
	wires := make([]wire, e.size)
	for r := range e.size {
		if r == e.rank || want != nil && (r >= len(want) || !want[r]) {
			continue
		}
		b, err := e.pm.Get(ctx, r, key)
		if err != nil {
			return nil, fmt.Errorf("read rank %d's card and endpoints (PMI get %s): %w", r, key, err)
		}
		if wires[r], err = decodeWire(b, e.rank); err != nil {
			return nil, fmt.Errorf("%w: rank %d's value under PMI key %s: %w", pmi.ErrProtocol, r, key, err)
		}
	}
	return wires, nil
}

// adoptCards decodes every peer's card from the first round's wires, and sets e.cards,
// e.hosts and the local rank and size (the ranks whose cards say they share this rank's
// host).
func (e *engine) adoptCards(me card, wires []wire) error {
	cards := make([]card, e.size)
	cards[e.rank] = me
	for r := range e.size {
		if r == e.rank {
			continue
		}
		c, err := decodeCard(wires[r].card)
		if err != nil {
			return fmt.Errorf("%w: card of rank %d (PMI key %s): %w", pmi.ErrProtocol, r, keyWire1, err)
		}
		cards[r] = c
		e.hosts[r] = c.host
	}
	e.cards = cards
	e.localRank, e.localSize = 0, 0
	for r := range cards {
		if sameHost(&cards[r], &me) {
			if r < e.rank {
				e.localRank++
			}
			e.localSize++
		}
	}
	return nil
}

// settleFirst completes the first round's peers with their cards, and drops those the
// cards refuse shm with (foreignProvider): the second round connects them over tcp. A
// dropped peer's QP stays in Init, unconnected, until the shm device closes. The map
// puts the tcp peers on other nodes, which the cards cannot refuse.
func (e *engine) settleFirst() {
	for r, p := range e.peers {
		if p == nil {
			continue
		}
		if foreignProvider(e.nodes, e.cards, e.rank, r) != p.dev.name {
			e.peers[r] = nil
			continue
		}
		c := &e.cards[r]
		p.card, p.host = *c, c.host
		if p.dev.name == "shm" {
			p.eagerMax = min(p.eagerMax, int(c.eagerSHM))
			p.cma = cmaPossible(c)
		} else {
			p.eagerMax = min(p.eagerMax, int(c.eagerTCP))
		}
	}
}

// needSecondRound reports whether some pair of ranks is not settled by the first round:
// there is no node map, or the map puts two ranks on one node whose cards differ in
// host. Every rank computes the same answer from the same cards.
func needSecondRound(nodes []int, cards []card) bool {
	if len(cards) < 2 {
		return false
	}
	if nodes == nil {
		return true
	}
	first := map[int]int{} // a node's first rank
	for r := range cards {
		f, ok := first[nodes[r]]
		if !ok {
			first[nodes[r]] = r
			continue
		}
		if !sameHost(&cards[r], &cards[f]) {
			return true
		}
	}
	return false
}

// secondRound makes the peers the first round left unconnected, on the devices their
// providers need (e.between), publishes their endpoints in one value, fences, and
// returns the peers' second-round wires by rank and which peers it made.
func (e *engine) secondRound(ctx context.Context, slots int) ([]wire, []bool, error) {
	prov := make([]string, e.size)
	count, later := map[string]int{}, map[string]int{}
	want := make([]bool, e.size)
	for r := range e.size {
		if r == e.rank {
			continue
		}
		var err error
		if prov[r], err = e.between(e.rank, r); err != nil {
			return nil, nil, err
		}
		count[prov[r]]++
		if e.peers[r] == nil {
			later[prov[r]]++
			want[r] = true
		}
	}
	wait := e.deviceWait(count)
	devs := map[string]*device{}
	for _, d := range e.devs {
		devs[d.name] = d
	}
	for _, name := range []string{"shm", "tcp"} {
		if later[name] > 0 && devs[name] == nil {
			d, err := e.addDevice(name, wait, later[name], slots, false)
			if err != nil {
				return nil, nil, err
			}
			devs[name] = d
		}
	}
	var eps []wireEP
	for r := range e.size {
		if !want[r] {
			continue
		}
		d, c := devs[prov[r]], &e.cards[r]
		mine, theirs := e.cfg.eagerTCP, int(c.eagerTCP)
		if d.name == "shm" {
			mine, theirs = e.cfg.eagerSHM, int(c.eagerSHM)
		}
		ep, err := e.makePeer(d, r, *c, mine, theirs, slots)
		if err != nil {
			return nil, nil, err
		}
		e.peers[r].cma = d.name == "shm" && cmaPossible(c)
		eps = append(eps, wireEP{rank: r, ep: ep})
	}
	if err := e.pm.Put(ctx, keyWire2, encodeWire(nil, nil, eps)); err != nil {
		return nil, nil, fmt.Errorf("publish this rank's endpoints (PMI put %s): %w", keyWire2, err)
	}
	if err := e.pm.Fence(ctx); err != nil {
		return nil, nil, fmt.Errorf("exchange endpoints (PMI fence, second round): %w", err)
	}
	wires, err := e.readWires(ctx, keyWire2, want)
	return wires, want, err
}
