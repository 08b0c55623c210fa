package runtime

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/gorma-hpc/gorma/pmi"
)

// Spawning (MPI_Comm_spawn). A World's ranks ask golaunch for n new ranks of the job's
// program; the job grows, and the new ranks continue its numbering:
//
//  1. The World's rank 0 asks its agent (pmi gorma-spawn). The answer comes once every
//     new rank has put its card and passed its group's fence in Init; rank 0 then reads
//     their cards from its agent and sends the first job rank and the cards, or why the
//     spawn failed, to the World's other ranks.
//  2. Each spawning rank grows its tables by job rank (links.growLocked) and learns the
//     cards. A new rank's Init read every card its agent holds, its spawners' among them.
//  3. Both sides build the intercommunicator as CreateIntercomm does (unite): each
//     group exchanges its records, and the two leaders (the spawning World's rank 0 and
//     the new group's first rank) swap their groups' in context spawnCtx, which both
//     know without agreeing on it. The Split block free at every rank of both groups is
//     the intercommunicator's.
//
// A new rank's Init World spans its group (the whole kind over the group's job ranks,
// context 0 like every Init's World: the groups are disjoint, so their messages never
// meet), and Parent is the intercommunicator. A rank that learns of spawned ranks in
// another way (a connection request, a group description) grows then (acceptPeer,
// learnRanks).

// spawnCtx is the context of the leaders' swap, beside the control contexts above Split's
// blocks: no World has it, so a revoked or freed World never stands in a spawn's way.
const spawnCtx = ctlCtx - 2

// spawnTag is the tag of Spawn's messages: the leaders' swap, and rank 0's answer to its
// World's other ranks (on that World's internal context).
const spawnTag = MaxTag - 12

// spawner is the part that grows the job: Spawn on the spawners' side, a spawned rank's
// Init (its group's World and Parent) on the other, and the devices a grown job needs
// (grow.go). group and parent are written by Init before it returns and only read after.
type spawner struct {
	e      *engine
	group  pmi.SpawnGroup // this rank's spawned group; Count 0 if it was not spawned
	parent *World
}

// Spawn starts n new ranks of the job's program, first on agents that joined the
// cluster after the job began, and returns the intercommunicator whose remote group is
// them (MPI_Comm_spawn); Merge makes one World of it. Every rank of w calls it. It needs
// golaunch, and returns once the new ranks have passed Init.
func (w *World) Spawn(ctx context.Context, n int) (*World, error) {
	if err := w.live(); err != nil {
		return nil, withOp("spawn", err)
	}
	x, err := w.e.spawn.spawn(ctx, w, n)
	return x, withOp("spawn", err)
}

// Parent returns a spawned rank's intercommunicator to its spawners (MPI_Comm_get_parent), or nil.
func (w *World) Parent() *World { return w.e.spawn.parent }

// spawn is Spawn of w.
func (s *spawner) spawn(ctx context.Context, w *World, n int) (*World, error) {
	e := s.e
	if w.k.isInter() {
		return nil, invalidf("Spawn takes an intracommunicator; this World is an intercommunicator (Spawn on its Local World, or Merge it first)")
	}
	if n < 1 {
		return nil, invalidf("spawn of %d ranks: want at least 1", n)
	}
	cl, ok := e.pm.(*pmi.Client)
	switch {
	case e.pm == nil:
		return nil, invalidf("Spawn needs golaunch: rank %d was not started by a launcher (a world of one); run the program with golaunch", e.rank)
	case !ok:
		return nil, invalidf("Spawn needs golaunch: rank %d runs under Slurm, Hydra or Flux, which start a job's ranks at once; run the job with golaunch to grow it", e.rank)
	}
	e.splitMu.Lock()
	defer e.splitMu.Unlock()
	var answer []byte
	if w.Rank() == 0 {
		answer = s.ask(ctx, cl, n)
		if err := sendAnswer(ctx, w, answer); err != nil {
			return nil, err
		}
	} else {
		var err error
		if answer, err = recvAnswer(ctx, w); err != nil {
			return nil, err
		}
	}
	first, cards, err := decodeAnswer(answer, n)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.links.growLocked(first + n)
	for i, c := range cards {
		e.links.learnCardLocked(first+i, c)
	}
	e.mu.Unlock()
	swap := func(mine, theirs []byte) (int, error) {
		return e.swap(ctx, spawnCtx, first, spawnTag, mine, theirs, false)
	}
	return s.intercomm(ctx, w, swap)
}

// ask is rank 0's request for n ranks, and its answer to its World's other ranks: the
// first new job rank and the new ranks' cards, or why the spawn failed (answer's
// layout: encodeAnswer).
func (s *spawner) ask(ctx context.Context, cl *pmi.Client, n int) []byte {
	e := s.e
	first, err := cl.Spawn(ctx, n)
	if err != nil {
		why := err.Error()
		if errors.Is(err, pmi.ErrRefused) {
			why = strings.TrimPrefix(why, pmi.ErrRefused.Error()+": ")
		}
		return failAnswer(fmt.Sprintf("job rank %d, rank 0 of the spawning World, asked golaunch for %d ranks: %s", e.rank, n, why))
	}
	cards := make([][]byte, n)
	for i := range cards {
		b, err := cl.Get(ctx, first+i, keyCard)
		if err == nil {
			_, err = decodeCard(b)
		}
		if err != nil {
			return failAnswer(fmt.Sprintf("rank %d could not read the card of spawned rank %d: %v", e.rank, first+i, err))
		}
		cards[i] = b
	}
	return encodeAnswer(first, cards)
}

// An answer is 1 on success, the first job rank (u32), then each card (u16 length,
// bytes); or 0 and the failure's text.
func encodeAnswer(first int, cards [][]byte) []byte {
	b := binary.LittleEndian.AppendUint32([]byte{1}, uint32(first))
	for _, c := range cards {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(c)))
		b = append(b, c...)
	}
	return b
}

func failAnswer(why string) []byte { return append([]byte{0}, why...) }

// decodeAnswer parses an answer for n ranks: the first job rank and the cards, or the
// failure it carries as an error.
func decodeAnswer(b []byte, n int) (int, []card, error) {
	if len(b) > 0 && b[0] == 0 {
		return 0, nil, invalidf("%s", b[1:])
	}
	if len(b) < 5 || b[0] != 1 {
		return 0, nil, invalidf("spawn answer of %d bytes (mismatched versions?)", len(b))
	}
	first := int(binary.LittleEndian.Uint32(b[1:]))
	p := b[5:]
	cards := make([]card, n)
	for i := range cards {
		if len(p) < 2 || len(p) < 2+int(binary.LittleEndian.Uint16(p)) {
			return 0, nil, invalidf("spawn answer cut short at card %d of %d (mismatched versions?)", i, n)
		}
		m := int(binary.LittleEndian.Uint16(p))
		c, err := decodeCard(p[2 : 2+m])
		if err != nil {
			return 0, nil, invalidf("card of spawned rank %d: %v", first+i, err)
		}
		cards[i], p = c, p[2+m:]
	}
	if len(p) != 0 {
		return 0, nil, invalidf("spawn answer of %d cards with %d bytes more (mismatched versions?)", n, len(p))
	}
	if first+n > maxJobRanks {
		return 0, nil, invalidf("spawned ranks %d to %d: a job holds at most %d ranks", first, first+n-1, maxJobRanks)
	}
	return first, cards, nil
}

// sendAnswer sends rank 0's answer to w's other ranks: its length, then its bytes.
func sendAnswer(ctx context.Context, w *World, answer []byte) error {
	e := w.e
	head := binary.LittleEndian.AppendUint32(nil, uint32(len(answer)))
	for r := 1; r < w.Size(); r++ {
		jr, _ := jobRank(w, r)
		if err := e.send(ctx, callNone, w.ctx+1, head, 1, jr, spawnTag); err != nil {
			return err
		}
		if err := e.send(ctx, callNone, w.ctx+1, answer, 1, jr, spawnTag); err != nil {
			return err
		}
	}
	return nil
}

// recvAnswer receives rank 0's answer (sendAnswer).
func recvAnswer(ctx context.Context, w *World) ([]byte, error) {
	e := w.e
	leader, _ := jobRank(w, 0)
	var head [4]byte
	if _, err := e.recv(ctx, w.ctx+1, head[:], 1, leader, spawnTag, true); err != nil {
		return nil, err
	}
	answer := make([]byte, binary.LittleEndian.Uint32(head[:]))
	st, err := e.recv(ctx, w.ctx+1, answer, 1, leader, spawnTag, true)
	if err != nil {
		return nil, err
	}
	return answer[:st.Bytes], nil
}

// intercomm builds the intercommunicator between w's ranks and the other group, whose
// leader w's rank 0 reaches through swap (unite), as CreateIntercomm does. The caller
// holds splitMu.
func (s *spawner) intercomm(ctx context.Context, w *World, swap func(mine, theirs []byte) (int, error)) (*World, error) {
	e := s.e
	u, err := unite(ctx, w, 0, 0, 0, w.Rank(), swap)
	if err != nil {
		return nil, err
	}
	base, ok := u.agree()
	if !ok {
		return nil, invalidf("too many Worlds derived and not freed (no communication context left; Free those no longer used)")
	}
	e.mu.Lock()
	fam := e.ctxs.takeSplit(base, true)
	lctx, _, _ := e.ctxs.takeFamily(fam) // a fresh family: nothing to reuse
	e.mu.Unlock()
	return interOn(e, base, lctx, u.local, u.remote, fam), nil
}

// groupWorld makes Init's World of a spawned rank: its group's ranks, on context 0.
func (s *spawner) groupWorld(g pmi.SpawnGroup) *World {
	e := s.e
	ranks := make([]int, g.Count)
	for i := range ranks {
		ranks[i] = g.First + i
	}
	s.group = g
	e.all = newJobGroup(e, ranks, nil)
	e.root = &World{e: e, k: whole{}, g: e.all, own: e.all}
	e.ft.register(e.root, ranks)
	return e.root
}

// joinParent makes a spawned rank's Parent, the intercommunicator between its group's
// World w and its spawners, whose leader is job rank g.Leader.
func (s *spawner) joinParent(ctx context.Context, w *World, g pmi.SpawnGroup) error {
	e := s.e
	e.splitMu.Lock()
	defer e.splitMu.Unlock()
	swap := func(mine, theirs []byte) (int, error) {
		return e.swap(ctx, spawnCtx, g.Leader, spawnTag, mine, theirs, false)
	}
	p, err := s.intercomm(ctx, w, swap)
	if err != nil {
		return fmt.Errorf("join the World that spawned ranks %d to %d (its rank 0 is job rank %d): %w", g.First, g.First+g.Count-1, g.Leader, err)
	}
	s.parent = p
	return nil
}

// optionalCard reports whether rank r's card may be missing from the agent at Init: a
// spawned rank reads every card, and a group spawned at the same time as its own may not
// have published theirs yet (it is read on first contact).
func (s *spawner) optionalCard(r int) bool {
	g := s.group
	return g.Count > 0 && (r < g.First || r >= g.First+g.Count)
}

// learnRanks makes sure this rank knows job ranks jobs, which another group's
// description named (unite): a rank spawned since this rank last heard of the job's size
// grows its tables, and a card it does not hold is read from the process manager.
func learnRanks(ctx context.Context, e *engine, jobs []int) error {
	if len(jobs) == 0 {
		return nil
	}
	top := 0
	for _, jr := range jobs {
		if jr < 0 || jr >= maxJobRanks {
			return invalidf("the other group names job rank %d (mismatched versions?)", jr)
		}
		top = max(top, jr)
	}
	_, golaunch := e.pm.(*pmi.Client)
	e.mu.Lock()
	old := e.links.known()
	e.links.growLocked(top + 1)
	t := e.links.table()
	var missing []int
	for _, jr := range jobs {
		// Under golaunch every card is known (between reads them); under a foreign PM
		// they are read on first contact, but for ranks spawned since Init.
		if !t.cardOK[jr] && (golaunch || jr >= old) {
			missing = append(missing, jr)
		}
	}
	e.mu.Unlock()
	if e.links.pm == nil {
		return nil
	}
	for _, jr := range missing {
		if _, err := e.links.cardOf(ctx, jr); err != nil {
			return fmt.Errorf("rank %d of the other group: %w", jr, err)
		}
	}
	return nil
}
