package runtime

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/gorma-hpc/gorma/runtime/internal/matching"
)

// Freeing Worlds and reusing their contexts (MPI_Comm_free).
//
// Contexts are 16-bit, so a program that made Worlds without ever giving them back would
// run out: about 16000 Dups of Init's World, about 2000 Splits. Free gives a World's four
// contexts back, and later Dups and Splits reuse them. The danger of reuse is a message
// of the freed World that is still on its way: received on a new World that has the same
// context, it would be taken for one of its messages. So a context is reused at a rank
// only once every other rank of the freed World has said that it is done with it:
//
//   - Free discards this rank's unexpected messages on the World's contexts (a rendezvous
//     offer is answered with FIN, so its sender completes). It marks the contexts freed
//     and sends every other rank of the World a free mark. A message that a peer sent on
//     them before its own mark, arriving later, is discarded the same way. One that
//     follows the peer's mark belongs to the World the peer has already made on the same
//     contexts and is kept (discardFreedLocked). An empty message in the engine's control
//     context (ctlCtx) whose tag is the World's context. A peer's messages arrive in the
//     order it sent them, so once its mark for a World has arrived, nothing it sent on
//     that World can still be on the way.
//   - Dup on a World without a group takes the lowest freed context of such Worlds
//     before counting up, and waits for the marks of that context's previous World (it
//     is collective in any case: every rank frees and dups in the same order).
//   - Split reuses a block of contexts when every rank of the splitting World reports it
//     free: no live World of that rank in it, and every mark it awaits for the block
//     received. A block one rank still uses can then only be reused among ranks that
//     share no World on it with that rank.

// worldLife is shared by a World made by Dup or Split and its siblings: Free sets freed,
// after which every call on any of them fails. Init's World has none (it cannot be freed).
type worldLife struct {
	freed  atomic.Bool
	onFree []func() // run by Free, in order; guarded by the engine's mu
}

// errFreed is the error of a call on a freed World.
var errFreed = invalidf("the World was freed (Free); use a World that Dup or Split returned since")

// FreedErr returns the ErrInvalid error of a call on w after w (or, for a sibling, its
// World) was freed, else nil: one atomic load. Libraries whose calls do not all go
// through the runtime's messages (package collectives' shared-memory steps) check it
// first, so that every call on a freed World fails alike.
func (s *subWorld) FreedErr() error { return (*World)(s).live() }

// live returns the error of a call on a nil or freed World, else nil. Every call that
// takes a World and may run on a freed one starts with it. It inlines, for the send and
// receive paths. No lock: Free's store is enough, a call racing with Free being the
// caller's error anyway.
func (w *World) live() error {
	if w == nil {
		return errNilWorld
	}
	if w.life != nil && w.life.freed.Load() {
		return errFreed
	}
	if w.ft != nil && w.ft.revoked.Load() {
		return errRevoked
	}
	return nil
}

// OnFree registers f to run when w is freed, before Free returns. It is for libraries
// that derive Worlds of their own from w (package window's Dup of it): f frees them, so
// that their contexts return too. Every rank must register the same functions in the
// same order, as every rank frees in the same order; f runs with no lock held and may call
// Free on other Worlds, not on w. It fails as every call does after Finalize, and with
// ErrInvalid on Init's World (never freed) or a freed one.
func (s *subWorld) OnFree(f func()) error {
	w := (*World)(s)
	if err := w.live(); err != nil {
		return withOp("onfree", err)
	}
	e := w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkLocked(); err != nil {
		return withOp("onfree", err)
	}
	if w.life == nil {
		return nil // Init's World is never freed: f would never run
	}
	w.life.onFree = append(w.life.onFree, f)
	return nil
}

// Free gives w's communication contexts back for reuse (MPI_Comm_free), after running the
// delete functions of w's attributes. Every rank of w calls it once, after its last call on
// w, in the same order relative to its Dup, Split and Free calls; it does not wait. Then
// communication calls on w or its sibling fail with ErrInvalid. Operations under way
// complete normally. Init's World cannot be freed. After Finalize, Free does nothing.
func (w *World) Free() error {
	if w == nil {
		return withOp("free", errNilWorld)
	}
	if w.sibling {
		return withOp("free", invalidf("a sibling World is freed with the World it belongs to"))
	}
	if w.life == nil {
		return withOp("free", invalidf("Init's World cannot be freed (Finalize ends it)"))
	}
	e := w.e
	e.mu.Lock()
	if e.finalized {
		e.mu.Unlock()
		return nil
	}
	if err := e.checkLocked(); err != nil {
		e.mu.Unlock()
		return withOp("free", err)
	}
	if w.life.freed.Load() {
		e.mu.Unlock()
		return withOp("free", invalidf("the World was freed already"))
	}
	base := w.ctx
	w.life.freed.Store(true) // from here on every call on w fails, a second Free too
	hooks := w.life.onFree
	w.life.onFree = nil
	hooks = append(hooks, w.k.freeWith(w)...) // an intercommunicator's local group goes with it
	e.mu.Unlock()
	deleteAttrs(w) // attr.go: the attributes' delete functions
	// Derived Worlds first (package window's), as their traffic is the same World's.
	for _, f := range hooks {
		f()
	}
	e.watch.mu.Lock()
	delete(e.watch.inner, base/4) // a later World may get the context
	e.watch.mu.Unlock()
	e.obs.markInternal(base, false)

	e.mu.Lock()
	defer e.mu.Unlock()
	fam := w.k.fam(w)
	lf := lateFree{members: w.g.ranks, grouped: fam != nil}
	e.ctxs.giveBack(base, fam) // now, in program order: every rank's next Dup picks alike
	if e.pendingOnLocked(base) != "" {
		// MPI_Comm_free marks the World for deallocation: what is under way completes
		// normally, and the last of it to complete releases the contexts (settleLocked);
		// a Dup that reuses them waits for that (reuseWaitLocked).
		if e.late == nil {
			e.late = map[uint16]lateFree{}
		}
		lf.done = e.match.newRequestLocked(e, reqSync)
		e.late[base] = lf
		return nil
	}
	e.releaseWorldLocked(base, lf)
	e.poll.handoffLocked()
	return nil
}

// lateFree is a World freed while operations on it were under way: what releasing its
// contexts needs once they complete.
type lateFree struct {
	members []int    // the World's job ranks, for the free marks
	grouped bool     // made by Split (or a Dup of one)
	done    *Request // completed once the contexts are released, for a Dup waiting to reuse them
}

// releaseWorldLocked gives the contexts of the freed World at base back: its unexpected
// messages are discarded, its contexts marked freed, and the free marks exchanged.
func (c *comms) releaseWorldLocked(base uint16, lf lateFree) {
	e := c.e
	e.discardUnexpectedLocked(base)
	e.ctxs.markFreed(base)
	e.exchangeMarksLocked(base, lf.members)
	e.ft.releasedLocked(base)
	e.ctxs.release(base, lf.grouped)
}

// settleLocked releases the contexts of a World freed while operations were under way
// on it, once the one on ctx that just completed was the last.
func (c *comms) settleLocked(ctx uint16) {
	e := c.e
	base := ctx &^ (ctxPerWorld - 1) // a World's contexts start at a multiple of ctxPerWorld
	lf, ok := e.late[base]
	if !ok || e.pendingOnLocked(base) != "" {
		return
	}
	delete(e.late, base)
	if len(e.late) == 0 {
		e.late = nil
	}
	e.releaseWorldLocked(base, lf)
	if lf.done != nil {
		e.completeLocked(lf.done, nil)
	}
}

// exchangeMarksLocked sends the free mark of the World at base to every other rank of
// members, and awaits theirs, unless a rank's has arrived already.
func (c *comms) exchangeMarksLocked(base uint16, members []int) {
	e := c.e
	for _, jr := range members {
		if jr == e.rank {
			continue
		}
		early := matching.Envelope{Ctx: ctlCtx, Src: jr, Tag: int32(base)}
		if m := e.match.ux.Take(early); m != nil {
			e.match.uxMem.put(m) // jr freed the World first: nothing of it is on the way
		} else {
			e.ctxs.await(base, jr)
		}
		if r := e.startSendLocked(ctlCtx, nil, 1, jr, int(base)); r != nil {
			if r.done {
				e.match.recycleLocked(r)
			} else {
				r.detached = true
			}
		}
	}
}

// pendingOnLocked describes what this rank still has under way on the World whose
// contexts start at base ("" if nothing): posted receives and probes, sends waiting in
// an out queue, rendezvous sends and reads not yet finished.
func (c *comms) pendingOnLocked(base uint16) string {
	e := c.e
	on := func(ctx uint16) bool { return ctx >= base && ctx < base+ctxPerWorld }
	for r := range e.match.posted.All() {
		if on(r.ctx) {
			return fmt.Sprintf("a receive (source %d, tag %d) is posted", r.peer, r.tag)
		}
	}
	for r := range e.match.probes.All() {
		if on(r.ctx) {
			return "a probe is waiting"
		}
	}
	for _, r := range e.match.table.slots {
		if r != nil && !r.done && on(r.ctx) {
			if r.kind == reqSend {
				return fmt.Sprintf("a send to rank %d (tag %d) has not been read by its receiver", r.peer, r.tag)
			}
			return fmt.Sprintf("a receive from rank %d (tag %d) is still being read", r.peer, r.tag)
		}
	}
	for _, p := range e.links.peers {
		if p == nil {
			continue
		}
		for i := 0; i < p.out.n; i++ {
			if r := p.out.at(i).r; r != nil && !r.done && !r.dropped && on(r.ctx) && r.kind == reqSend {
				return fmt.Sprintf("a send to rank %d (tag %d) waits to go out", r.peer, r.tag)
			}
		}
	}
	return ""
}

// discardUnexpectedLocked drops the unexpected messages on the contexts of the World at
// base, releasing rendezvous offers.
func (c *comms) discardUnexpectedLocked(base uint16) {
	e := c.e
	for m := range e.match.ux.All() {
		if m.ctx >= base && m.ctx < base+ctxPerWorld {
			e.match.ux.Remove(&m.link)
			if m.kind == msgRTS {
				e.links.queueFINLocked(e.links.peers[m.src], m.cookie)
			}
			if m.sync != nil { // an Ssend to this rank itself: discarded is as good as received
				e.completeLocked(m.sync, nil)
			}
			e.match.uxMem.put(m)
		}
	}
}

// discardFreedLocked handles a message of src on a freed context: one that src sent on
// the freed World (before its free mark) is dropped, a rendezvous offer released. One
// that follows src's mark belongs to the World that src already made on the same
// contexts (a Dup or Split here will make it too) and is kept. It reports whether the
// message was dropped.
func (c *comms) discardFreedLocked(src int, h *header) bool {
	e := c.e
	if !e.ctxs.isFreed(h.ctx) {
		return false
	}
	if !e.ctxs.awaiting(h.ctx&^(ctxPerWorld-1), src) {
		return false // src's mark came first: the message is of the next World
	}
	if h.kind == msgRTS && src != e.rank {
		e.links.queueFINLocked(e.links.peers[src], h.cookie)
	}
	return true
}

// markLocked handles a free mark from src for the World at base, and reports whether it
// took it: awaited, it ends the wait for src (and completes the Dup waiting for it, if
// any). Otherwise src freed the World before this rank did, and the mark waits in the
// unexpected queue for this rank's Free.
func (c *comms) markLocked(src int, base uint16) bool {
	e := c.e
	if !e.ctxs.markArrived(src, base) {
		return false
	}
	if r := e.match.posted.Take(matching.Envelope{Ctx: ctlCtx, Src: src, Tag: int32(base)}); r != nil {
		e.completeLocked(r, r.deliver(src, int32(base), nil))
	}
	return true
}

// dupReuseLocked returns a freed context of a World without a group for Dup, once every
// other rank of that World has sent its free mark (waiting for them, failing if one of
// them failed), or ok false when there is none. Called with mu held, which it releases
// while it waits.
func (c *comms) dupReuseLocked() (base uint16, ok bool, err error) {
	e := c.e
	base, ok = e.ctxs.freedDup()
	if !ok {
		return 0, false, nil
	}
	if err := e.reuseWaitLocked(base); err != nil {
		return 0, false, err
	}
	return e.ctxs.reuseDup(base), true, nil
}

// reuseWaitLocked waits until the contexts of the freed World at base may be used again:
// released at this rank (its operations under way completed, settleLocked), and every
// other rank's free mark arrived. Called with mu held, which it releases while it waits.
func (c *comms) reuseWaitLocked(base uint16) error {
	e := c.e
	if lf, ok := e.late[base]; ok {
		if err := e.waitLocked(context.Background(), lf.done); err != nil {
			return err
		}
		e.match.recycleLocked(lf.done)
	}
	for {
		jr, waiting := e.ctxs.firstAwaited(base)
		if !waiting {
			return nil
		}
		r := e.match.newRequestLocked(e, reqRecv)
		r.ctx, r.peer, r.tag, r.esize, r.anyFail = ctlCtx, jr, int(base), 1, true
		e.receiveLocked(r) // posted: an awaited mark is never queued (markLocked)
		if _, err := e.finishRecvLocked(context.Background(), r, nil); err != nil {
			return err
		}
	}
}

// takeFamilyLocked is takeFamily for a Dup: a context a freed World of the family gave
// back is used once reuseWaitLocked has seen it released. Called with mu held, which it
// releases while it waits.
func (cs *comms) takeFamilyLocked(f *family) (uint16, bool, error) {
	e := cs.e
	c, reused, ok := e.ctxs.takeFamily(f)
	if !ok || !reused {
		return c, ok, nil
	}
	if err := e.reuseWaitLocked(c); err != nil {
		e.ctxs.release(c, true)
		return 0, false, err
	}
	e.ctxs.unfree(c, ctxPerWorld)
	return c, true, nil
}
