package launcher

import (
	"bytes"
	"crypto/rand"
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
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// clusterLabel is prefixed to every gossip packet and stream (and authenticated as GCM
// associated data), so that a gorma cluster never mixes with another memberlist cluster,
// even one that happens to share the key.
const clusterLabel = "gorma"

// Failure detection. memberlist probes one member per ProbeInterval. A probe fails after
// ProbeInterval (direct ping for ProbeTimeout, then indirect pings and a TCP ping). The
// member is then suspected for SuspicionMult*max(1,log10(n))*ProbeInterval = 600 ms (up to
// SuspicionMaxTimeoutMult times that, 1.2 s, until another member confirms the suspicion),
// and declared dead, which gossip (every GossipInterval) spreads in tens of ms. A dead
// agent is thus declared dead about 1-2 s after it stops answering (the first probe of it
// comes within about one interval, as every member probes). A suspected member that is
// alive refutes within a few gossip rounds (one GossipInterval each). memberlist's default
// LAN timing would take several times longer to declare a dead agent.
//
// Health awareness (Lifeguard) stays on. A member that misses its own probes' acks or
// must refute suspicions of itself (its host is loaded, or its own packets are late)
// stretches its probe timeouts and intervals up to awarenessMaxMult times, so that a
// slow member does not declare live ones dead. Timing this tight still declares a live
// agent dead now and then on a host under heavy load, so a verdict alone never ends a
// job: the control connection to the agent must be silent too (liveness.go). A killed
// agent is seen faster still, through its control connection (EOF); memberlist is what
// catches a cut link or a hung host. TestNetnsLoadNoFalseDeaths runs jobs with every
// core saturated and measures both.
const (
	probeInterval     = 200 * time.Millisecond
	probeTimeout      = 100 * time.Millisecond
	suspicionMult     = 3
	suspicionMaxMult  = 2
	awarenessMaxMult  = 8 // memberlist's default; 0 would turn health awareness off
	gossipInterval    = 50 * time.Millisecond
	streamTimeout     = 2 * time.Second
	pushPullInterval  = 15 * time.Second
	deadReclaimTime   = 2 * time.Second
	gossipToDeadTime  = 5 * time.Second
	leaveTimeout      = 500 * time.Millisecond
	joinSettle        = 5 * time.Second    // join's wait for a member it contacted (cluster.join)
	joinRejoinAfter   = 4 * gossipInterval // join's wait before it joins again
	maxMetaSize       = memberlist.MetaMaxSize
	metaPrefixVersion = "v="
)

// NodeMeta is an agent's memberlist metadata: what a submitter needs to place ranks on it
// and reach it. A submitter advertises Slots 0 and no Control address.
type NodeMeta struct {
	Version int    // control protocol version (controlVersion)
	Slots   int    // ranks the agent runs
	Control string // control listener host:port, "" when Slots is 0
	Boot    string // random id of the member's process (hex), also in its acks; "" if absent
	Leaving bool   // the member is saying goodbye: its departure is a leave, not a death
}

// maxBootLen bounds the boot id (hex digits) in metadata.
const maxBootLen = 32

// Encode formats m as `v=1 slots=4 ctl=10.0.0.2:41234 boot=9f2c41d07be3a815`.
func (m NodeMeta) Encode() []byte {
	s := fmt.Sprintf("v=%d slots=%d", m.Version, m.Slots)
	if m.Control != "" {
		s += " ctl=" + m.Control
	}
	if m.Boot != "" {
		s += " boot=" + m.Boot
	}
	if m.Leaving {
		s += " bye=1"
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
		case "boot":
			if _, herr := hex.DecodeString(v); herr != nil || v == "" || len(v) > maxBootLen || strings.ToLower(v) != v {
				err = fmt.Errorf("want 2 to %d lower-case hex digits", maxBootLen)
			}
			m.Boot = v
		case "bye":
			if v != "1" {
				err = fmt.Errorf("want 1")
			}
			m.Leaving = true
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
// use. memberlist calls the delegates from its own goroutines. The event delegate keeps
// a copy of every live member (memberlist's own Node structs are updated in place under
// its lock, so reading them outside a callback would race) and of the members that
// departed, and hands leave events to subscribers through buffered channels, never
// blocking memberlist. rejoin.go keeps an agent joined (keepJoined) and settles name
// clashes.
type cluster struct {
	ml      *memberlist.Memberlist
	streams *cappedTransport // ml's transport
	self    string
	boot    []byte // this process's boot id: in its metadata (hex) and in its acks
	stopped sync.Once
	quit    chan struct{}  // closed when the member stops: the rejoin loop ends
	loop    sync.WaitGroup // the rejoin loop
	nudge   chan struct{}  // wakes the rejoin loop (a restarted member was found)
	clash   chan string    // the address of an agent that won this member's name (rejoin.go)

	lastPing atomic.Int64 // when this member last acked a ping (unix ns): the cluster probes it

	mu           sync.Mutex
	meta         []byte
	nodes        map[string]member    // live members, copied in the event callbacks
	departed     map[string]departure // members that left or died, by name, until they are back
	peersSince   time.Time            // since when some other member has been live (zero: none now)
	restarted    map[string]bool      // gossip addresses of members that answered with a new boot id
	unprobedJoin time.Time            // when the rejoin loop last joined because no member probed this one
	subs         map[chan leaveEvent]map[string]bool
	taken        string            // gossip address of another live member with this member's name
	heldDead     map[string]member // agents a push-pull partner held as suspect or dead (mergeDelegate)
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

// departure is a member that left or was declared dead, as the event delegate saw it.
type departure struct {
	ev    leaveEvent
	addr  string    // its gossip address
	agent bool      // it ran ranks (Slots > 0): the rejoin loop tries its address again
	at    time.Time // when it departed
	next  time.Time // the rejoin loop's next try of its address
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
	c := &cluster{self: cfg.Name, boot: make([]byte, 8), quit: make(chan struct{}),
		nudge: make(chan struct{}, 1), clash: make(chan string, 1), nodes: make(map[string]member),
		departed: make(map[string]departure), restarted: make(map[string]bool),
		subs: make(map[chan leaveEvent]map[string]bool), heldDead: make(map[string]member)}
	if _, err := rand.Read(c.boot); err != nil {
		return nil, fmt.Errorf("boot id: %w", err)
	}
	c.setMeta(cfg.Meta)
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
	mc.Merge = (*mergeDelegate)(c)
	mc.Ping = (*pingDelegate)(c)
	gl := newGossipLog(&logFilter{w: cfg.Log, debug: cfg.Debug})
	mc.Logger = log.New(gl, "", log.LstdFlags)
	tr, err := newCappedTransport(&memberlist.NetTransportConfig{BindAddrs: []string{host}, BindPort: portNum, Logger: mc.Logger},
		func(from net.Addr) { gl.rl.note(logGossipShed, shedStream(from)) })
	if err != nil {
		return nil, fmt.Errorf("gossip on %s: %w", cfg.Bind, err)
	}
	mc.Transport, c.streams = tr, tr
	if portNum == 0 {
		mc.BindPort = tr.GetAutoBindPort()
		if cfg.Advertise != "" {
			mc.AdvertisePort = mc.BindPort
		}
	}
	ml, err := memberlist.Create(mc)
	if err != nil {
		tr.Shutdown()
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
	mc.AwarenessMaxMultiplier = awarenessMaxMult
	mc.GossipInterval = gossipInterval
	mc.TCPTimeout = streamTimeout
	mc.PushPullInterval = pushPullInterval
	mc.DeadNodeReclaimTime = deadReclaimTime
	mc.GossipToTheDeadTime = gossipToDeadTime
	return mc
}

// join contacts the given members and merges their view of the cluster. It does not wait
// for gossip to converge: what the contacted members know is what the caller gets.
//
// One wait it does make. memberlist answers joins before it has put itself in its own
// table (Create listens first, then sets the member alive). A join in that window
// succeeds and learns nobody. So a join that learned no other member waits for one, up to
// joinSettle: the contacted member gossips its own arrival, or the next Join finds it.
// A join that only named this member's own address does not wait.
func (c *cluster) join(addrs []string) error {
	wait := !c.onlySelf(addrs)
	deadline := time.Now().Add(joinSettle)
	for {
		n, err := c.ml.Join(addrs)
		if n == 0 {
			return joinError(addrs, err)
		}
		if !wait || c.awaitPeer(joinRejoinAfter) || time.Now().After(deadline) {
			return nil
		}
	}
}

// joinError says why no member answered a join.
func joinError(addrs []string, err error) error {
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

// onlySelf reports whether every address in addrs is this member's own gossip address.
func (c *cluster) onlySelf(addrs []string) bool {
	self, err := net.ResolveTCPAddr("tcp", c.addr())
	if err != nil {
		return false
	}
	for _, a := range addrs {
		ta, err := net.ResolveTCPAddr("tcp", a)
		if err != nil || !ta.IP.Equal(self.IP) || ta.Port != self.Port {
			return false
		}
	}
	return true
}

// awaitPeer waits up to d for another member in the table, and reports whether one is.
func (c *cluster) awaitPeer(d time.Duration) bool {
	for end := time.Now().Add(d); ; time.Sleep(5 * time.Millisecond) {
		c.mu.Lock()
		ok := c.hasPeersLocked()
		c.mu.Unlock()
		if ok || time.Now().After(end) {
			return ok
		}
	}
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

// setMeta replaces this member's metadata (the caller then calls ml.UpdateNode); the
// boot id is always this process's.
func (c *cluster) setMeta(m NodeMeta) {
	m.Boot = hex.EncodeToString(c.boot)
	c.mu.Lock()
	c.meta = m.Encode()
	c.mu.Unlock()
}

func (c *cluster) currentMeta() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.meta
}

// watchLeaves returns a channel of the departures (left or declared dead) of the named
// members, and a function that ends the subscription (the channel is then closed). A
// named member that has already departed, and has not come back since, is on the channel
// at once: what happened between reading the member list and subscribing is not lost.
func (c *cluster) watchLeaves(names ...string) (<-chan leaveEvent, func()) {
	ch := make(chan leaveEvent, 64)
	want := make(map[string]bool, len(names))
	c.mu.Lock()
	for _, n := range names {
		if d, ok := c.departed[n]; ok && !want[n] {
			ch <- d.ev // at most one per name: never more than the buffer for 64 names
		}
		want[n] = true
	}
	c.subs[ch] = want
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

// close leaves the cluster (telling the others, for at most twice leaveTimeout) and
// stops. memberlist's leave callback does not say whether a member left or died (the
// Node's State field is never set there), so a leaving agent first gossips metadata
// marked Leaving; the others then report its departure as a leave. (A submitter has
// ended its jobs when it leaves: it does not wait for that.)
func (c *cluster) close() {
	c.stopped.Do(func() {
		c.stopLoop()
		if m, err := DecodeMeta(c.currentMeta()); err == nil && m.Slots > 0 {
			m.Leaving = true
			c.setMeta(m)
			_ = c.ml.UpdateNode(leaveTimeout)
		}
		_ = c.ml.Leave(leaveTimeout)
		_ = c.ml.Shutdown()
	})
}

// nameTaken returns the gossip address of a live member with this member's name at
// another address, "" when none was seen. memberlist keeps the first member it knew by a
// name and only logs the newcomer's conflicting address. A newcomer that stayed would
// confuse -H and the rank table, and its gossip and its goodbye in that name get the live
// member declared dead or gone, aborting its jobs (TestNetnsClusterMisuse). A joiner
// learns the cluster's members during join, so checking right after join catches the
// clash; a clash found later is settled by nameClash (rejoin.go).
func (c *cluster) nameTaken() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.taken
}

// vanish stops without a goodbye, as a crashed host would: an agent that gives up a name
// another agent holds, and tests.
func (c *cluster) vanish() {
	c.stopped.Do(func() {
		c.stopLoop()
		_ = c.ml.Shutdown()
	})
}

// stopLoop ends the rejoin loop (if it runs) and waits for it: at most one join attempt
// (streamTimeout).
func (c *cluster) stopLoop() {
	close(c.quit)
	c.loop.Wait()
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

// eventDelegate keeps the member table and the departures, and forwards leaves and deaths
// to the subscribers. memberlist calls it from one goroutine at a time, under its node
// lock (so reading the Node here is safe). A full subscriber channel drops the event (64
// pending leaves of the members it watches means the subscriber is long past caring).
type eventDelegate cluster

func (d *eventDelegate) NotifyJoin(n *memberlist.Node)   { d.store(n) }
func (d *eventDelegate) NotifyUpdate(n *memberlist.Node) { d.store(n) }

func (d *eventDelegate) store(n *memberlist.Node) {
	m := member{Name: n.Name, Addr: n.Address(), IP: n.Addr.String()}
	m.Meta, m.MetaErr = DecodeMeta(n.Meta)
	d.mu.Lock()
	d.nodes[n.Name] = m
	delete(d.departed, n.Name)
	if n.Name != d.self && d.peersSince.IsZero() {
		d.peersSince = time.Now()
	}
	d.mu.Unlock()
}

func (d *eventDelegate) NotifyLeave(n *memberlist.Node) {
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	m, known := d.nodes[n.Name]
	ev := leaveEvent{Name: n.Name, Left: known && m.Meta.Leaving}
	delete(d.nodes, n.Name)
	if !(*cluster)(d).hasPeersLocked() {
		d.peersSince = time.Time{}
	}
	(*cluster)(d).pruneDepartedLocked(now)
	d.departed[n.Name] = departure{ev: ev, addr: n.Address(), agent: known && m.Meta.Slots > 0, at: now,
		next: now.Add(rejoinInterval)}
	for ch, want := range d.subs {
		if !want[n.Name] {
			continue
		}
		select {
		case ch <- ev:
		default:
		}
	}
}

// conflictDelegate records a live member that has this member's name at another address
// (see nameTaken), and settles the clash (rejoin.go). memberlist calls it under its node
// lock.
type conflictDelegate cluster

func (d *conflictDelegate) NotifyConflict(existing, other *memberlist.Node) {
	if existing.Name != d.self {
		return
	}
	(*cluster)(d).nameClash(other.Address())
}

// mergeDelegate records the agents that a push-pull partner holds as suspect or dead.
// memberlist drops those states for a member it never knew, so a new member (a
// submitter) learns only here that the cluster has such an agent. An alive agent that a
// loaded host declared dead refutes the verdict within seconds; startJoined waits for it
// when the job needs it. A later merge that holds the agent alive, or gone by leave,
// forgets it, so a long-lived member keeps only the current verdicts. memberlist calls
// NotifyMerge before it merges the state.
type mergeDelegate cluster

func (d *mergeDelegate) NotifyMerge(peers []*memberlist.Node) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, n := range peers {
		if n.Name == d.self {
			continue
		}
		if n.State != memberlist.StateSuspect && n.State != memberlist.StateDead {
			delete(d.heldDead, n.Name) // the partner holds it alive, or it left
			continue
		}
		meta, err := DecodeMeta(n.Meta)
		if err != nil || meta.Slots == 0 || meta.Leaving {
			continue
		}
		d.heldDead[n.Name] = member{Name: n.Name, Addr: n.Address(), IP: n.Addr.String(), Meta: meta}
	}
	return nil
}

// heldDeadAgents returns the names, sorted, of the agents a push-pull partner held as
// suspect or dead and that are not live members now.
func (c *cluster) heldDeadAgents() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for name := range c.heldDead {
		if _, live := c.nodes[name]; !live {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
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
