package collectives

import (
	"fmt"
	"slices"

	"github.com/gorma-hpc/gorma/runtime"
)

// bcastHierOK reports whether a Bcast goes hierarchically (bcastHier): the job spans
// hosts, some host holds more than one rank, every host's ranks share memory, and no host
// holds more ranks than one shared-memory group (teams.go). Every rank decides alike:
// these are the job's facts, not the rank's.
func bcastHierOK(l *localState) bool {
	return l.loc.hosts > 1 && l.loc.shared && l.most <= shmFlatMax()
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
	group := func() (*shmGroup, error) {
		if l.onHost == nil {
			l.onHost = &shmGroup{ranks: l.host, me: l.hostIdx}
		}
		return l.onHost, l.onHost.prepare(c, bytes)
	}
	if mine && len(l.host) > 1 {
		g, err := group()
		if err != nil {
			return err
		}
		if err := shmBcastChecked(c, g, buf, slices.Index(l.host, root), bytes); err != nil {
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
		if err := shmBcastChecked(c, g, buf, 0, bytes); err != nil {
			return err
		}
	}
	if l.onHost != nil && len(l.host) > 1 {
		return l.onHost.releaseBig(c)
	}
	return nil
}
