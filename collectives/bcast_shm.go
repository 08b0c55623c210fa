package collectives

import (
	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime"
)

// The rooted and all-to-all collectives of a one-host World go through the World's
// shared-memory group, as Allreduce and Barrier do (internal/hostgroup): each member
// copies what the others read into its own scratch and publishes a step, and the others
// copy it out. No message, no copy through the transport. Up to hostgroup.InlineMax bytes
// travel in the publisher's flag line itself; up to hostgroup.SmallMax in a small slot;
// longer data in chunks through the big buffers, so that the working set stays in cache.

// worldGroup returns the shared-memory group of every rank of c's World, set up for a
// call that moves bytes per member. It returns nil when the call goes point to point:
//   - the World spans hosts, or some ranks do not map each other's memory;
//   - the host holds more than hostgroup.FlatMax() ranks (its Barrier and Allreduce run
//     in teams: teams.go);
//   - moveBySHM says so (most bounds an Alltoall's bytes; 0 for no bound).
//
// Every rank gets the same answer.
func worldGroup(c *call, bytes, most int) (*hostgroup.Group, error) {
	l := localOf(c.s)
	if !l.loc.oneHost || c.s.size < 2 || !moveBySHM(c.s.size, bytes, most) || !l.oneGrp {
		return nil, nil
	}
	if l.world == nil {
		l.world = hostgroup.New(l.host, l.hostIdx)
	}
	if err := l.world.Prepare(c, bytes); err != nil {
		return nil, err
	}
	return l.world, nil
}

// bcastSHM copies member root's buf into every member's buf, checking at the first step
// that every member passed as many bytes: from hostgroup.SingleMin() bytes each member
// reads root's buffer (single_shm.go), else through root's scratch (shmBcast). It names
// the algorithm the call took (single or shm).
func bcastSHM[T runtime.Elem](c *call, g *hostgroup.Group, buf []T, root int) error {
	bytes := len(buf) * elemSize[T]()
	if m := hostgroup.SingleMin(); m > 0 && bytes >= m {
		done, err := singleMove(c, g, bytesOf(buf), func(j int) bool { return j == root }, bytes,
			func(add func(from, off int, dst []byte)) {
				if g.Me != root {
					add(root, 0, bytesOf(buf))
				}
			})
		if done {
			c.chose("single")
		}
		if err != nil || done {
			return err
		}
	}
	c.chose("shm")
	if err := shmBcastChecked(c, g, buf, root, bytes, true); err != nil {
		return err
	}
	return g.ReleaseBig(c)
}

// moveBySHM reports whether a one-host call of p ranks that moves bytes per rank goes
// through shared memory; most bounds bytes (0: no bound). With 2 ranks every move of
// more than hostgroup.SmallMax bytes goes point to point (the table in
// internal/hostgroup/tune.go).
func moveBySHM(p, bytes, most int) bool {
	switch {
	case p == 2 && bytes > hostgroup.SmallMax:
		return false
	case most > 0 && bytes > most:
		return false
	}
	return true
}
