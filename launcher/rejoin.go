package launcher

import (
	"encoding/hex"
	"log"
	"net"
	"time"

	"github.com/hashicorp/memberlist"
)

// Keeping the cluster whole. memberlist never contacts a member it declared dead or that
// left: it neither probes it nor pushes its state to it. So an agent restarted at its
// address without --join (the seed, typically) would stay a cluster of one for ever, and
// the others a cluster without it. And an agent whose link came back after it was
// declared dead would stay outside. memberlist does contact an address it still believes
// live. But an agent restarted there before its death was noticed answers the probes
// (same name) while knowing no member, until a periodic push-pull happens to pick it
// (pushPullInterval, 15 s or more). Each agent therefore runs a rejoin loop (keepJoined)
// that joins, every rejoinInterval and at once when woken:
//
//   - the gossip address of every agent that departed (left or declared dead) and has not
//     come back, first after rejoinInterval and then at a gap of a tenth of its absence
//     (at least rejoinInterval, at most maxRejoinGap), for agentMemory;
//   - its own --join addresses, while no other agent is live (it was cut off, or every
//     other agent restarted);
//   - the address of a live member whose ack carried another boot id than its metadata:
//     the process there restarted (every member puts a random boot id in its metadata and
//     in its acks);
//   - a live agent, when this member has had live peers for unprobedAfter and none has
//     probed it for as long: the cluster has lost it (it was declared dead, or its name
//     went to another agent) without it noticing.
//
// Joining is a push-pull of the whole state. The member there learns every live member,
// refutes the death or departure recorded for it in the state it receives, and its new
// incarnation (and metadata) spread by gossip within a few 50 ms rounds. A restarted
// agent is thus back in every member's list within about rejoinInterval of answering (of
// being probed, when it restarted before its death was noticed); one that was away for a
// time T, within T/10 (at most maxRejoinGap).
//
// Name clashes. memberlist probes one address per name. Two agents that end up with one
// name after both joined (one was cut off, declared dead and replaced, and came back; or
// two clusters merged) both see the clash (NotifyConflict). The one that the cluster does
// not probe any more (unprobed) is not the cluster's member of that name, and gives up
// exactly as an agent whose name is taken at join does (AgentMain: exit 125 without a
// goodbye, which would make the cluster drop the name's live owner). The other keeps the
// name. An agent without live peers for unprobedAfter cannot tell, and keeps running.
// Only UDP probes count (memberlist's TCP fallback pings carry no ack payload): where UDP
// between agents is blocked, which memberlist's gossip does not survive either, an agent
// counts as unprobed.
const (
	rejoinInterval = time.Second        // period of the rejoin loop
	maxRejoinGap   = time.Minute        // longest gap between two tries of a departed agent
	agentMemory    = 24 * time.Hour     // how long a departed agent's address is tried
	memberMemory   = time.Minute        // how long other departures are kept (watchLeaves)
	unprobedAfter  = 15 * probeInterval // no probe for this long: the cluster lost this member
	maxRejoinTries = 16                 // addresses joined in one round of the loop
)

// pingDelegate stamps this member's acks with its boot id and compares the boot ids in
// the acks of the members it probes with their metadata. memberlist calls it from its
// probe and packet goroutines; AckPayload takes no lock, NotifyPingComplete takes
// cluster.mu (the Node is the probe's own copy).
type pingDelegate cluster

func (d *pingDelegate) AckPayload() []byte {
	d.lastPing.Store(time.Now().UnixNano())
	return d.boot
}

func (d *pingDelegate) NotifyPingComplete(other *memberlist.Node, _ time.Duration, payload []byte) {
	if len(payload) == 0 {
		return // an older agent's ack
	}
	boot := hex.EncodeToString(payload)
	d.mu.Lock()
	defer d.mu.Unlock()
	if m, ok := d.nodes[other.Name]; ok && m.Meta.Boot != "" && m.Meta.Boot != boot {
		d.restarted[other.Address()] = true
		select {
		case d.nudge <- struct{}{}:
		default:
		}
	}
}

// unprobed reports whether a member that has had live peers since peersSince (zero: it
// has none) and acked its last ping at lastPing has been left alone by the cluster's
// failure detector for unprobedAfter at now. Every live member probes one member per
// probeInterval, in a shuffled round over the others, so the member a cluster knows is
// probed about once per probeInterval.
func unprobed(now, peersSince, lastPing time.Time) bool {
	return !peersSince.IsZero() && now.Sub(peersSince) >= unprobedAfter && now.Sub(lastPing) >= unprobedAfter
}

func (c *cluster) unprobedLocked(now time.Time) bool {
	return unprobed(now, c.peersSince, time.Unix(0, c.lastPing.Load()))
}

// nameClash records a live member at other with this member's name. When the cluster
// does not probe this member, the name is the other's: clashes() then delivers other,
// once. Called under memberlist's node lock; never blocks.
func (c *cluster) nameClash(other string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.taken == "" {
		c.taken = other
	}
	if c.unprobedLocked(time.Now()) {
		select {
		case c.clash <- other:
		default:
		}
	}
}

// clashes delivers the address of an agent that holds this member's name in the cluster's
// eyes (see nameClash).
func (c *cluster) clashes() <-chan string { return c.clash }

// pruneDepartedLocked forgets the departed agents after agentMemory and other departed
// members (submitters) after memberMemory.
func (c *cluster) pruneDepartedLocked(now time.Time) {
	for name, d := range c.departed {
		if now.Sub(d.at) > memberMemory && (!d.agent || now.Sub(d.at) > agentMemory) {
			delete(c.departed, name)
		}
	}
}

func (c *cluster) hasPeersLocked() bool {
	for n := range c.nodes {
		if n != c.self {
			return true
		}
	}
	return false
}

// rejoinTarget is an address the rejoin loop joins, and why.
type rejoinTarget struct {
	addr, why string
}

// rejoinTargets returns what the rejoin loop joins now (see the comment at the top),
// without the --join addresses, and whether no other agent is live (then the caller adds
// them).
func (c *cluster) rejoinTargets(now time.Time) (targets []rejoinTarget, alone bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	live := make(map[string]bool, len(c.nodes))
	var agents []string
	for _, m := range c.nodes {
		live[m.Addr] = true
		if m.Name != c.self && m.Meta.Slots > 0 {
			agents = append(agents, m.Addr)
		}
	}
	c.pruneDepartedLocked(now)
	for name, d := range c.departed {
		if d.agent && !live[d.addr] && !now.Before(d.next) {
			d.next = now.Add(min(max(now.Sub(d.at)/10, rejoinInterval), maxRejoinGap))
			c.departed[name] = d
			targets = append(targets, rejoinTarget{d.addr, "agent " + name + " " + d.ev.how()})
		}
	}
	for addr := range c.restarted {
		targets = append(targets, rejoinTarget{addr, "its agent restarted"})
		delete(c.restarted, addr)
	}
	if len(agents) > 0 && c.unprobedLocked(now) && now.Sub(c.unprobedJoin) >= unprobedAfter {
		c.unprobedJoin = now
		targets = append(targets, rejoinTarget{agents[0], "the cluster stopped probing this agent"})
	}
	return targets, len(agents) == 0
}

// keepJoined starts the rejoin loop of an agent that was started with the --join
// addresses join (none for the seed). The loop ends when the member stops.
func (c *cluster) keepJoined(join []string, lg *log.Logger) {
	c.loop.Add(1)
	go func() {
		defer c.loop.Done()
		tick := time.NewTicker(rejoinInterval)
		defer tick.Stop()
		for {
			select {
			case <-c.quit:
				return
			case <-tick.C:
			case <-c.nudge:
			}
			targets, alone := c.rejoinTargets(time.Now())
			if alone {
				self := c.addr()
				for _, a := range join {
					if ta, err := net.ResolveTCPAddr("tcp", a); err == nil {
						a = ta.String()
					}
					if a != self {
						targets = append(targets, rejoinTarget{a, "no other agent is live"})
					}
				}
			}
			seen := map[string]bool{}
			for _, t := range targets {
				if seen[t.addr] || len(seen) == maxRejoinTries {
					continue
				}
				seen[t.addr] = true
				select {
				case <-c.quit:
					return
				default:
				}
				// A failure is memberlist's [DEBUG] line (golaunch agent -v): a departed
				// agent's address is tried for a day.
				if n, _ := c.ml.Join([]string{t.addr}); n > 0 {
					lg.Printf("joined %s (%s): %d members", t.addr, t.why, len(c.members()))
				}
			}
		}
	}()
}
