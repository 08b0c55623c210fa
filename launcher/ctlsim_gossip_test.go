package launcher

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log"
	mrand "math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// The gossip simulation: a cluster of real memberlist members, configured as newCluster
// configures the agents (tunedConfig's timing, the keyring, the label, verified gossip),
// over memberlist's in-memory transport (MockNetwork) instead of UDP and TCP. Modelled:
// the network (a packet goes to the receiver's queue of simInbox packets, dropped when it
// is full, as by a UDP socket's buffer, after a fixed delay and with a chance of loss
// when the simulation asks for them; a stream is a net.Pipe, opened after two delays),
// a dead host (its packets and streams are dropped both ways: a hung host or a cut link,
// which is what memberlist must detect; a killed agent is seen at once by its control
// connection's EOF), and the agent's own delegates (here metadata of an agent's size and
// an event recorder; no boot id in acks, no rejoin loop).

// gossipNet is the in-memory network of one simulated cluster. Its tables are written
// before any member starts and only read after.
type gossipNet struct {
	mock   memberlist.MockNetwork
	byName map[string]int
	byAddr map[string]int
	tr     []*simTransport
	cut    []atomic.Bool // member i's packets and streams are dropped
	stats  []gossipStats
	errs   *simGossipLog
	delay  time.Duration // a packet's one-way delay
	loss   float64       // the chance that a packet is lost
}

// simGossipLog reads the members' memberlist logs: it keeps the latest [ERR] line, for the
// error of a failed join, and counts the suspicions and death verdicts each member
// names. It is safe for concurrent use.
type simGossipLog struct {
	mu       sync.Mutex
	last     string
	suspects map[[2]string]int // "Suspect X has failed" lines, by the names of the member that logged it and of X
	verdicts map[[2]string]int // "Marking X as failed" lines, by the same names
}

func (l *simGossipLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if bytes.Contains(p, []byte("[ERR]")) {
		l.last = string(bytes.TrimSpace(p))
	}
	by, _, _ := bytes.Cut(p, []byte(": "))
	if name, ok := logSubject(p, "memberlist: Suspect "); ok {
		l.suspects[[2]string{string(by), name}]++
	}
	if name, ok := logSubject(p, "memberlist: Marking "); ok {
		l.verdicts[[2]string{string(by), name}]++
	}
	return len(p), nil
}

// logSubject returns the member named right after prefix in a log line.
func logSubject(line []byte, prefix string) (string, bool) {
	_, rest, ok := bytes.Cut(line, []byte(prefix))
	if !ok {
		return "", false
	}
	name, _, _ := bytes.Cut(rest, []byte(" "))
	return string(name), len(name) > 0
}

func (l *simGossipLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// falseCounts returns the suspicions and verdicts that members other than victim logged
// about members other than victim. The victim, cut off, suspects everyone; that is not
// counted.
func (l *simGossipLog) falseCounts(victim string) (suspicions, verdicts int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for p, k := range l.suspects {
		if p[0] != victim && p[1] != victim {
			suspicions += k
		}
	}
	for p, k := range l.verdicts {
		if p[0] != victim && p[1] != victim {
			verdicts += k
		}
	}
	return suspicions, verdicts
}

// gossipStats counts one member's traffic: packets and bytes sent, streams opened, and
// packets dropped at a full receive queue.
type gossipStats struct {
	packets, bytes, streams, dropped atomic.Int64
}

// simInbox is a member's receive queue, as a UDP socket's buffer: a packet that finds it
// full is dropped.
const simInbox = 4096

// simAddr is a member's address as net.Addr.
type simAddr string

func (a simAddr) Network() string { return "mock" }
func (a simAddr) String() string  { return string(a) }

// simTransport is one member's transport. Streams go through memberlist's MockTransport
// (a net.Pipe per stream); packets go to the receiver's queue without waiting, as UDP
// datagrams do (MockTransport hands a packet over an unbuffered channel, so two members
// that answer each other's pings from their packet handlers would wait for each other
// forever). The cut members' traffic is dropped and every member's traffic counted. Its
// methods are called from memberlist's goroutines.
type simTransport struct {
	*memberlist.MockTransport
	net     *gossipNet
	idx     int
	addr    simAddr
	packets chan *memberlist.Packet
}

var _ memberlist.NodeAwareTransport = (*simTransport)(nil)

// peer returns the index of a's member, or -1.
func (t *simTransport) peer(a memberlist.Address) int {
	if i, ok := t.net.byName[a.Name]; ok && a.Name != "" {
		return i
	}
	if i, ok := t.net.byAddr[a.Addr]; ok {
		return i
	}
	return -1
}

func (t *simTransport) PacketCh() <-chan *memberlist.Packet { return t.packets }

func (t *simTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	return t.WriteToAddress(b, memberlist.Address{Addr: addr})
}

func (t *simTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	p := t.peer(a)
	if p < 0 {
		return time.Time{}, fmt.Errorf("simulated gossip: no member at %s", a)
	}
	st := &t.net.stats[t.idx]
	st.packets.Add(1)
	st.bytes.Add(int64(len(b)))
	now := time.Now()
	if t.net.cut[t.idx].Load() || t.net.cut[p].Load() {
		return now, nil // lost, as a datagram to or from a dead host
	}
	if t.net.loss > 0 && mrand.Float64() < t.net.loss {
		st.dropped.Add(1)
		return now, nil
	}
	buf := bytes.Clone(b)
	deliver := func() {
		select {
		case t.net.tr[p].packets <- &memberlist.Packet{Buf: buf, From: t.addr, Timestamp: time.Now()}:
		default:
			st.dropped.Add(1)
		}
	}
	if t.net.delay > 0 {
		time.AfterFunc(t.net.delay, deliver)
	} else {
		deliver()
	}
	return now, nil
}

// IngestPacket queues a packet that arrived over a stream.
func (t *simTransport) IngestPacket(conn net.Conn, addr net.Addr, now time.Time, shouldClose bool) error {
	if shouldClose {
		defer conn.Close()
	}
	b, err := io.ReadAll(conn)
	if err != nil {
		return fmt.Errorf("simulated gossip: read packet: %w", err)
	}
	if len(b) == 0 {
		return fmt.Errorf("simulated gossip: empty packet from %s", addr)
	}
	select {
	case t.packets <- &memberlist.Packet{Buf: b, From: addr, Timestamp: now}:
	default:
		t.net.stats[t.idx].dropped.Add(1)
	}
	return nil
}

func (t *simTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

func (t *simTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	p := t.peer(a)
	if p < 0 {
		return nil, fmt.Errorf("simulated gossip: no member at %s", a)
	}
	t.net.stats[t.idx].streams.Add(1)
	if t.net.cut[t.idx].Load() || t.net.cut[p].Load() {
		return nil, fmt.Errorf("simulated gossip: dial %s: i/o timeout", a)
	}
	time.Sleep(2 * t.net.delay) // the connection's handshake
	return t.MockTransport.DialAddressTimeout(a, timeout)
}

// gossipMember is one simulated agent's memberlist member.
type gossipMember struct {
	name string
	ml   *memberlist.Memberlist
	meta []byte

	mu   sync.Mutex
	dead map[string]time.Time // when this member first saw each departure since forget
}

func (m *gossipMember) NodeMeta(limit int) []byte {
	if len(m.meta) > limit {
		return nil
	}
	return m.meta
}
func (m *gossipMember) NotifyMsg([]byte)                {}
func (m *gossipMember) GetBroadcasts(int, int) [][]byte { return nil }
func (m *gossipMember) LocalState(bool) []byte          { return nil }
func (m *gossipMember) MergeRemoteState([]byte, bool)   {}
func (m *gossipMember) NotifyJoin(*memberlist.Node)     {}
func (m *gossipMember) NotifyUpdate(*memberlist.Node)   {}

func (m *gossipMember) NotifyLeave(n *memberlist.Node) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.dead[n.Name]; !ok {
		m.dead[n.Name] = time.Now()
	}
}

// forget clears the departures seen so far: a loaded host's false deaths, refuted since.
func (m *gossipMember) forget() {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.dead)
}

func (m *gossipMember) sawDead(name string) (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.dead[name]
	return t, ok
}

// gossipSim is one simulated cluster's setting.
type gossipSim struct {
	n int
	// scale stretches every interval and timeout of the configuration (scaledConfig) so
	// that a large cluster's members, which share this process's processors, still answer
	// within their timeouts on the wall clock; the times measured are divided by it and
	// the rates multiplied. This holds while members spend their time waiting, not
	// computing: memberlist's protocol runs in rounds of its intervals, and a round's work
	// does not depend on their length. In a synctest bubble it is 1: virtual time stands
	// still while members compute.
	scale  int
	window time.Duration // the steady-state window, in the scaled time
	delay  time.Duration // a packet's one-way delay (0: none)
	loss   float64       // the chance that a packet is lost
}

// gossipResult is what one simulated cluster measured, in the unscaled time of the
// agents' configuration (gossipSim.scale).
type gossipResult struct {
	Members  int
	Scale    int
	Join     time.Duration // every member's join to the seed returned (joins run 8 at a time)
	Converge time.Duration // from the first join until every member lists every member
	// Steady state, per member and second: packets and bytes sent, streams opened.
	PacketsPerSec, BytesPerSec, StreamsPerSec float64
	Detect                                    time.Duration // a member cut off, to the first member declaring it dead
	Spread                                    time.Duration // ... to the last live member declaring it dead
	Dropped                                   int64         // packets dropped at full receive queues or lost, over the run
	// Logged by memberlist over the whole run about members that were never cut off:
	// suspicions ("Suspect X has failed") and death verdicts ("Marking X as failed").
	FalseSuspicions, FalseVerdicts int
}

// runGossipSim starts sim.n members, joins them to the first, waits for every member
// list to be whole, counts a steady-state window, cuts off the last member and times its
// death verdict at every other member.
func runGossipSim(ctx context.Context, sim gossipSim) (*gossipResult, error) {
	n, scale := sim.n, max(sim.scale, 1)
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("cluster key: %w", err)
	}
	gn := &gossipNet{byName: make(map[string]int), byAddr: make(map[string]int),
		errs: &simGossipLog{suspects: map[[2]string]int{}, verdicts: map[[2]string]int{}},
		cut:  make([]atomic.Bool, n), stats: make([]gossipStats, n), delay: sim.delay, loss: sim.loss}
	members := make([]*gossipMember, n)
	transports := make([]*simTransport, n)
	gn.tr = transports
	for i := range members {
		name := fmt.Sprintf("a%04d", i)
		mt := gn.mock.NewTransport(name)
		ip, port, err := mt.FinalAdvertiseAddr("", 0)
		if err != nil {
			return nil, fmt.Errorf("simulated member %s: %w", name, err)
		}
		addr := net.JoinHostPort(ip.String(), strconv.Itoa(port))
		gn.byName[name], gn.byAddr[addr] = i, i
		transports[i] = &simTransport{MockTransport: mt, net: gn, idx: i, addr: simAddr(addr),
			packets: make(chan *memberlist.Packet, simInbox)}
		meta := NodeMeta{Version: controlVersion, Slots: simRanksPerAgent,
			Control: fmt.Sprintf("10.%d.%d.%d:7947", i>>16&255, i>>8&255, i&255), Boot: "9f2c41d07be3a815"}
		members[i] = &gossipMember{name: name, meta: meta.Encode(), dead: make(map[string]time.Time)}
	}
	defer func() {
		for i := range gn.cut {
			gn.cut[i].Store(true) // nothing is sent any more: no send waits on a stopped member
		}
		for _, m := range members {
			if m.ml != nil {
				m.ml.Shutdown()
			}
		}
	}()
	for i, m := range members {
		keyring, err := memberlist.NewKeyring(nil, key)
		if err != nil {
			return nil, fmt.Errorf("cluster key: %w", err)
		}
		mc := scaledConfig(scale)
		mc.Name = m.name
		mc.Transport = transports[i]
		mc.Label = clusterLabel
		mc.Keyring = keyring
		mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = true, true
		mc.Delegate, mc.Events = m, m
		mc.Logger = log.New(gn.errs, m.name+": ", 0)
		if m.ml, err = memberlist.Create(mc); err != nil {
			return nil, fmt.Errorf("simulated member %s: %w", m.name, err)
		}
	}
	seed := members[0].ml.LocalNode().Address()
	start := time.Now()
	if err := joinAll(ctx, members[1:], seed); err != nil {
		return nil, fmt.Errorf("%w (last memberlist error: %s)", err, gn.errs)
	}
	res := &gossipResult{Members: n, Scale: scale, Join: time.Since(start) / time.Duration(scale)}
	if err := pollUntil(ctx, "every member list to hold every member", func() bool {
		for _, m := range members {
			if m.ml.NumMembers() != n {
				return false
			}
		}
		return true
	}); err != nil {
		for _, m := range members {
			if k := m.ml.NumMembers(); k != n {
				err = fmt.Errorf("%w; %s lists %d", err, m.name, k)
			}
		}
		return nil, err
	}
	res.Converge = time.Since(start) / time.Duration(scale)

	var before [3]int64
	for i := range gn.stats {
		before[0] += gn.stats[i].packets.Load()
		before[1] += gn.stats[i].bytes.Load()
		before[2] += gn.stats[i].streams.Load()
	}
	wstart := time.Now()
	select {
	case <-time.After(sim.window):
	case <-ctx.Done():
		return nil, fmt.Errorf("simulated gossip: steady-state window: %w", ctx.Err())
	}
	per := float64(n) * time.Since(wstart).Seconds() / float64(scale)
	var after [3]int64
	for i := range gn.stats {
		after[0] += gn.stats[i].packets.Load()
		after[1] += gn.stats[i].bytes.Load()
		after[2] += gn.stats[i].streams.Load()
	}
	res.PacketsPerSec = float64(after[0]-before[0]) / per
	res.BytesPerSec = float64(after[1]-before[1]) / per
	res.StreamsPerSec = float64(after[2]-before[2]) / per

	victim := members[n-1].name
	for _, m := range members {
		m.forget()
	}
	cutAt := time.Now()
	gn.cut[n-1].Store(true)
	if err := pollUntil(ctx, "every live member to declare "+victim+" dead", func() bool {
		for _, m := range members[:n-1] {
			if _, ok := m.sawDead(victim); !ok {
				return false
			}
		}
		return true
	}); err != nil {
		for _, m := range members[:n-1] {
			if _, ok := m.sawDead(victim); !ok {
				for _, nd := range m.ml.Members() {
					if nd.Name == victim {
						err = fmt.Errorf("%w; %s sees %s in state %v", err, m.name, victim, nd.State)
					}
				}
			}
		}
		return nil, err
	}
	first, last := time.Time{}, time.Time{}
	for _, m := range members[:n-1] {
		t, _ := m.sawDead(victim)
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	res.Detect, res.Spread = first.Sub(cutAt)/time.Duration(scale), last.Sub(cutAt)/time.Duration(scale)
	for i := range gn.stats {
		res.Dropped += gn.stats[i].dropped.Load()
	}
	res.FalseSuspicions, res.FalseVerdicts = gn.errs.falseCounts(victim)
	return res, nil
}

// scaledConfig is the agents' memberlist configuration (tunedConfig) with every interval
// and timeout scale times longer.
func scaledConfig(scale int) *memberlist.Config {
	mc := tunedConfig()
	k := time.Duration(scale)
	mc.ProbeInterval *= k
	mc.ProbeTimeout *= k
	mc.GossipInterval *= k
	mc.TCPTimeout *= k
	mc.PushPullInterval *= k
	mc.DeadNodeReclaimTime *= k
	mc.GossipToTheDeadTime *= k
	return mc
}

// joinAll joins every member to seed, 8 at a time.
func joinAll(ctx context.Context, members []*gossipMember, seed string) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	next := make(chan *gossipMember)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range next {
				if _, err := m.ml.Join([]string{seed}); err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("simulated member %s: join %s: %w", m.name, seed, err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, m := range members {
		select {
		case next <- m:
		case <-ctx.Done():
			close(next)
			wg.Wait()
			return fmt.Errorf("simulated gossip: joins: %w", ctx.Err())
		}
	}
	close(next)
	wg.Wait()
	return first
}

// pollUntil checks cond every 10 ms until it holds or ctx ends.
func pollUntil(ctx context.Context, what string, cond func() bool) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for !cond() {
		select {
		case <-t.C:
		case <-ctx.Done():
			return fmt.Errorf("simulated gossip: waiting for %s: %w", what, ctx.Err())
		}
	}
	return nil
}
