package runtime

import (
	"context"
	"sync/atomic"

	"github.com/gorma-hpc/gorma/pmi"
)

// links owns this rank's peers and connections: the devices, the connection listener and
// its set-ups (cm.go), the peers by rank with their eager slots and fast boxes
// (peers.go, fastbox.go), the cards that place every rank (locality.go) and the job
// secret that authenticates connections. The engine calls it; it calls down to the
// devices and reports up only through hooks, which the engine sets at Init.
//
// Its lock is the engine's mu (l.mu points to it): the methods named …Locked are called
// with mu held, the others (the listener's goroutines, dialPeer, cardOf) take it. mu
// guards the fields from peers to holders, which come first, beside the engine's mu, as
// the message paths read them, and the entries of tab. The fields below them are set at
// Init and only read afterwards, but for tab, which the job's growth replaces (growLocked),
// and the late devices (spawn.go). Cards that cardOK marks are never written again, so
// between reads them without mu.
type links struct {
	mu    *engineLock
	peers []*peer // by rank; nil for this rank and for ranks never contacted (cm.go)
	// tab is what this rank knows of every rank: its card and host name (rankTable).
	tab     atomic.Pointer[rankTable]
	rxLater []*peer // peers with receive slots to repost before the next wait (peers.go)
	holders []*peer // peers with held eager sends (eager.go)

	rank, size int
	cfg        *config         // the engine's settings
	pm         pmi.Session     // the process manager, which holds peers' cards under a foreign PM; nil in a world of one
	stop       context.Context // ends at Finalize: cuts every set-up short
	// nodes is the node index of every rank of the job at Init: PMI_process_mapping (or,
	// under a foreign PM that gives none, the cards). It decides locality and transports
	// (between). nil only under an agent that serves no map, where Init reads every card.
	// Set at Init, never written after.
	nodes     []int
	slots     int       // eager slots per peer connection
	devs      []*device // their closed and broken flags are guarded by mu; grows under mu (grow.go)
	late      []*device // devices opened after Init that the poller has not taken yet (grow.go); guarded by mu
	returners []roleReturner
	hooks     linkHooks
	cm        cmServer // connections made on first contact (cm.go)
}

// rankTable holds, by job rank, the cards known (cardOK): every rank's under golaunch
// (those Init read, and the spawned ranks' as this rank learns of them), this rank's,
// rank 0's and those read on first contact under a foreign PM; hosts their names. Its
// entries are written under mu. The job's growth replaces the table with a longer copy
// (growLocked), so a reader without mu loads it once and indexes that.
type rankTable struct {
	cards  []card
	cardOK []bool
	hosts  []string
}

// table returns the rank table as it is now.
func (l *links) table() *rankTable { return l.tab.Load() }

// known is the number of job ranks this rank knows of: the job's size at Init, and the
// ranks spawned since that it has heard of.
func (l *links) known() int { return len(l.table().cards) }

// growLocked makes the tables by job rank (the rank table, the peers) hold n ranks: the
// job grew (spawn.go). It never shrinks them.
func (l *links) growLocked(n int) {
	t := l.table()
	if n <= len(t.cards) {
		return
	}
	g := &rankTable{cards: make([]card, n), cardOK: make([]bool, n), hosts: make([]string, n)}
	copy(g.cards, t.cards)
	copy(g.cardOK, t.cardOK)
	copy(g.hosts, t.hosts)
	l.tab.Store(g)
	peers := make([]*peer, n)
	copy(peers, l.peers)
	l.peers = peers
}

// linkHooks are the engine's answers to what links cannot decide alone. Each is called
// with mu held.
type linkHooks struct {
	// failed fails p with err, and every operation that waits on it (peerFailedLocked).
	failed func(p *peer, err error)
	// ready runs once p is connected: its fast box and queue join the poller, and its
	// out queue drains.
	ready func(p *peer)
	// refusal is the error every call fails with now (checkLocked), and whether the job
	// is aborting.
	refusal func() (err error, aborting bool)
	// devices runs once a device opened after Init (grow.go): the poller must take it.
	devices func()
}

// init readies links for rank of size ranks on host, guarded by mu.
func (l *links) init(mu *engineLock, cfg *config, stop context.Context, rank, size int, host string, hooks linkHooks) {
	l.mu, l.cfg, l.stop, l.hooks = mu, cfg, stop, hooks
	l.rank, l.size = rank, size
	t := &rankTable{cards: make([]card, size), cardOK: make([]bool, size), hosts: make([]string, size)}
	t.hosts[rank] = host
	l.tab.Store(t)
	l.peers = make([]*peer, size)
	l.cm.rank, l.cm.size, l.cm.stop, l.cm.answer = rank, size, stop, l.answerCM
	l.cm.opened = make(chan struct{})
}

// liveDevsLocked returns the devices the poller may poll, as a bit set of l.devs indexes,
// so that the spin outside mu reads no field that mu guards.
func (l *links) liveDevsLocked() uint64 {
	var live uint64
	for i, d := range l.devs {
		if !d.closed && !d.broken && i < 64 {
			live |= 1 << i
		}
	}
	return live
}
