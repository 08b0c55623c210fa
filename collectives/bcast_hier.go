package collectives

import (
	"fmt"
	"slices"

	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime"
)

// bcastHierOK reports whether a Bcast goes hierarchically (bcastHier): the job spans
// hosts, some host holds more than one rank, every host's ranks share memory, and no host
// holds more ranks than one shared-memory group (teams.go). Every rank decides alike:
// these are the job's facts, not the rank's.
func bcastHierOK(l *localState) bool {
	return l.loc.hosts > 1 && l.loc.shared && l.most <= hostgroup.FlatMax()
}

// bcastHier is the Bcast of a World that spans hosts (bcastHierOK). root's host gets
// the data through its shared-memory group (shmBcast from root). The hosts' leaders,
// root's host's leader among them, pass it on point to point (the binomial tree, or
// scatter then allgather from bcastLongMsg bytes). Each other host gets it through its
// group from its leader. Only the leaders' step crosses hosts: each host receives the
// vector once.
func bcastHier[T runtime.Elem](c *call, l *localState, buf []T, root int) error {
	bytes := len(buf) * elemSize[T]()
	w := c.s.comm
	rootHost := w.HostOf(root)
	mine := w.HostOf(c.s.rank) == rootHost
	group := func() (*hostgroup.Group, error) {
		if l.onHost == nil {
			l.onHost = hostgroup.New(l.host, l.hostIdx)
		}
		return l.onHost, l.onHost.Prepare(c, bytes)
	}
	if mine && len(l.host) > 1 {
		g, err := group()
		if err != nil {
			return err
		}
		if err := shmBcastChecked(c, g, buf, slices.Index(l.host, root), bytes, false); err != nil {
			return err
		}
	}
	if l.leaderS != nil {
		from := -1
		for i, r := range l.leaders {
			if w.HostOf(r) == rootHost {
				from = i
			}
		}
		sc := c.sub(l.leaderS)
		var err error
		if bytes < bcastLongMsg || l.leaderS.size <= 2 || len(buf) < l.leaderS.size {
			err = bcastBinomial(sc, buf, from)
		} else {
			err = bcastScatterAllgather(sc, buf, from)
		}
		if err != nil {
			return fmt.Errorf("among host leaders: %w", err)
		}
	}
	if !mine && len(l.host) > 1 {
		g, err := group()
		if err != nil {
			return err
		}
		if err := shmBcastChecked(c, g, buf, 0, bytes, false); err != nil {
			return err
		}
	}
	if l.onHost != nil && len(l.host) > 1 {
		return l.onHost.ReleaseBig(c)
	}
	return nil
}

// reduceHier is the Reduce of a commutative operator over a World that spans hosts
// (bcastHierOK). Each host reduces to its leader through its shared-memory group
// (allreduceSHM with a root), the leaders reduce their partials up a binomial tree to
// root's host's leader, and that leader sends the result to root if root is another rank.
// Only the leaders' step crosses hosts. sendBuf is this rank's input (nil at root: in
// place, the input in recvBuf). Root's recvBuf takes only results of the matched call.
func reduceHier[T runtime.Elem](c *call, l *localState, sendBuf, recvBuf []T, op Op[T], root int) error {
	w, me := c.s.comm, c.s.rank
	src := sendBuf
	if src == nil {
		src = recvBuf
	}
	n := len(src)
	lead := l.host[0] == me
	part := src // the host's partial, at its leader: its input to the leaders' tree
	if lead && len(l.host) > 1 {
		part = scratchOf[T](c, 0, n)
	}
	if len(l.host) > 1 {
		if l.onHost == nil {
			l.onHost = hostgroup.New(l.host, l.hostIdx)
		}
		if err := l.onHost.Prepare(c, n*elemSize[T]()); err != nil {
			return err
		}
		if err := allreduceSHM(c, l.onHost, src, part, op, 0); err != nil {
			return err
		}
		if err := l.onHost.ReleaseBig(c); err != nil {
			return err
		}
	}
	rootHost := w.HostOf(root)
	from := -1 // root's host's leader: its index among the leaders, and its rank
	for i, r := range l.leaders {
		if w.HostOf(r) == rootHost {
			from = i
		}
	}
	rootLeader := l.leaders[from]
	acc := part // a partial in scratch takes the others' as they come
	if len(l.host) == 1 {
		acc = scratchOf[T](c, 0, n)
	}
	out := acc // root's leader sends the result to root
	if me == root {
		out = recvBuf // written once, with the last leader's partial (reduceBinomial)
	}
	if l.leaderS != nil {
		if err := reduceBinomial(c.sub(l.leaderS), part, acc, out, op, from); err != nil {
			return fmt.Errorf("among host leaders: %w", err)
		}
	}
	switch {
	case rootLeader == root:
	case me == rootLeader:
		return send(c, out, root)
	case me == root:
		return recv(c, recvBuf, rootLeader)
	}
	return nil
}

// allgatherHier is the Allgather of a World that spans hosts (bcastHierOK), with n
// elements per block; mine is this rank's block, which recv gets with the others'. The ranks of each host
// gather their blocks through their shared-memory group (allgatherSteps over the host's
// blocks, packed). The leaders pass the hosts' blocks around a ring (allgathervRing, a
// host's blocks per step). Each leader then puts every block at its rank's place and
// broadcasts the whole vector to its host through the group. Only the leaders' step
// crosses hosts, and each host receives every other host's blocks once.
func allgatherHier[T runtime.Elem](c *call, l *localState, recv, mine []T, n int) error {
	h := len(l.host)
	es := elemSize[T]()
	var g *hostgroup.Group
	packed := mine // the host's blocks, in host order
	if h > 1 {
		if l.onHost == nil {
			l.onHost = hostgroup.New(l.host, l.hostIdx)
		}
		g = l.onHost
		if err := g.Prepare(c, len(recv)*es); err != nil {
			return err
		}
		packed = scratchOf[T](c, 0, h*n)
		copy(packed[l.hostIdx*n:], mine)
		if err := allgatherSteps(c, g, packed, mine, n); err != nil {
			return err
		}
	}
	if l.leaderS != nil {
		counts := make([]int, len(l.hosts))
		for i, rs := range l.hosts {
			counts[i] = len(rs) * n
		}
		buf := scratchOf[T](c, 1, len(recv)) // the hosts' blocks, in the order of leaders
		off := offset(counts, l.lead)
		copy(buf[off:], packed)
		if err := allgathervRing(c.sub(l.leaderS), buf, counts, off, len(recv)); err != nil {
			return fmt.Errorf("among host leaders: %w", err)
		}
		at := 0
		for _, rs := range l.hosts {
			for _, r := range rs {
				copy(recv[r*n:(r+1)*n], buf[at:at+n])
				at += n
			}
		}
	}
	if h > 1 {
		if err := shmBcast(c, g, recv, 0); err != nil {
			return err
		}
		return g.ReleaseBig(c)
	}
	return nil
}
