package launcher

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// clusterLabel is prefixed to every gossip packet and stream (and authenticated as GCM
// associated data), so that a gorma cluster never mixes with another memberlist cluster,
// even one that happens to share the key.
const clusterLabel = "gorma"

// Failure detection. memberlist probes one member per ProbeInterval; a probe fails after
// ProbeInterval (direct ping for ProbeTimeout, then indirect pings and a TCP ping); the
// member is then suspected for SuspicionMult*max(1,log10(n))*ProbeInterval = 600 ms (up to
// SuspicionMaxTimeoutMult times that, 1.2 s, until another member confirms the suspicion),
// and declared dead, which gossip (every GossipInterval) spreads in tens of ms. A dead
// agent is thus declared dead about 1-2 s after it stops answering (the first probe of it
// comes within about one interval, as every member probes). A suspected member that is
// alive refutes within a few gossip rounds (50 ms each), far inside its 600 ms, so a busy
// but live agent is not declared dead: that is the margin against false positives. The
// defaults (1 s interval, 500 ms timeout, SuspicionMult 4) take about 5 s. A killed agent
// is seen faster still, through its control connection (EOF); memberlist is what catches
// a cut link or a hung host.
const (
	probeInterval     = 200 * time.Millisecond
	probeTimeout      = 100 * time.Millisecond
	suspicionMult     = 3
	suspicionMaxMult  = 2
	gossipInterval    = 50 * time.Millisecond
	streamTimeout     = 2 * time.Second
	pushPullInterval  = 15 * time.Second
	deadReclaimTime   = 2 * time.Second
	gossipToDeadTime  = 5 * time.Second
	leaveTimeout      = 500 * time.Millisecond
	maxMetaSize       = memberlist.MetaMaxSize
	metaPrefixVersion = "v="
)

// NodeMeta is an agent's memberlist metadata: what a submitter needs to place ranks on it
// and reach it. A submitter advertises Slots 0 and no Control address.
type NodeMeta struct {
	Version int    // control protocol version (controlVersion)
	Slots   int    // ranks the agent runs
	Control string // control listener host:port, "" when Slots is 0
}

// Encode formats m as `v=1 slots=4 ctl=10.0.0.2:41234`.
func (m NodeMeta) Encode() []byte {
	s := fmt.Sprintf("v=%d slots=%d", m.Version, m.Slots)
	if m.Control != "" {
		s += " ctl=" + m.Control
	}
	return []byte(s)
}

// DecodeMeta parses node metadata. Unknown keys are ignored (later versions may add
// some); a missing or repeated key, a bad number or address, or metadata that does not
// fit memberlist's limit is an error.
func DecodeMeta(b []byte) (NodeMeta, error) {
	var m NodeMeta
	if len(b) > maxMetaSize {
		return m, fmt.Errorf("node metadata of %d bytes exceeds %d", len(b), maxMetaSize)
	}
	if !bytes.HasPrefix(b, []byte(metaPrefixVersion)) {
		return m, fmt.Errorf("node metadata %q is not a gorma agent's", truncate(string(b), 40))
	}
	seen := map[string]bool{}
	for _, f := range strings.Fields(string(b)) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return NodeMeta{}, fmt.Errorf("node metadata: field %q is not key=value", truncate(f, 40))
		}
		if seen[k] {
			return NodeMeta{}, fmt.Errorf("node metadata: %q repeated", truncate(k, 40))
		}
		seen[k] = true
		var err error
		switch k {
		case "v":
			m.Version, err = strconv.Atoi(v)
			if err == nil && m.Version < 1 {
				err = fmt.Errorf("version %d", m.Version)
			}
		case "slots":
			m.Slots, err = strconv.Atoi(v)
			if err == nil && (m.Slots < 0 || m.Slots > maxSlots) {
				err = fmt.Errorf("slots %d out of range", m.Slots)
			}
		case "ctl":
			err = checkHostPort(v)
			if _, port, _ := net.SplitHostPort(v); err == nil && strings.Trim(port, "0") == "" {
				err = fmt.Errorf("port 0")
			}
			m.Control = v
		}
		if err != nil {
			return NodeMeta{}, fmt.Errorf("node metadata: %s=%q: %v", k, truncate(v, 40), err)
		}
	}
	if !seen["slots"] {
		return NodeMeta{}, fmt.Errorf("node metadata without slots")
	}
	if m.Slots > 0 && m.Control == "" {
		return NodeMeta{}, fmt.Errorf("node metadata: %d slots but no control address", m.Slots)
	}
	return m, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// ParseKey reads a cluster key from a keyfile's contents: 32, 48 or 64 hex digits (with
// surrounding white space), or exactly 16, 24 or 32 raw bytes. Hex wins when both fit.
func ParseKey(data []byte) ([]byte, error) {
	if h := bytes.TrimSpace(data); len(h) > 0 {
		k := make([]byte, hex.DecodedLen(len(h)))
		if _, err := hex.Decode(k, h); err == nil && validKeyLen(len(k)) {
			return k, nil
		}
	}
	if validKeyLen(len(data)) {
		return bytes.Clone(data), nil
	}
	return nil, fmt.Errorf("want a 16, 24 or 32-byte key, raw or as 32, 48 or 64 hex digits; got %d bytes "+
		"(make one with: head -c 32 /dev/urandom | xxd -p -c 64 > FILE; chmod 600 FILE)", len(data))
}

func validKeyLen(n int) bool { return n == 16 || n == 24 || n == 32 }

// LoadKey reads and parses the keyfile at path. It refuses a file that others may read.
func LoadKey(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("keyfile: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("keyfile %s is accessible by others (mode %04o); chmod 600 %s", path, st.Mode().Perm(), path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("keyfile: %w", err)
	}
	k, err := ParseKey(data)
	if err != nil {
		return nil, fmt.Errorf("keyfile %s: %w", path, err)
	}
	return k, nil
}

// clusterConfig describes one memberlist member.
type clusterConfig struct {
	Name      string
	Bind      string // host:port, port 0 picks one
	Advertise string // IP to advertise, "" for the default
	Key       []byte
	Meta      NodeMeta
	Log       io.Writer // memberlist's log lines; nil discards them
	Debug     bool      // keep [DEBUG] lines
}

// member is a live cluster member as a submitter sees it.
type member struct {
	Name    string
	Addr    string // gossip address
	IP      string // gossip IP
	Meta    NodeMeta
	MetaErr error // the metadata did not decode (not a compatible agent)
}

// cluster is this process's memberlist membership. Its methods are safe for concurrent
// use. memberlist calls the delegates from its own goroutines: the event delegate keeps
// a copy of every live member (memberlist's own Node structs are updated in place under
// its lock, so reading them outside a callback would race) and hands leave events to
// subscribers through buffered channels, never blocking memberlist.
type cluster struct {
	ml      *memberlist.Memberlist
	self    string
	stopped sync.Once

	mu    sync.Mutex
	meta  []byte
	nodes map[string]member // live members, copied in the event callbacks
	subs  map[chan leaveEvent]struct{}
	taken string // gossip address of another live member with this member's name
}

// leaveEvent is a member that left (gracefully) or was declared dead.
type leaveEvent struct {
	Name string
	Left bool // it said goodbye; otherwise memberlist declared it dead
}

func (e leaveEvent) how() string {
	if e.Left {
		return "left the cluster"
	}
	return "declared dead by memberlist (no answer to probes)"
}

// newCluster creates the member (a cluster of one until it joins another).
func newCluster(cfg clusterConfig) (*cluster, error) {
	host, port, err := net.SplitHostPort(cfg.Bind)
	if err != nil {
		return nil, fmt.Errorf("gossip bind address %q: %w", cfg.Bind, err)
	}
	portNum, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("gossip bind port %q: %w", port, err)
	}
	keyring, err := memberlist.NewKeyring(nil, cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("cluster key: %w", err)
	}
	c := &cluster{self: cfg.Name, meta: cfg.Meta.Encode(), nodes: make(map[string]member),
		subs: make(map[chan leaveEvent]struct{})}
	if len(c.meta) > maxMetaSize {
		return nil, fmt.Errorf("node metadata of %d bytes exceeds %d", len(c.meta), maxMetaSize)
	}
	mc := tunedConfig()
	mc.Name = cfg.Name
	mc.BindAddr, mc.BindPort = host, portNum
	if cfg.Advertise != "" {
		mc.AdvertiseAddr, mc.AdvertisePort = cfg.Advertise, portNum
	}
	mc.Label = clusterLabel
	mc.Keyring = keyring
	mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = true, true
	mc.Delegate = (*metaDelegate)(c)
	mc.Events = (*eventDelegate)(c)
	mc.Conflict = (*conflictDelegate)(c)
	mc.Logger = log.New(&logFilter{w: cfg.Log, debug: cfg.Debug}, "", log.LstdFlags)
	ml, err := memberlist.Create(mc)
	if err != nil {
		return nil, fmt.Errorf("gossip on %s: %w", cfg.Bind, err)
	}
	c.ml = ml
	return c, nil
}

// tunedConfig is memberlist's LAN configuration with the detection timing above.
func tunedConfig() *memberlist.Config {
	mc := memberlist.DefaultLANConfig()
	mc.ProbeInterval = probeInterval
	mc.ProbeTimeout = probeTimeout
	mc.SuspicionMult = suspicionMult
	mc.SuspicionMaxTimeoutMult = suspicionMaxMult
	mc.GossipInterval = gossipInterval
	mc.TCPTimeout = streamTimeout
	mc.PushPullInterval = pushPullInterval
	mc.DeadNodeReclaimTime = deadReclaimTime
	mc.GossipToTheDeadTime = gossipToDeadTime
	return mc
}

// join contacts the given members and merges their view of the cluster. It does not wait
// for gossip to converge: what the contacted members know is what the caller gets.
func (c *cluster) join(addrs []string) error {
	n, err := c.ml.Join(addrs)
	if n == 0 {
		why := "no member answered"
		if me, ok := err.(interface{ WrappedErrors() []error }); ok {
			var msgs []string
			for _, e := range me.WrappedErrors() {
				msgs = append(msgs, e.Error())
			}
			why = strings.Join(msgs, "; ")
		} else if err != nil {
			why = err.Error()
		}
		return fmt.Errorf("join %s: %s (is an agent running there, with the same key?)", strings.Join(addrs, ","), why)
	}
	return nil
}

// members returns the live members, sorted by name.
func (c *cluster) members() []member {
	c.mu.Lock()
	out := make([]member, 0, len(c.nodes))
	for _, m := range c.nodes {
		out = append(out, m)
	}
	c.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// addr is this member's advertised gossip address.
func (c *cluster) addr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[c.self].Addr
}

// advertiseIP is this member's advertised IP.
func (c *cluster) advertiseIP() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[c.self].IP
}

// setMeta replaces this member's metadata (the caller then calls ml.UpdateNode).
func (c *cluster) setMeta(m NodeMeta) {
	c.mu.Lock()
	c.meta = m.Encode()
	c.mu.Unlock()
}

func (c *cluster) currentMeta() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.meta
}

// watchLeaves returns a channel of the members that leave or are declared dead from now
// on, and a function that ends the subscription (the channel is then closed).
func (c *cluster) watchLeaves() (<-chan leaveEvent, func()) {
	ch := make(chan leaveEvent, 64)
	c.mu.Lock()
	c.subs[ch] = struct{}{}
	c.mu.Unlock()
	return ch, func() {
		c.mu.Lock()
		if _, ok := c.subs[ch]; ok {
			delete(c.subs, ch)
			close(ch)
		}
		c.mu.Unlock()
	}
}

// close leaves the cluster (telling the others, for at most leaveTimeout) and stops.
func (c *cluster) close() {
	c.stopped.Do(func() {
		_ = c.ml.Leave(leaveTimeout)
		_ = c.ml.Shutdown()
	})
}

// nameTaken returns the gossip address of a live member with this member's name at
// another address, "" when none was seen. memberlist keeps the first member it knew by a
// name and only logs the newcomer's conflicting address; a newcomer that stayed would
// confuse -H and the rank table, and its gossip and its goodbye in that name get the live
// member declared dead or gone, aborting its jobs (TestNetnsClusterMisuse). A joiner
// learns the cluster's members during join, so checking right after join catches the
// clash.
func (c *cluster) nameTaken() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.taken
}

// vanish stops without a goodbye, as a crashed host would (tests).
func (c *cluster) vanish() {
	c.stopped.Do(func() { _ = c.ml.Shutdown() })
}

// metaDelegate serves this member's metadata; memberlist calls it from its goroutines.
type metaDelegate cluster

func (d *metaDelegate) NodeMeta(limit int) []byte {
	m := (*cluster)(d).currentMeta()
	if len(m) > limit {
		return nil
	}
	return m
}
func (d *metaDelegate) NotifyMsg([]byte)                {}
func (d *metaDelegate) GetBroadcasts(int, int) [][]byte { return nil }
func (d *metaDelegate) LocalState(bool) []byte          { return nil }
func (d *metaDelegate) MergeRemoteState([]byte, bool)   {}

// eventDelegate keeps the member table and forwards leaves and deaths to the
// subscribers. memberlist calls it from one goroutine at a time, under its node lock (so
// reading the Node here is safe); a full subscriber channel drops the event (64 pending
// leaves means the subscriber is long past caring).
type eventDelegate cluster

func (d *eventDelegate) NotifyJoin(n *memberlist.Node)   { d.store(n) }
func (d *eventDelegate) NotifyUpdate(n *memberlist.Node) { d.store(n) }

func (d *eventDelegate) store(n *memberlist.Node) {
	m := member{Name: n.Name, Addr: n.Address(), IP: n.Addr.String()}
	m.Meta, m.MetaErr = DecodeMeta(n.Meta)
	d.mu.Lock()
	d.nodes[n.Name] = m
	d.mu.Unlock()
}

func (d *eventDelegate) NotifyLeave(n *memberlist.Node) {
	ev := leaveEvent{Name: n.Name, Left: n.State == memberlist.StateLeft}
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.nodes, n.Name)
	for ch := range d.subs {
		select {
		case ch <- ev:
		default:
		}
	}
}

// conflictDelegate records a live member that has this member's name at another address
// (see nameTaken). memberlist calls it under its node lock.
type conflictDelegate cluster

func (d *conflictDelegate) NotifyConflict(existing, other *memberlist.Node) {
	if existing.Name != d.self {
		return
	}
	d.mu.Lock()
	if d.taken == "" {
		d.taken = other.Address()
	}
	d.mu.Unlock()
}

// logFilter passes memberlist's log lines to w, without [DEBUG] lines unless debug.
type logFilter struct {
	w     io.Writer
	debug bool
}

func (f *logFilter) Write(p []byte) (int, error) {
	if f.w == nil || !f.debug && bytes.Contains(p, []byte("[DEBUG]")) {
		return len(p), nil
	}
	return f.w.Write(p)
}
