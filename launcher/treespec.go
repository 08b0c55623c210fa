package launcher

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"time"
)

// The job's spec down the agent tree (tree.go). The spec names every host, so it is
// O(A) bytes. Sent to each of A agents, it would put O(A²) bytes through the submitter.
// With a fan-out k (jobSpec.Fanout) and more than k agents, the submitter sends the
// whole spec only to its k children in the tree, and every other agent a small job
// reference (fJobTree: the id and the agent's host index). An agent that holds the spec
// dials each of its children (jobSpec.Addrs) with the cluster's handshake and sends it
// the spec's bytes as they came (fTreeSpec), before it answers ready. An agent with a
// reference waits for those bytes from its parent, within jobSetupTimeout.
//
// So the submitter sends k specs and A references: O(k·A) bytes. An interior agent
// receives one spec and sends k. A job is set up in d = ⌈log_k(A+1)⌉ hops. An agent that
// cannot pass the spec on refuses the job, naming the child; its children's setups are
// then cancelled with the job.

// jobTreeMsg is an agent's reference to a job whose spec reaches it down the tree.
type jobTreeMsg struct {
	ID   string
	Node int // the agent's index in the roster's hosts
}

// defaultFanout is the agent tree's fan-out when golaunch is not told
// (--tree-fanout): three levels hold 4,095 agents.
const defaultFanout = 16

// specSlot is where a spec from the tree and the submitter's reference to it meet: the
// first to arrive makes the slot; done closes when the spec is in.
type specSlot struct {
	done  chan struct{}
	raw   []byte
	spec  *jobSpec
	since time.Time
}

// treeSpecs is an agent's table of specs in flight down the tree, by job id.
type treeSpecs struct {
	mu    sync.Mutex
	slots map[string]*specSlot
}

// slot returns the slot of job id, made if need be. Slots older than jobSetupTimeout,
// whose job never came, are dropped.
func (ts *treeSpecs) slot(id string) *specSlot {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.slots == nil {
		ts.slots = make(map[string]*specSlot)
	}
	for k, s := range ts.slots {
		if time.Since(s.since) > 2*jobSetupTimeout {
			delete(ts.slots, k)
		}
	}
	s := ts.slots[id]
	if s == nil {
		s = &specSlot{done: make(chan struct{}), since: time.Now()}
		ts.slots[id] = s
	}
	return s
}

// drop forgets job id's slot.
func (ts *treeSpecs) drop(id string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	delete(ts.slots, id)
}

// treeSpecArrived takes a spec that the agent's parent in a job's tree sent (the first
// frame on a connection, body p).
func (a *Agent) treeSpecArrived(p []byte) error {
	var spec jobSpec
	if err := spec.UnmarshalBinary(p); err != nil {
		return fmt.Errorf("%v frame: %w", fTreeSpec, err)
	}
	if spec.ID == "" {
		return fmt.Errorf("%v frame without a job id", fTreeSpec)
	}
	s := a.specs.slot(spec.ID)
	a.specs.mu.Lock()
	defer a.specs.mu.Unlock()
	if s.spec == nil {
		s.raw, s.spec = p, &spec
		close(s.done)
	}
	return nil
}

// jobFromTree waits for the spec of the job that ref names to come down the tree, and
// returns it as ref's agent runs it, with the spec's bytes.
func (a *Agent) jobFromTree(ref *jobTreeMsg) (*jobSpec, []byte, error) {
	s := a.specs.slot(ref.ID)
	defer a.specs.drop(ref.ID)
	select {
	case <-s.done:
	case <-time.After(jobSetupTimeout):
		return nil, nil, fmt.Errorf("agent %s: job %s: its spec did not come from the agent's parent in the job's tree within %v",
			a.name, truncate(ref.ID, 40), jobSetupTimeout)
	}
	spec := *s.spec
	spec.Node = ref.Node
	return &spec, s.raw, nil
}

// passSpec sends raw, the bytes of spec, to the agent's children in the job's tree, all
// at once, and returns the first failure, naming the child.
func (a *Agent) passSpec(spec *jobSpec, raw []byte, tm ctlTiming) error {
	if spec.Fanout < 2 || len(spec.Addrs) != len(spec.Roster.Hosts) {
		return nil
	}
	kids := newTree(len(spec.Roster.Hosts), spec.Fanout).children(nil, treePos(spec.Node))
	errs := make(chan error, len(kids))
	for _, p := range kids {
		host := treeHost(p)
		go func() {
			err := sendTreeSpec(spec.Addrs[host], a.ckey, tm, raw)
			if err != nil {
				err = fmt.Errorf("agent %s could not pass the job to agent %s, its child in the job's tree: %v (is the agent up, and its control port %s reachable from %s?)",
					a.name, spec.Roster.Hosts[host], err, spec.Addrs[host], a.name)
			}
			errs <- err
		}()
	}
	var first error
	for range kids {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first == nil && len(kids) > 0 {
		names := make([]string, len(kids))
		for i, p := range kids {
			names[i] = spec.Roster.Hosts[treeHost(p)]
		}
		a.log.Printf("job %s: passed its spec to %s (the job's tree)", spec.ID, strings.Join(names, ", "))
	}
	return first
}

// sendTreeSpec dials addr and sends the spec's bytes as the connection's only frame.
func sendTreeSpec(addr string, key []byte, tm ctlTiming, raw []byte) error {
	cc, err := dialControl(addr, key, tm)
	if err != nil {
		return err
	}
	defer cc.close()
	return cc.send(fTreeSpec, raw)
}

// jobOf returns the spec of the job that a submitter's first frame (t, p) names: an fJob
// frame holds it, an fJobTree frame refers to the spec that comes down the tree. It
// returns the spec's bytes too, for the agent's children in the tree.
func (a *Agent) jobOf(t frameType, p []byte) (*jobSpec, []byte, error) {
	v, err := decodeBody(t, p)
	if err != nil {
		return nil, nil, err
	}
	if t == fJob {
		return v.(*jobSpec), bytes.Clone(p), nil
	}
	return a.jobFromTree(v.(*jobTreeMsg))
}
