package hostgroup

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
)

// A group's setup gives every member every other member's region description. The
// descriptions travel through the group's first member, the relay: each other member
// sends it its own and receives all of them back in one message. So messages pass only
// between the relay and each member. A pair of other members carries none: their
// connection, which Attach opens to map the peer's region, touches no page of its rings
// or fast boxes (`scripts/compare-scale.sh`, shm). And a member waits for two messages,
// where an exchange among all would take 2(n-1).
//
// The relay's message holds an entry per member, in member order, the relay's own
// first. An entry is a length byte and the description (with the meta word behind it).
// Or it is descTruncated and the 4-byte count of a longer message that the relay
// received in its place. The relay sends every entry as it came, so that each member
// checks each description itself: a mismatch fails at every member, and none waits for a
// message that will not come.

// descTruncated marks a relayed entry whose message did not fit a description.
const descTruncated = 0xff

// descEntryMax bounds a relayed entry: a length byte and a description, or the marker
// and a 4-byte count.
const descEntryMax = 1 + descMax

// exchangeDescs sends desc (the description and meta word of member me of the group of
// World ranks ranks) to every member and returns theirs, by member index (nil at this
// member's). A message that the relay or a member received in a description's place fails
// with runtime.ErrMismatch, naming the ranks and the call.
//
// The descriptions travel with setupTag, which leaves the call's kind out: members at
// calls of different kinds meet in this exchange, and the descriptions' meta words name
// both calls.
func exchangeDescs(c Call, ranks []int, me int, desc []byte) ([][]byte, error) {
	w := c.World()
	n := len(ranks)
	if n < 2 {
		return make([][]byte, n), nil
	}
	if me == 0 {
		return relayDescs(c, ranks, desc)
	}
	relay := ranks[0]
	all := make([]byte, n*descEntryMax)
	if err := runtime.IrecvWith(c.Req(0), w, all, relay, c.ID().SetupTag); err != nil {
		return nil, fmt.Errorf("rank %d receiving the scratch descriptions from rank %d: %w", w.Rank(), relay, err)
	}
	if err := runtime.Send(c.Context(), w, desc, relay, c.ID().SetupTag); err != nil {
		return nil, fmt.Errorf("rank %d sending its scratch description to rank %d: %w", w.Rank(), relay, err)
	}
	st, err := c.Req(0).Wait(c.Context())
	if err != nil && !errors.Is(err, runtime.ErrTruncated) {
		return nil, fmt.Errorf("rank %d receiving the scratch descriptions from rank %d: %w", w.Rank(), relay, err)
	}
	descs, cut, ok := unpackDescs(all[:st.Count], n)
	if err != nil || !ok {
		return nil, fmt.Errorf("%w: rank %d sent rank %d a message of %d bytes where rank %d, in %s (call #%d on this World's numbering), expected the scratch descriptions: every rank must make its collective calls in the same order, with the same root and counts",
			runtime.ErrMismatch, relay, w.Rank(), st.Count, w.Rank(), callText(meta(c.ID(), 0)), c.ID().Number)
	}
	for i, count := range cut {
		if count >= 0 && i != me {
			return nil, fmt.Errorf("%w: rank %d sent rank %d a message of %d bytes where rank %d expected its scratch description (rank %d is in %s, call #%d on this World's numbering): every rank must make its collective calls in the same order, with the same root and counts",
				runtime.ErrMismatch, ranks[i], relay, count, relay, w.Rank(), callText(meta(c.ID(), 0)), c.ID().Number)
		}
	}
	descs[me] = nil
	return descs, nil
}

// relayDescs is exchangeDescs at the relay: it receives every member's description,
// then sends them all to every member.
func relayDescs(c Call, ranks []int, desc []byte) ([][]byte, error) {
	w := c.World()
	n := len(ranks)
	descs := make([][]byte, n)
	for i := 1; i < n; i++ {
		descs[i] = make([]byte, descMax)
		if err := runtime.IrecvWith(c.Req(i-1), w, descs[i], ranks[i], c.ID().SetupTag); err != nil {
			return nil, fmt.Errorf("rank %d receiving a scratch description from rank %d: %w", w.Rank(), ranks[i], err)
		}
	}
	all := make([]byte, 0, n*descEntryMax)
	all = append(all, byte(len(desc)))
	all = append(all, desc...)
	var first error // the first mismatch, returned once every member has its entries
	for i := 1; i < n; i++ {
		st, err := c.Req(i - 1).Wait(c.Context())
		switch {
		case errors.Is(err, runtime.ErrTruncated):
			descs[i] = nil
			all = append(all, descTruncated)
			all = binary.LittleEndian.AppendUint32(all, uint32(st.Count))
			if first == nil {
				first = fmt.Errorf("%w: rank %d sent rank %d a message of %d bytes where rank %d, in %s (call #%d on this World's numbering), expected its scratch description: every rank must make its collective calls in the same order, with the same root and counts",
					runtime.ErrMismatch, ranks[i], w.Rank(), st.Count, w.Rank(), callText(meta(c.ID(), 0)), c.ID().Number)
			}
		case err != nil:
			// A member failed, or ctx ended: the others' receives from the relay fail as
			// well (a peer's failure), or end in their own ctx.
			return nil, fmt.Errorf("rank %d receiving a scratch description from rank %d: %w", w.Rank(), ranks[i], err)
		default:
			descs[i] = descs[i][:st.Count]
			all = append(all, byte(st.Count))
			all = append(all, descs[i]...)
		}
	}
	for i := 1; i < n; i++ {
		if err := runtime.Send(c.Context(), w, all, ranks[i], c.ID().SetupTag); err != nil {
			return nil, fmt.Errorf("rank %d sending the scratch descriptions to rank %d: %w", w.Rank(), ranks[i], err)
		}
	}
	if first != nil {
		return nil, first
	}
	return descs, nil
}

// unpackDescs splits the relay's message into n entries. descs[i] is member i's
// description, or nil where cut[i] holds the byte count of the message the relay
// received in its place (-1 where it received a description). ok is false unless the
// message holds exactly n entries.
func unpackDescs(all []byte, n int) (descs [][]byte, cut []int, ok bool) {
	descs, cut = make([][]byte, n), make([]int, n)
	for i := range n {
		cut[i] = -1
		if len(all) < 1 {
			return nil, nil, false
		}
		l := int(all[0])
		switch {
		case l == descTruncated && len(all) >= 5:
			cut[i], all = int(binary.LittleEndian.Uint32(all[1:])), all[5:]
		case l <= descMax && len(all) >= 1+l:
			descs[i], all = all[1:1+l:1+l], all[1+l:]
		default:
			return nil, nil, false
		}
	}
	return descs, cut, len(all) == 0
}
