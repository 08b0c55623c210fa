package launcher

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/gorma-hpc/gorma/pmi"
)

// A multi-host fence round on the wire. An agent sends the submitter one fence frame
// per round (agentFenceMsg), once every live rank it runs has fenced: the ranks, and the
// card block (pmi.AppendCards) of the puts of those that gather (a PMI-1 or PMIx fence;
// a gorma rank's puts stay at its agent, fetch.go). The submitter keeps each agent's
// block as it came. Once every rank fenced or failed, it encodes one fence-done payload
// and sends every agent the same bytes:
//
//	fenceDone = round blockCount (blockLen block)...
//
// every integer an unsigned LEB128 varint. So a round costs the submitter A frames in
// and A out, not N, and no card is decoded or encoded again on the way.

// agentFenceMsg is an agent's part of a fence round: Ranks (its ranks that fenced in
// Round, at the agent's count) and Block, the card block of the puts of those that
// gather (nil when none does).
type agentFenceMsg struct {
	Round int
	Ranks []int
	Block []byte `json:",omitempty"`
}

// fenceDone is a decoded fence-done payload: the round's number and the agents' blocks.
type fenceDone struct {
	Round  int
	Blocks [][]byte
}

// maxRound bounds a fence-done frame's round number.
const maxRound = 1 << 40

// appendFenceDone appends the fence-done payload of round with blocks to dst.
func appendFenceDone(dst []byte, round int, blocks [][]byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(round))
	dst = binary.AppendUvarint(dst, uint64(len(blocks)))
	for _, b := range blocks {
		dst = binary.AppendUvarint(dst, uint64(len(b)))
		dst = append(dst, b...)
	}
	return dst
}

// decodeFenceDone decodes a fence-done payload. The blocks share p.
func decodeFenceDone(p []byte) (*fenceDone, error) {
	next := func(max uint64, what string) (uint64, error) {
		v, n := binary.Uvarint(p)
		if n <= 0 || v > max {
			return 0, fmt.Errorf("%v frame: bad %s", fFenceDone, what)
		}
		p = p[n:]
		return v, nil
	}
	round, err := next(maxRound, "round")
	if err != nil {
		return nil, err
	}
	count, err := next(uint64(len(p)), "block count") // a block takes at least a byte
	if err != nil {
		return nil, err
	}
	m := &fenceDone{Round: int(round), Blocks: make([][]byte, 0, count)}
	for range count {
		n, err := next(maxFrame, "block length")
		if err != nil {
			return nil, err
		}
		if n > uint64(len(p)) {
			return nil, fmt.Errorf("%v frame: a block of %d bytes in %d", fFenceDone, n, len(p))
		}
		m.Blocks = append(m.Blocks, p[:n:n])
		p = p[n:]
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("%v frame: %d bytes after the last block", fFenceDone, len(p))
	}
	return m, nil
}

// puts decodes every block of m for a job of size ranks: the round's gathered puts, by
// rank. A rank may appear in one block only.
func (m *fenceDone) puts(size int) (map[int]map[string][]byte, error) {
	if len(m.Blocks) == 0 {
		return nil, nil
	}
	out := make(map[int]map[string][]byte)
	for _, b := range m.Blocks {
		cards, err := pmi.DecodeCards(b, size, maxFrame)
		if err != nil {
			return nil, fmt.Errorf("%v frame: %w", fFenceDone, err)
		}
		block := pmi.PutsOf(cards)
		for r, p := range block {
			if _, dup := out[r]; dup {
				return nil, fmt.Errorf("%v frame: rank %d in two blocks", fFenceDone, r)
			}
			out[r] = p
		}
	}
	return out, nil
}

// localRound is an agent's part of the open multi-host fence round: which of its ranks
// fenced, in order, how many of those the submitter was told of, and the puts of those
// that gather. A spawn can add ranks here to a round told of already; they go in a
// frame of their own.
type localRound struct {
	n      int // the round's number at the agent
	ranks  []int
	told   int // ranks[:told] were sent
	gather map[int]map[string][]byte
}

// fenced records that local rank fenced in round (gather: its puts, when its fence
// gathers) and tells the submitter once every live rank here has.
func (j *agentJob) fenced(round, rank int, gather map[string][]byte) error {
	j.mu.Lock()
	m, err := j.fencedLocked(round, rank, gather)
	j.mu.Unlock()
	return j.sendRound(m, err)
}

// fencedLocked records the fence and returns the frame to send, if any.
func (j *agentJob) fencedLocked(round, rank int, gather map[string][]byte) (*agentFenceMsg, error) {
	r := &j.round
	if r.n != round {
		*r = localRound{n: round}
	}
	r.ranks = append(r.ranks, rank)
	if gather != nil {
		if r.gather == nil {
			r.gather = make(map[int]map[string][]byte)
		}
		r.gather[rank] = gather
	}
	return j.roundReadyLocked()
}

// roundReadyLocked returns the fence frame of the open round once every live rank here
// fenced in it, with the ranks not sent yet; else nil.
func (j *agentJob) roundReadyLocked() (*agentFenceMsg, error) {
	r := &j.round
	if r.told == len(r.ranks) {
		return nil, nil
	}
	in := make(map[int]bool, len(r.ranks))
	for _, rank := range r.ranks {
		in[rank] = true
	}
	for _, rank := range j.local {
		if !in[rank] && !j.failed[rank] {
			return nil, nil
		}
	}
	m := &agentFenceMsg{Round: r.n, Ranks: slices.Sorted(slices.Values(r.ranks[r.told:]))}
	gather := make(map[int]map[string][]byte)
	for _, rank := range m.Ranks {
		if p, ok := r.gather[rank]; ok {
			gather[rank] = p
		}
	}
	r.told = len(r.ranks)
	if len(gather) > 0 {
		var err error
		if m.Block, err = pmi.AppendCards(nil, pmi.CardsOf(gather)); err != nil {
			return nil, fmt.Errorf("pmi: fence of ranks %v: %w", m.Ranks, err)
		}
	}
	return m, nil
}

// sendRound sends m (when not nil) to the submitter; err is the failure to make it.
func (j *agentJob) sendRound(m *agentFenceMsg, err error) error {
	if err != nil {
		return err
	}
	if m == nil {
		return nil
	}
	if err := j.send(fFence, m); err != nil {
		return fmt.Errorf("%w: submitter unreachable: %v", pmi.ErrAborted, err)
	}
	return nil
}
