package launcher

import (
	"encoding/binary"
	"fmt"
	"sync"
	"time"
)

// A gathering fence round down the agent tree (tree.go). A gathering round's payload
// (fencewire.go) holds every rank's puts, O(N) bytes. Sent to each of A agents it would
// put O(A·N) bytes through the submitter. So, in a job whose spec has a fan-out k
// (jobSpec.Fanout), the submitter sends the whole payload only to the agents it is the
// parent of in the tree, and every other agent a reference: the round's number
// (fFenceRef). An agent that holds a payload passes its bytes on to its children in the
// tree, over one link per child that it dials on first use (fTreeFence). A round with no
// gathered puts (a gorma rank's barrier) costs O(1) bytes, and goes to every agent
// straight from the submitter.
//
// The tree is the static one: an agent passes to the children tree.go gives it with no
// dead node. An agent whose parent the submitter has lost gets the payload from the
// submitter, and passes it on. An agent holding a reference asks the submitter for the
// payload (fFenceAsk) when its parent is reported lost, or when the payload has not
// come treeFenceWait after the reference. A payload that comes twice completes nothing
// twice (pmi.Exchange.Complete), and is passed on once.
//
// So a gathering round costs the submitter A fence frames in (O(N) bytes: every card
// once), k payloads and A − k references out. An interior agent receives one payload and
// sends k: O(k·N) bytes at any node. The payload reaches every agent in
// d = ⌈log_k(A+1)⌉ hops.

// treeFenceWait is how long an agent holding a reference waits for the round's payload
// from its parent before it asks the submitter.
const treeFenceWait = 3 * time.Second

// Where a round's payload came from, as fenceDone logs it.
const (
	fromSubmitter = "golaunch"
	fromParent    = "its parent in the job's tree"
)

// treeFence is an agent job's part of gathering rounds on the job's tree.
type treeFence struct {
	mu         sync.Mutex
	done       int                // the highest round completed here by a fence-done payload
	want       int                // the round of a reference whose payload has not come; 0: none
	asked      int                // the highest round asked of the submitter
	timer      *time.Timer        // fires askFence for want
	parentLost bool               // the submitter reported this agent's parent lost
	kids       map[int]*ownerLink // links to the children, by host index
	parents    map[*ctlConn]bool  // links on which a parent passes payloads
	shut       bool               // the job ended: no more links
}

// treeParent returns the roster host index of this agent's parent in the job's static
// tree, or -1 when its parent is the submitter or the job has no tree.
func (j *agentJob) treeParent() int {
	if !j.inTree() {
		return -1
	}
	p := newTree(len(j.spec.Roster.Hosts), j.spec.Fanout).parent(treePos(j.spec.Node))
	if p == 0 {
		return -1
	}
	return treeHost(p)
}

// inTree reports whether this agent is a node of the job's tree: the job has a fan-out,
// and the agent is one of the hosts the job started on (a spawn's fresh agent is not).
func (j *agentJob) inTree() bool {
	return j.spec.Fanout >= 2 && len(j.spec.Addrs) == len(j.spec.Roster.Hosts) && j.spec.Node < len(j.spec.Roster.Hosts)
}

// fenceDone completes round m.Round with its payload p, which came from the submitter
// or from this agent's parent in the tree (from names which, in the agent's log). A
// gathering round's payload goes on to this agent's children first, as it came, and is
// decoded here after. p is not kept.
func (j *agentJob) fenceDone(p []byte, m *fenceDone, from string) error {
	t := &j.tree
	t.mu.Lock()
	if m.Round <= t.done {
		t.mu.Unlock()
		return nil // it came both from the parent and from the submitter
	}
	t.done = m.Round
	if len(m.Blocks) > 0 {
		j.a.log.Printf("job %s: round %d's gathering payload came from %s", j.spec.ID, m.Round, from)
	}
	if t.want <= m.Round {
		t.want = 0
		if t.timer != nil {
			t.timer.Stop()
			t.timer = nil
		}
	}
	if len(m.Blocks) > 0 && j.inTree() && !t.shut {
		kids := newTree(len(j.spec.Roster.Hosts), j.spec.Fanout).children(nil, treePos(j.spec.Node))
		if len(kids) > 0 {
			body := appendTreeFence(nil, j.spec.ID, p)
			for _, c := range kids {
				go j.passFence(treeHost(c), body)
			}
		}
	}
	t.mu.Unlock()
	roster, _ := j.rosterNow()
	puts, err := m.puts(roster.Size)
	if err != nil {
		return err
	}
	j.x.Complete(m.Round, puts)
	return nil
}

// fenceRef takes the submitter's word that round completed, its payload coming down the
// tree. The agent asks the submitter for it when its parent is lost, or when it has not
// come within treeFenceWait.
func (j *agentJob) fenceRef(round int) {
	t := &j.tree
	t.mu.Lock()
	if round <= t.done || t.shut {
		t.mu.Unlock()
		return
	}
	t.want = round
	if t.parentLost {
		ask := t.askLocked()
		t.mu.Unlock()
		j.askFence(ask)
		return
	}
	if t.timer != nil {
		t.timer.Stop()
	}
	t.timer = time.AfterFunc(treeFenceWait, func() {
		t.mu.Lock()
		ask := 0
		if t.want == round {
			ask = t.askLocked()
		}
		t.mu.Unlock()
		if ask > 0 {
			j.a.log.Printf("job %s: round %d's payload did not come from the agent's parent in the job's tree within %v; asking the submitter",
				j.spec.ID, round, treeFenceWait)
		}
		j.askFence(ask)
	})
	t.mu.Unlock()
}

// askLocked returns the round whose payload to ask the submitter for, once, or 0; the
// caller holds t.mu.
func (t *treeFence) askLocked() int {
	if t.want == 0 || t.want <= t.done || t.asked >= t.want {
		return 0
	}
	t.asked = t.want
	return t.want
}

// askFence asks the submitter for round's payload (fFenceAsk); round 0 asks nothing.
// A lost submitter ends the job, so a failed send needs no answer here.
func (j *agentJob) askFence(round int) {
	if round > 0 {
		j.send(fFenceAsk, binary.AppendUvarint(nil, uint64(round)))
	}
}

// treeHostLost notes that the submitter lost host: when it is this agent's parent in
// the tree, the payloads of gathering rounds come from the submitter from now on.
func (j *agentJob) treeHostLost(host string) {
	p := j.treeParent()
	if p < 0 || j.spec.Roster.Hosts[p] != host {
		return
	}
	t := &j.tree
	t.mu.Lock()
	t.parentLost = true
	ask := t.askLocked()
	t.mu.Unlock()
	j.askFence(ask)
}

// passFence sends body, an fTreeFence frame's, to host, a child of this agent in the
// job's tree, dialing it on first use. A child that cannot be reached asks the
// submitter; the failure is logged.
func (j *agentJob) passFence(host int, body []byte) {
	t := &j.tree
	t.mu.Lock()
	if t.shut {
		t.mu.Unlock()
		return
	}
	if t.kids == nil {
		t.kids = map[int]*ownerLink{}
	}
	l := t.kids[host]
	if l == nil {
		l = &ownerLink{}
		t.kids[host] = l
	}
	t.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	err := func() error {
		if l.cc == nil {
			cc, err := dialControl(j.spec.Addrs[host], j.a.ckey, peerTiming())
			if err != nil {
				return err
			}
			l.cc = cc
			j.a.log.Printf("job %s: passes its gathering fences' payloads to agent %s (the job's tree)", j.spec.ID, j.spec.Roster.Hosts[host])
		}
		return l.cc.send(fTreeFence, body)
	}()
	if err != nil {
		if l.cc != nil {
			l.cc.close()
			l.cc = nil
		}
		j.a.log.Printf("job %s: could not pass a fence's payload to agent %s, a child in the job's tree: %v (it asks golaunch instead)",
			j.spec.ID, j.spec.Roster.Hosts[host], err)
	}
}

// serveTreeFences takes the payloads that this agent's parent in the tree sends on cc,
// the first being first, until the parent closes cc or the job ends.
func (j *agentJob) serveTreeFences(cc *ctlConn, first *treeFenceMsg) {
	t := &j.tree
	t.mu.Lock()
	if t.shut {
		t.mu.Unlock()
		return
	}
	if t.parents == nil {
		t.parents = map[*ctlConn]bool{}
	}
	t.parents[cc] = true
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.parents, cc)
		t.mu.Unlock()
	}()
	for m := first; ; {
		if m.Job != j.spec.ID {
			j.a.log.Printf("job %s: tree link from %s: a payload of job %s", j.spec.ID, cc.c.RemoteAddr(), truncate(m.Job, 40))
			return
		}
		d, err := decodeFenceDone(m.Done)
		if err == nil {
			err = j.fenceDone(m.Done, d, fromParent)
		}
		if err != nil {
			j.a.log.Printf("job %s: tree link from %s: %v", j.spec.ID, cc.c.RemoteAddr(), err)
			return
		}
		tf, p, err := cc.recv()
		if err != nil {
			return
		}
		v, err := decodeBody(tf, p)
		if err != nil || tf != fTreeFence {
			j.a.log.Printf("job %s: tree link from %s: unexpected %v frame (%v)", j.spec.ID, cc.c.RemoteAddr(), tf, err)
			return
		}
		m = v.(*treeFenceMsg)
	}
}

// closeTree closes the job's tree links and stops its timer; later payloads are not
// passed on.
func (j *agentJob) closeTree() {
	t := &j.tree
	t.mu.Lock()
	t.shut = true
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	kids := t.kids
	t.kids = nil
	for cc := range t.parents {
		cc.close() // its serveTreeFences returns
	}
	t.mu.Unlock()
	for _, l := range kids {
		l.mu.Lock()
		if l.cc != nil {
			l.cc.close()
			l.cc = nil
		}
		l.mu.Unlock()
	}
}

// serveTreeLink answers a connection whose first frame is fTreeFence: this agent's
// parent in a job's tree passes the job's payloads on.
func (a *Agent) serveTreeLink(cc *ctlConn, p []byte) {
	v, err := decodeBody(fTreeFence, p)
	if err != nil {
		a.log.Printf("tree link from %s: %v", cc.c.RemoteAddr(), err)
		return
	}
	m := v.(*treeFenceMsg)
	j := a.job(m.Job)
	if j == nil {
		a.log.Printf("tree link from %s: job %s does not run on agent %s", cc.c.RemoteAddr(), truncate(m.Job, 40), a.name)
		return
	}
	cc.c.SetReadDeadline(time.Time{})
	j.serveTreeFences(cc, m)
}

// treeFenceMsg is an fTreeFence frame: a job's fence-done payload, from the agent's
// parent in the job's tree. On the wire: the job id's length (a uvarint), the id, and
// the payload.
type treeFenceMsg struct {
	Job  string
	Done []byte
}

// fenceRoundMsg is an fFenceRef or an fFenceAsk frame: a round's number (a uvarint).
type fenceRoundMsg struct{ Round int }

// appendTreeFence appends the fTreeFence body of job's payload done to dst.
func appendTreeFence(dst []byte, job string, done []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(job)))
	dst = append(dst, job...)
	return append(dst, done...)
}

// maxJobID bounds a job id on the wire.
const maxJobID = 256

// decodeTreeFence decodes an fTreeFence body. Done shares p.
func decodeTreeFence(p []byte) (*treeFenceMsg, error) {
	n, k := binary.Uvarint(p)
	if k <= 0 || n == 0 || n > maxJobID || n > uint64(len(p)-k) {
		return nil, fmt.Errorf("%v frame: bad job id", fTreeFence)
	}
	return &treeFenceMsg{Job: string(p[k : k+int(n)]), Done: p[k+int(n):]}, nil
}

// decodeFenceRound decodes an fFenceRef or an fFenceAsk body of frame type t.
func decodeFenceRound(t frameType, p []byte) (*fenceRoundMsg, error) {
	v, n := binary.Uvarint(p)
	if n <= 0 || n != len(p) || v == 0 || v > maxRound {
		return nil, fmt.Errorf("%v frame: bad round", t)
	}
	return &fenceRoundMsg{Round: int(v)}, nil
}
