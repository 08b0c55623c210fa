package runtime

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"time"

	"github.com/gorma-hpc/gorma/pmi"
)

// Keys a rank publishes through a foreign PMI server. The "gorma-" prefix keeps them
// apart from an MPI library's; the session puts the rank into the PMI key.
const (
	// keyWire1 holds this rank's card and, from rank 0, the job secret (encodeWire).
	keyWire1 = "gorma-w1"
	// secretLen is the length of the job secret rank 0 draws.
	secretLen = 32
)

// abortWait bounds how long a failed Init waits for the PMI server to take its abort.
const abortWait = 2 * time.Second

// foreignPM is a foreign process manager's server: PMI-1/PMI-2 (*pmi.Foreign) or PMIx
// (*pmi.PMIx).
type foreignPM interface {
	pmi.Session
	Version() string
	Nodes(ctx context.Context) ([]int, error)
}

// connectPM connects to the server the environment names: PMI-1/PMI-2 when PMI_FD or
// PMI_PORT is set, else PMIx.
func connectPM(ctx context.Context, getenv func(string) string) (foreignPM, error) {
	if pmi.DetectSimple(getenv) {
		return pmi.Connect(ctx, getenv)
	}
	return pmi.ConnectPMIx(ctx, getenv)
}

// initForeign joins a job that Slurm, Hydra, Flux or a PMIx server (Open MPI's mpirun)
// started, through the server the environment names (pmi.Connect checks the server's
// rank and size against PMI_RANK and PMI_SIZE).
func initForeign(ctx context.Context, cfg config, o options) (*World, error) {
	f, err := connectPM(ctx, o.getenv)
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
	e.pm, e.links.pm = f, f
	if err := (join{e}).connectForeign(ctx, identityWith(o.hostSalt), nodes); err != nil {
		e.shutdown()
		return fail(err)
	}
	e.start()
	return e.rootWorld(), nil
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

// connectForeign joins the job through a foreign PMI server with a constant number of
// PMI round trips. This rank opens its connection listener, puts its card (rank 0: and
// the job secret) in one value, fences, and reads rank 0's value. Locality comes from
// the node map (nodes, from PMI_process_mapping). This rank checks it against the card
// of its node's first rank, so that a map the cards contradict (ranks of one node that
// cannot share memory: another container, user or network namespace) fails Init at the
// rank that sees it, whose PMI abort ends the job. Without a map it reads every card
// and groups the ranks by host identity. It opens shm for the peers on its node and tcp
// for the others; queue pairs connect on first contact (cm.go).
func (j join) connectForeign(ctx context.Context, id hostIdentity, nodes []int) error {
	e := j.e
	// tcp peers are on other nodes: listen on every interface (the listener advertises
	// the first global unicast address).
	if err := e.links.cm.listenCM("0.0.0.0"); err != nil {
		return err
	}
	me := e.links.myCard(id)
	e.links.learnCardLocked(e.rank, me)
	var secret []byte
	if e.rank == 0 {
		secret = make([]byte, secretLen)
		rand.Read(secret)
	}
	if err := e.pm.Put(ctx, keyWire1, encodeWire(me.encode(), secret)); err != nil {
		return fmt.Errorf("publish this rank's card (PMI put %s): %w", keyWire1, err)
	}
	if err := e.pm.Fence(ctx); err != nil {
		return fmt.Errorf("exchange cards (PMI fence): %w", err)
	}
	if e.rank != 0 {
		var err error
		if secret, err = j.readRank0(ctx); err != nil {
			return err
		}
	}
	e.links.cm.secret = secret
	if nodes == nil {
		var err error
		if nodes, err = j.nodesFromCards(ctx); err != nil {
			return err
		}
	} else if err := j.checkNode(ctx, nodes); err != nil {
		return err
	}
	e.links.nodes = nodes
	e.localRank, e.localSize = 0, 0
	for r := range nodes {
		if nodes[r] == nodes[e.rank] {
			if r < e.rank {
				e.localRank++
			}
			e.localSize++
		}
	}
	j.fitHost()
	e.links.slots = slotsPerPeer(e.size - 1)
	count, err := e.links.providerCounts()
	if err != nil {
		return err
	}
	return j.openDevices(count)
}

// readRank0 reads rank 0's value: its card and the job secret.
func (j join) readRank0(ctx context.Context) ([]byte, error) {
	e := j.e
	b, err := e.pm.Get(ctx, 0, keyWire1)
	if err != nil {
		return nil, fmt.Errorf("read rank 0's card and job secret (PMI get %s): %w", keyWire1, err)
	}
	w, err := decodeWire(b)
	var c card
	if err == nil {
		c, err = decodeCard(w.card)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: rank 0's value under PMI key %s: %w", pmi.ErrProtocol, keyWire1, err)
	}
	if n := len(w.secret); n != secretLen {
		return nil, fmt.Errorf("%w: rank 0 published a job secret of %d bytes under PMI key %s, want %d (mixed gorma builds in one job?)",
			pmi.ErrProtocol, n, keyWire1, secretLen)
	}
	e.links.learnCardLocked(0, c)
	return w.secret, nil
}

// checkNode checks the node map against the card of the first rank on this rank's node:
// the two must share memory.
func (j join) checkNode(ctx context.Context, nodes []int) error {
	e := j.e
	leader := nodeLeader(nodes, e.rank)
	if leader == e.rank {
		return nil
	}
	c, err := e.links.cardOf(ctx, leader)
	if err != nil {
		return fmt.Errorf("read the card of rank %d, first on this rank's node: %w", leader, err)
	}
	me := &e.links.table().cards[e.rank]
	if !sameHost(me, &c) {
		return fmt.Errorf("%w: %s puts rank %d on this rank's node, but they cannot share memory: rank %d runs on host %q (%s), this rank on %q (%s); run one node's ranks in one container, as one user, in one network namespace",
			ErrTransport, pmi.ProcessMappingKey, leader, leader, c.host, c.id.short(), me.host, me.id.short())
	}
	return nil
}

// nodesFromCards reads every peer's card and numbers the hosts they name: ranks whose
// cards share memory get one node.
func (j join) nodesFromCards(ctx context.Context) ([]int, error) {
	e := j.e
	nodes := make([]int, e.size)
	var first []int // each node's first rank
	for r := range e.size {
		c, err := e.links.cardOf(ctx, r)
		if err != nil {
			return nil, fmt.Errorf("read the card of rank %d (no %s to place ranks by): %w", r, pmi.ProcessMappingKey, err)
		}
		nodes[r] = -1
		for n, f := range first {
			if sameHost(&e.links.table().cards[f], &c) {
				nodes[r] = n
				break
			}
		}
		if nodes[r] < 0 {
			nodes[r] = len(first)
			first = append(first, r)
		}
	}
	return nodes, nil
}
