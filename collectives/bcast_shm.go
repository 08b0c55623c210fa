package collectives

import "github.com/gorma-hpc/gorma/runtime"

// The rooted and all-to-all collectives of a one-host World go through the World's
// shared-memory group, as Allreduce and Barrier do (shm.go): each member copies what the
// others read into its own scratch and publishes a step, and the others copy it out.
// No message, no copy through the transport. Up to shmInlineMax bytes travel in the
// publisher's flag line itself; up to shmSmallMax in a small slot; longer data in chunks
// through the big buffers, so that the working set stays in cache.

// worldGroup returns the shared-memory group of every rank of c's World, set up for a
// call that moves bytes per member. It returns nil when the call goes point to point:
//   - the World spans hosts, or some ranks do not map each other's memory;
//   - the host holds more than shmFlatMax ranks (its Barrier and Allreduce run in teams:
//     teams.go);
//   - moveBySHM says so (most bounds an Alltoall's bytes; 0 for no bound).
//
// Every rank gets the same answer.
func worldGroup(c *call, bytes, most int) (*shmGroup, error) {
	l := localOf(c.s)
	if !l.loc.oneHost || c.s.size < 2 || !moveBySHM(c.s.size, bytes, most) || !l.oneGrp {
		return nil, nil
	}
	if l.world == nil {
		l.world = &shmGroup{ranks: l.host, me: l.hostIdx}
	}
	if err := l.world.prepare(c, bytes); err != nil {
		return nil, err
	}
	return l.world, nil
}

// bcastSHM copies member root's buf into every member's buf, checking at the first step
// that every member passed as many bytes: from singleMin bytes each member reads root's
// buffer (single_shm.go), else through root's scratch (shmBcast). It names the
// algorithm the call took (single or shm).
func bcastSHM[T runtime.Elem](c *call, g *shmGroup, buf []T, root int) error {
	bytes := len(buf) * elemSize[T]()
	if m := singleMin(); m > 0 && bytes >= m {
		done, err := singleMove(c, g, bytesOf(buf), func(j int) bool { return j == root }, bytes,
			func(add func(from, off int, dst []byte)) {
				if g.me != root {
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
	return g.releaseBig(c)
}

// A one-host move through shared memory costs two copies: into the publisher's scratch
// and out. Point-to-point's rendezvous costs one, from the sender's buffer. That wins
// with 2 ranks from shmSmallMax bytes, and for an Alltoall from alltoallSHMMost bytes
// per rank, whose p-1 pairwise exchanges each move one block. `golaunch -n 2
// bin/allreducebench --test bcast,reduce,allgather,alltoall` (and -n 4) measures it.
const alltoallSHMMost = 256 << 10

// moveBySHM reports whether a one-host call of p ranks that moves bytes per rank goes
// through shared memory; most bounds bytes (0: no bound).
func moveBySHM(p, bytes, most int) bool {
	switch {
	case p == 2 && bytes > shmSmallMax:
		return false
	case most > 0 && bytes > most:
		return false
	}
	return true
}
