package runtime

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// hostIdentity tells whether two processes can share memory: the kernel instance (boot
// id), the network namespace (ranks in different network namespaces count as different
// hosts, as the launcher places them) and the pid namespace and user (the shm provider
// reaches peers through /proc/PID and their memfds).
type hostIdentity struct {
	bootID [16]byte
	netNS  uint64
	pidNS  uint64
	uid    uint32
}

func localIdentity() hostIdentity {
	var id hostIdentity
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		s := strings.ReplaceAll(strings.TrimSpace(string(b)), "-", "")
		if raw, err := hex.DecodeString(s); err == nil && len(raw) == len(id.bootID) {
			copy(id.bootID[:], raw)
		}
	}
	var st unix.Stat_t
	if unix.Stat("/proc/self/ns/net", &st) == nil {
		id.netNS = st.Ino
	}
	if unix.Stat("/proc/self/ns/pid", &st) == nil {
		id.pidNS = st.Ino
	}
	id.uid = uint32(os.Getuid())
	return id
}

// card is what a rank publishes about itself before any connection is made: where it
// runs, and the limits its peers must respect when they send to it.
type card struct {
	host     string // the launcher's host name
	id       hostIdentity
	pid      int32
	probe    uint64      // address of cmaProbe in this process (see cmaPossible)
	eagerSHM uint32      // largest eager payload this rank accepts over shm
	eagerTCP uint32      // ... over tcp
	cpu      int32       // the one processor this rank may run on, or -1
	cpus     unix.CPUSet // the processors this rank may run on (affinity); cpu is set from it
	cm       string      // host:port of this rank's connection listener (cm.go)
}

const (
	cardMagic   = "GRMC"
	cardVersion = 5 // 3: cpu; 4: the connection listener's address; 5: the affinity
)

func (c *card) encode() []byte {
	b := make([]byte, 0, 64+len(c.host)+len(c.cm))
	b = append(b, cardMagic...)
	b = append(b, cardVersion)
	b = append(b, c.id.bootID[:]...)
	b = le.AppendUint64(b, c.id.netNS)
	b = le.AppendUint64(b, c.id.pidNS)
	b = le.AppendUint32(b, c.id.uid)
	b = le.AppendUint32(b, uint32(c.pid))
	b = le.AppendUint64(b, c.probe)
	b = le.AppendUint32(b, c.eagerSHM)
	b = le.AppendUint32(b, c.eagerTCP)
	b = appendSet(b, &c.cpus)
	b = le.AppendUint16(b, uint16(len(c.host)))
	b = append(b, c.host...)
	b = le.AppendUint16(b, uint16(len(c.cm)))
	return append(b, c.cm...)
}

const cardFixed = 4 + 1 + 16 + 8 + 8 + 4 + 4 + 8 + 4 + 4 + 2 + 2

func decodeCard(b []byte) (card, error) {
	var c card
	if len(b) < cardFixed || string(b[:4]) != cardMagic {
		return c, fmt.Errorf("not a gorma endpoint card (%d bytes)", len(b))
	}
	if b[4] != cardVersion {
		return c, fmt.Errorf("card version %d, this build speaks %d (mixed gorma builds in one job?)", b[4], cardVersion)
	}
	p := b[5:]
	copy(c.id.bootID[:], p)
	p = p[16:]
	c.id.netNS, c.id.pidNS, c.id.uid = le.Uint64(p), le.Uint64(p[8:]), le.Uint32(p[16:])
	c.pid, c.probe = int32(le.Uint32(p[20:])), le.Uint64(p[24:])
	c.eagerSHM, c.eagerTCP = le.Uint32(p[32:]), le.Uint32(p[36:])
	var err error
	if c.cpus, p, err = readSet(p[40:]); err != nil {
		return c, err
	}
	c.cpu = onlyCPU(&c.cpus)
	if len(p) < 2 {
		return c, fmt.Errorf("card host name length missing")
	}
	n := int(le.Uint16(p))
	p = p[2:]
	if len(p) < n+2 {
		return c, fmt.Errorf("card host name of %d bytes, %d present", n, len(p))
	}
	c.host = string(p[:n])
	p = p[n:]
	n = int(le.Uint16(p))
	if p = p[2:]; len(p) != n {
		return c, fmt.Errorf("card listener address of %d bytes, %d present", n, len(p))
	}
	c.cm = string(p)
	return c, nil
}

// sameCPU reports whether two cards describe processes bound to one and the same
// processor (golaunch --bind-to with more ranks than processors, or a user's taskset): a
// wait for the other must give the processor away at once (progress.go).
func sameCPU(a, b *card) bool { return a.cpu >= 0 && a.cpu == b.cpu && sameHost(a, b) }

// apartCPU reports whether two cards describe processes that never compete for a
// processor: on different hosts, or bound to different single processors.
func apartCPU(a, b *card) bool { return !sameHost(a, b) || a.cpu >= 0 && b.cpu >= 0 && a.cpu != b.cpu }

// onlyCPU returns the one processor of set, or -1 when it holds several.
func onlyCPU(set *unix.CPUSet) int32 {
	if set.Count() != 1 {
		return -1
	}
	for i := 0; i < len(set)*64; i++ {
		if set.IsSet(i) {
			return int32(i)
		}
	}
	return -1
}

// sameHost reports whether two cards describe processes that can share memory.
func sameHost(a, b *card) bool { return a.host == b.host && a.id == b.id }

// chooseProvider is the one place that decides how this rank talks to a peer: shm when
// both run on the same host (same launcher host name and same boot id, network and pid
// namespace and user), tcp otherwise. The launch contract's transport ("shm" or "tcp",
// from golaunch --transport) overrides the choice; "shm" with a peer on another host is an
// error naming the peer.
func chooseProvider(transport string, me, peer *card, peerRank int) (string, error) {
	local := sameHost(me, peer)
	switch transport {
	case "tcp":
		return "tcp", nil
	case "shm":
		if !local {
			return "", fmt.Errorf("%w: transport shm was requested, but rank %d runs on host %q (%s), not on this rank's host %q (%s); use --transport auto or tcp",
				ErrTransport, peerRank, peer.host, peer.id.short(), me.host, me.id.short())
		}
		return "shm", nil
	case "auto", "":
		if local {
			return "shm", nil
		}
		return "tcp", nil
	}
	return "", fmt.Errorf("%w: unknown transport %q (want auto, shm or tcp)", ErrTransport, transport)
}

// between is the provider rank a uses to reach rank b (a != b), as every rank computes
// it. With a node map (l.nodes: PMI_process_mapping under golaunch or a foreign PM),
// ranks of one node use shm and others tcp (mapProvider); a rank spawned since Init is
// placed by the host its card names. Without one it compares the cards (chooseProvider).
// A connection checks the peer's card before it uses shm (makeQPLocked).
func (l *links) between(a, b int) (string, error) {
	t := l.table()
	if l.nodes == nil {
		return chooseProvider(l.cfg.transport, &t.cards[a], &t.cards[b], b)
	}
	mapped := a < len(l.nodes) && b < len(l.nodes)
	if mapped && (l.nodes[a] == l.nodes[b] || l.cfg.transport != "shm") {
		return mapProvider(l.cfg.transport, l.nodes[a] == l.nodes[b], b, "", "")
	}
	// A rank spawned since Init, or shm across nodes (an error that names the hosts): the
	// host names, which learnCardLocked writes only where there was none.
	same := !mapped && t.hosts[a] == t.hosts[b]
	return mapProvider(l.cfg.transport, same, b, t.hosts[b], t.hosts[a])
}

// nodeShares reports whether the ranks of one node may share memory: the transport
// setting does not rule it out. Only then must a node's ranks prove it at Init.
func (l *links) nodeShares() bool { return l.cfg.transport != "tcp" }

// mapProvider decides between by the node map: shm when both ranks share a node, tcp
// otherwise, unless the transport setting overrides it as in chooseProvider. "shm" with
// a peer on another node is an error naming the peer and both hosts.
func mapProvider(transport string, sameNode bool, peerRank int, peerHost, host string) (string, error) {
	switch transport {
	case "tcp":
		return "tcp", nil
	case "shm":
		if !sameNode {
			return "", fmt.Errorf("%w: transport shm was requested, but rank %d runs on host %q, not on this rank's host %q; use --transport auto or tcp",
				ErrTransport, peerRank, peerHost, host)
		}
		return "shm", nil
	case "auto", "":
		if sameNode {
			return "shm", nil
		}
		return "tcp", nil
	}
	return "", fmt.Errorf("%w: unknown transport %q (want auto, shm or tcp)", ErrTransport, transport)
}

// capsBetween returns the caps of the provider rank a uses to reach rank b (a != b).
// The layers above choose by these (Reach), not by the provider's name.
func (l *links) capsBetween(a, b int) (verbs.Caps, error) {
	p, err := l.between(a, b)
	if err != nil {
		return 0, err
	}
	return providerCaps(p), nil
}

// providerCounts returns how many of this rank's peers each provider serves (between);
// under golaunch, of the peers whose cards it read (a spawned rank may lack some).
func (l *links) providerCounts() (map[string]int, error) {
	count := map[string]int{}
	t := l.table()
	for r := range l.size {
		if r == l.rank || r >= len(l.nodes) && !t.cardOK[r] {
			continue
		}
		p, err := l.between(l.rank, r)
		if err != nil {
			return nil, err
		}
		count[p]++
	}
	return count, nil
}

// hostShared reports whether another rank of this host (localSize ranks, the job's
// transport setting) may reach this one through shared memory: its byte streams then
// have a shared-memory side (netconn.go).
func hostShared(localSize int, transport string) bool { return localSize > 1 && transport != "tcp" }

// local reports whether rank r runs on this rank's host (node).
func (l *links) local(r int) bool {
	if r < len(l.nodes) {
		return l.nodes[r] == l.nodes[l.rank]
	}
	t := l.table()
	return t.hosts[r] == t.hosts[l.rank]
}

// hostName returns rank r's host name. Under a foreign PM it is the name in the card of
// the first rank of r's node, read with a PMI get the first time.
func (l *links) hostName(r int) string {
	l.mu.Lock()
	t := l.table()
	h := t.hosts[r]
	leader := r
	if h == "" && r < len(l.nodes) {
		leader = nodeLeader(l.nodes, r)
		h = t.hosts[leader]
	}
	l.mu.Unlock()
	if h != "" || l.pm == nil {
		return h
	}
	ctx, cancel := context.WithTimeout(l.stop, cmConnectTime)
	defer cancel()
	c, err := l.cardOf(ctx, leader)
	if err != nil {
		return ""
	}
	return c.host
}

// nodeLeader is the first rank on rank r's node.
func nodeLeader(nodes []int, r int) int {
	for x, n := range nodes {
		if n == nodes[r] {
			return x
		}
	}
	return r
}

func (id hostIdentity) short() string {
	return fmt.Sprintf("boot %x, netns %d, pidns %d, uid %d", id.bootID[:4], id.netNS, id.pidNS, id.uid)
}

// cmaProbe is a byte whose address each rank publishes in its card, so that a same-host
// peer can check whether it may read this process's memory with process_vm_readv (which
// the shm provider uses to RDMA-read user buffers). The kernel allows it for processes of
// the same user unless Yama's ptrace_scope of 2 or 3 or a seccomp filter forbids it
// (allowPeerReads lifts scope 1).
var cmaProbe = [8]byte{'g', 'o', 'r', 'm', 'a'}

func probeAddr() uint64 { return uint64(uintptr(unsafe.Pointer(&cmaProbe[0]))) }

// allowPeerReads lets the host's other ranks read this process's memory under Yama's
// ptrace_scope 1. That scope lets a process attach only to its descendants, and ranks
// are siblings. PR_SET_PTRACER_ANY names every process of the user a tracer, as Open
// MPI's shared-memory transport does. Without Yama, or at scope 2 or 3, it changes
// nothing, and the kernel's refusal is what cmaPossible finds.
func allowPeerReads() {
	unix.Prctl(unix.PR_SET_PTRACER, ^uintptr(0), 0, 0, 0) // PR_SET_PTRACER_ANY
}

// cmaPossible reports whether this process may read the memory of the process of card c.
func cmaPossible(c *card) bool {
	if c.pid == int32(os.Getpid()) {
		return true
	}
	var got [5]byte
	local := []unix.Iovec{{Base: &got[0]}}
	local[0].SetLen(len(got))
	remote := []unix.RemoteIovec{{Base: uintptr(c.probe), Len: len(got)}}
	n, err := unix.ProcessVMReadv(int(c.pid), local, remote, 0)
	return err == nil && n == len(got) && bytes.Equal(got[:], cmaProbe[:5])
}
