package runtime

import (
	"context"
	"encoding/binary"
	"slices"
)

// NoColor is the color a rank passes to Split to be in no new World (MPI_UNDEFINED):
// Split then returns a nil World and a nil error.
const NoColor = -1

// group is a set of the job's ranks in a World's order: what a World made by Split
// spans, or every rank of the job (the engine's identity group, worlds.all).
type group struct {
	ranks                []int   // by group rank: the job rank
	of                   []int32 // by job rank: the group rank, or -1
	me                   int     // this rank's group rank
	localRank, localSize int     // among the group's ranks on this host
	fam                  *family // the contexts of this group's Dups
}

// splitTag is the tag of Split's exchange in the parent World's internal context, where
// Barrier's tags are its round numbers (below 64).
const splitTag = MaxTag - 1

// jobRank returns the job rank of w's rank r, and whether r is one of w's ranks.
func jobRank(w *World, r int) (int, bool) {
	if uint(r) < uint(len(w.g.ranks)) {
		return w.g.ranks[r], true
	}
	return r, false
}

// rankOf returns g's rank of job rank jr, or -1 if jr is not one of g's ranks.
// Negative ranks (AnySource, ProcNull) stay as they are.
func (g *group) rankOf(jr int) int {
	if jr < 0 {
		return jr
	}
	if jr >= len(g.of) {
		return -1
	}
	return int(g.of[jr])
}

// peerArg turns a rank argument of w (AnySource allowed when recv) into a job rank, or
// returns the ErrInvalid error that names it. destArg and srcArg are its fronts: a valid
// rank costs one compare and one load.
func peerArg(w *World, r int, recv bool) (int, error) {
	if recv && r == AnySource {
		return r, nil
	}
	jr, ok := jobRank(w, r)
	if !ok {
		return r, w.k.rankErr(w, r)
	}
	return jr, nil
}

func destArg(w *World, r int) (int, error) {
	if uint(r) < uint(len(w.g.ranks)) {
		return w.g.ranks[r], nil
	}
	return peerArg(w, r, false)
}

func srcArg(w *World, r int) (int, error) {
	if uint(r) < uint(len(w.g.ranks)) {
		return w.g.ranks[r], nil
	}
	return peerArg(w, r, true)
}

// peerOrNull, destOrNull and srcOrNull are peerArg, destArg and srcArg that also take
// ProcNull, which they return as is.
func peerOrNull(w *World, r int, recv bool) (int, error) {
	if r == ProcNull {
		return ProcNull, nil
	}
	return peerArg(w, r, recv)
}

func destOrNull(w *World, r int) (int, error) {
	if r == ProcNull {
		return ProcNull, nil
	}
	return destArg(w, r)
}

func srcOrNull(w *World, r int) (int, error) {
	if r == ProcNull {
		return ProcNull, nil
	}
	return srcArg(w, r)
}

// outStatus translates a Status's job rank into w's rank.
func outStatus(w *World, st Status) Status {
	st.Source = w.g.rankOf(st.Source)
	return st
}

// Split partitions w's ranks into new Worlds, one per color (MPI_Comm_split): the ranks
// that pass one color (>= 0) get a World, ranked by key, then by rank in w. A rank that
// passes NoColor gets a nil World and a nil error. Every rank of w calls it, in the same
// order as its other collective calls on w; it fails, naming the rank, if one has failed.
// The new World has its own rank numbering; ProcError.Rank names the job's rank. Its block
// of contexts holds it and seven Dups. On an intercommunicator each color gives an
// intercommunicator between the two groups' ranks that passed it.
func (w *World) Split(ctx context.Context, color, key int) (*World, error) {
	if err := w.live(); err != nil {
		return nil, withOp("split", err)
	}
	if color < 0 && color != NoColor {
		return nil, withOp("split", invalidf("color %d (use a color >= 0, or NoColor)", color))
	}
	d, err := w.k.split(ctx, w, color, key)
	return d, withOp("split", err)
}

// intraSplit is Split of an intracommunicator.
func intraSplit(ctx context.Context, w *World, color, key int) (*World, error) {
	e := w.e
	// One Split at a time per rank: each reads the context counters that the previous
	// one left (two overlapping Splits of Worlds sharing a rank could pick one context).
	e.splitMu.Lock()
	defer e.splitMu.Unlock()
	recs, err := splitRecords(w, color, key)
	if err != nil {
		return nil, err
	}
	// Every rank of w learns every rank's color, key, context counters and busy blocks.
	if err := exchange(ctx, w, recs); err != nil {
		return nil, err
	}
	// The same block at every rank of w, whatever group it joins.
	base, ok := agreeBlock(w.Size(),
		func(r int) uint16 { _, _, _, next := splitRecAt(recs, r); return next },
		func(r int) []byte { return recs[r*splitRec+splitHead : (r+1)*splitRec] })
	if !ok {
		return nil, invalidf("too many Worlds derived and not freed (no communication context left; Free those no longer used)")
	}
	e.mu.Lock()
	fam := e.ctxs.takeSplit(base, color != NoColor)
	e.mu.Unlock()
	if color == NoColor {
		return nil, nil
	}
	return newSubgroup(e, base, newGroup(w, splitMembers(recs, w.Size(), color), fam)), nil
}

// splitRecords returns the buffer of Split's exchange with this rank's record filled in,
// or the error Split fails with before it communicates.
func splitRecords(w *World, color, key int) ([]byte, error) {
	e := w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkLocked(); err != nil {
		return nil, err
	}
	if err := e.ft.worldFailedLocked(w); err != nil {
		return nil, err
	}
	n, me := w.Size(), w.Rank()
	recs := make([]byte, n*splitRec)
	putSplitRec(recs[me*splitRec:], color, key, e.ctxs.top, e.ctxs.next)
	e.ctxs.busyBlocks(recs[me*splitRec+splitHead : (me+1)*splitRec])
	return recs, nil
}

// splitMembers returns the ranks (of the splitting World, n of them) that passed color,
// by key then rank.
func splitMembers(recs []byte, n, color int) []int {
	var members []int
	for r := range n {
		if c, _, _, _ := splitRecAt(recs, r); c == color {
			members = append(members, r)
		}
	}
	slices.SortStableFunc(members, func(a, b int) int {
		_, ka, _, _ := splitRecAt(recs, a)
		_, kb, _, _ := splitRecAt(recs, b)
		return cmpInt(ka, kb)
	})
	return members
}

// maxJobRank is the highest job rank of members (ranks of w).
func maxJobRank(w *World, members []int) int {
	m := 0
	for _, r := range members {
		jr, _ := jobRank(w, r)
		m = max(m, jr)
	}
	return m
}

// newGroup returns the group of members (ranks of w, in the new World's order), whose
// Worlds take their contexts from fam.
func newGroup(w *World, members []int, fam *family) *group {
	e, me := w.e, w.Rank()
	g := &group{ranks: make([]int, len(members)), of: make([]int32, maxJobRank(w, members)+1), fam: fam}
	for i := range g.of {
		g.of[i] = -1
	}
	for i, r := range members {
		jr, _ := jobRank(w, r)
		g.ranks[i], g.of[jr] = jr, int32(i)
		if r == me {
			g.me = i
		}
	}
	for i, jr := range g.ranks {
		if e.links.local(jr) {
			if i == g.me {
				g.localRank = g.localSize
			}
			g.localSize++
		}
	}
	return g
}

// splitRec is the size of one rank's record in Split's exchange: color, key, its
// engine's top and next context counters (splitHead bytes), then a bitmap of the Split
// blocks it uses (ctxAlloc.busyBlocks).
const (
	splitHead = 20
	splitRec  = splitHead + busyBytes
)

func putSplitRec(b []byte, color, key int, top, next uint16) {
	binary.LittleEndian.PutUint64(b, uint64(int64(color)))
	binary.LittleEndian.PutUint64(b[8:], uint64(int64(key)))
	binary.LittleEndian.PutUint16(b[16:], top)
	binary.LittleEndian.PutUint16(b[18:], next)
}

func splitRecAt(recs []byte, r int) (color, key int, top, next uint16) {
	b := recs[r*splitRec:]
	return int(int64(binary.LittleEndian.Uint64(b))), int(int64(binary.LittleEndian.Uint64(b[8:]))),
		binary.LittleEndian.Uint16(b[16:]), binary.LittleEndian.Uint16(b[18:])
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// exchange gives every rank of w the records of all: rank r's splitRec bytes of recs are
// sent to every other rank, and the others' arrive in place (exchangeAmong over every
// rank, with splitTag).
func exchange(ctx context.Context, w *World, recs []byte) error {
	all := make([]int, w.Size())
	for r := range all {
		all[r] = r
	}
	return exchangeAmong(ctx, w, all, w.Rank(), recs, splitTag)
}
