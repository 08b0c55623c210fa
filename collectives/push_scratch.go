package collectives

import "github.com/gorma-hpc/gorma/runtime/substrate"

// The push form's scratch (allreduce_direct_push.go), kept with a group's state: marked
// broken when a call fails, dropped with the World.

// pushScratch is a group's scratch for the push form.
type pushScratch struct {
	region  *substrate.Region
	remotes []*substrate.Remote // by member index; nil for this rank
	slot    int                 // bytes of a slot (a multiple of 64)
	rs, ag  *substrate.Counter  // the first and second round's writes
	notes   [][8]byte           // the notes' buffers, by request index
	// broken is set when a call on the scratch failed (or its setup did): the next call
	// sets the scratch up again. Until then it is kept, with older ones (prev): a peer
	// may still write into it for the failed call, and a write to a freed region would
	// fail with a remote access error, which breaks the connection to the writer.
	broken bool
	prev   *pushScratch
}

// drop releases the scratch and the older ones it kept.
func (ps *pushScratch) drop() {
	for ; ps != nil; ps = ps.prev {
		for _, rm := range ps.remotes {
			if rm != nil {
				rm.Close()
			}
		}
		ps.rs.Close()
		ps.ag.Close()
		ps.region.Free()
	}
}

// failPush marks the push scratch of s and of its sub-groups broken, after a failed call.
func (s *state) failPush() {
	s.eachState(func(s *state) {
		if s.push != nil {
			s.push.broken = true
		}
	})
}

// dropPush releases the push scratch of s and of its sub-groups (the World was dropped).
func (s *state) dropPush() {
	s.eachState(func(s *state) {
		if s.push != nil {
			s.push.drop()
			s.push = nil
		}
	})
}
