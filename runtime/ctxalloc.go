package runtime

import "slices"

// Communication contexts. Every World has a 16-bit context that its messages carry; a
// receive takes only messages of its own context. The space is laid out as:
//
//   - [0, next): Init's World (context 0) and the Worlds Dup derived from it, ctxPerWorld
//     contexts each, counting up. Dup does not communicate: every rank dups in the same
//     order, so every rank picks the same context.
//   - [top, splitTop): Split blocks of splitBlock contexts, block k at
//     [splitTop-(k+1)*splitBlock, splitTop-k*splitBlock), counting down. Split agrees on
//     a block through an exchange (agreeBlock): the lowest block that no rank of the
//     splitting World uses and that lies above every rank's next.
//   - [splitTop, 1<<16): the engine's control context (ctlCtx).
//
// Free gives a World's contexts back (free.go): they are marked freed, and reused once
// every other rank of that World has sent its free mark (awaits).

// ctxPerWorld is how many communication contexts a World reserves: ctx for its messages,
// ctx+1 for its internal traffic (Barrier, Split), ctx+2 and ctx+3 for its Sibling.
const ctxPerWorld = 4

// splitBlock is how many contexts Split reserves per new group: the World itself and
// splitBlock/ctxPerWorld-1 Dups of it.
const splitBlock = 8 * ctxPerWorld

// Split blocks, and the bitmap of busy blocks a rank sends in Split's exchange.
const (
	splitTop    = 1<<16 - ctxPerWorld
	splitBlocks = splitTop / splitBlock
	busyBytes   = (splitBlocks + 7) / 8
)

// ctlCtx is the engine's control context (free marks). Split's blocks lie below
// splitTop, so no World ever has it, nor the contexts just below it: ULFM's messages'
// (ftCtx), the spawn leaders' swap (spawnCtx) and observation's gather at Finalize
// (obsCtx).
const ctlCtx = 1<<16 - 1

// ctxAlloc is a rank's bookkeeping of communication contexts: which are handed out,
// freed, and awaiting peers' free marks. It does no I/O; the engine guards it with mu.
type ctxAlloc struct {
	next      uint16               // Dup's next context (Init's World and its Dups), counting up
	top       uint16               // Split's contexts are at or above it, counting down
	dupFree   []uint16             // freed contexts of Worlds without a group, ascending
	blockLive map[uint16]int       // by Split block base: this rank's live Worlds in it
	freed     [1 << 16 / 64]uint64 // contexts freed and not reused: messages on them are discarded
	awaits    map[uint16][]int     // by World context: ranks whose free mark is awaited
}

func newCtxAlloc() ctxAlloc {
	return ctxAlloc{next: ctxPerWorld, top: splitTop, blockLive: map[uint16]int{}, awaits: map[uint16][]int{}}
}

// takeDup returns the next unused context for a Dup of a World without a group, or false
// when the space up to the Split blocks is spent.
func (a *ctxAlloc) takeDup() (uint16, bool) {
	if a.next == 0 || int(a.next)+ctxPerWorld > int(a.top) {
		return 0, false
	}
	c := a.next
	a.next += ctxPerWorld
	return c, true
}

// freedDup returns the lowest freed context of a World without a group, if any.
func (a *ctxAlloc) freedDup() (uint16, bool) {
	if len(a.dupFree) == 0 {
		return 0, false
	}
	return a.dupFree[0], true
}

// reuseDup hands out the freed context base (freedDup's) again; every mark it awaited
// must have come.
func (a *ctxAlloc) reuseDup(base uint16) uint16 {
	if i, ok := slices.BinarySearch(a.dupFree, base); ok {
		a.dupFree = slices.Delete(a.dupFree, i, i+1)
	}
	a.unfree(base, ctxPerWorld)
	return base
}

// family holds the communication contexts that Split reserved for the Worlds on one
// group. The first World takes the first four, each Dup of any of them the next four
// (Dup itself does not communicate, so the block is fixed at Split), or the lowest four
// that a freed World of the family gave back (free). Every rank of the group frees and
// dups in the same order, so every rank picks the same. Guarded by the engine's mu.
type family struct {
	next, end uint16
	free      []uint16 // contexts of freed Worlds of the family, ascending
}

// takeFamily returns the context of a Dup in f's block, or false when the block is full.
// A context a freed World gave back comes first (reused): the caller waits for its
// release (engine.takeFamilyLocked).
func (a *ctxAlloc) takeFamily(f *family) (c uint16, reused, ok bool) {
	if len(f.free) > 0 {
		c = f.free[0]
		f.free = f.free[1:]
		a.blockLive[blockOf(c)]++
		return c, true, true
	}
	if int(f.next)+ctxPerWorld > int(f.end) {
		return 0, false, false
	}
	c = f.next
	f.next += ctxPerWorld
	a.blockLive[blockOf(c)]++
	return c, false, true
}

// giveBack records that the World at base was freed, for reuse by a later Dup: of
// Init's World's line (fam nil), or of fam's block. It is called at Free, in program
// order, whether or not operations under way delay the contexts' release.
func (a *ctxAlloc) giveBack(base uint16, fam *family) {
	list := &a.dupFree
	if fam != nil {
		list = &fam.free
	}
	i, _ := slices.BinarySearch(*list, base)
	*list = slices.Insert(*list, i, base)
}

// takeSplit records that Split agreed on the block at base; member is whether this rank
// has a World in it. It returns the new group's family.
func (a *ctxAlloc) takeSplit(base uint16, member bool) *family {
	a.top = min(a.top, base)
	a.unfree(base, splitBlock)
	if !member {
		return nil
	}
	a.blockLive[base]++
	return &family{next: base + ctxPerWorld, end: base + splitBlock}
}

// release ends the life of the World at base (grouped: made by Split or a Dup of one)
// in its Split block: with no live World left there, the block may be agreed on again.
func (a *ctxAlloc) release(base uint16, grouped bool) {
	if !grouped {
		return
	}
	if b := blockOf(base); a.blockLive[b] > 1 {
		a.blockLive[b]--
	} else {
		delete(a.blockLive, b)
	}
}

// markFreed marks the contexts of the World at base freed: messages on them are
// discarded (discardFreedLocked) until they are reused.
func (a *ctxAlloc) markFreed(base uint16) {
	for c := base; c < base+ctxPerWorld; c++ {
		a.freed[c>>6] |= 1 << (c & 63)
	}
}

// unfree makes the n contexts from base live again.
func (a *ctxAlloc) unfree(base uint16, n int) {
	for c := base; c < base+uint16(n); c++ {
		a.freed[c>>6] &^= 1 << (c & 63)
	}
}

func (a *ctxAlloc) isFreed(ctx uint16) bool { return a.freed[ctx>>6]&(1<<(ctx&63)) != 0 }

// await records that rank jr's free mark for the World at base is awaited.
func (a *ctxAlloc) await(base uint16, jr int) { a.awaits[base] = append(a.awaits[base], jr) }

// awaiting reports whether src's free mark for the World at base is awaited.
func (a *ctxAlloc) awaiting(base uint16, src int) bool { return slices.Contains(a.awaits[base], src) }

// firstAwaited returns a rank whose free mark for the World at base is awaited, if any.
func (a *ctxAlloc) firstAwaited(base uint16) (int, bool) {
	if aw := a.awaits[base]; len(aw) > 0 {
		return aw[0], true
	}
	return 0, false
}

// markArrived ends the wait for src's free mark for the World at base, and reports
// whether it was awaited.
func (a *ctxAlloc) markArrived(src int, base uint16) bool {
	aw := a.awaits[base]
	i := slices.Index(aw, src)
	if i < 0 {
		return false
	}
	if aw = slices.Delete(aw, i, i+1); len(aw) == 0 {
		delete(a.awaits, base)
	} else {
		a.awaits[base] = aw
	}
	return true
}

// busyBlocks fills busy (busyBytes bytes) with this rank's Split blocks in use: a live
// World in them, or a free mark still awaited for one of their Worlds.
func (a *ctxAlloc) busyBlocks(busy []byte) {
	clear(busy)
	mark := func(b uint16) {
		if k := blockIndex(b); k >= 0 && k < splitBlocks {
			busy[k/8] |= 1 << (k % 8)
		}
	}
	for b, n := range a.blockLive {
		if n > 0 {
			mark(b)
		}
	}
	for base := range a.awaits {
		if base >= a.top && base < splitTop {
			mark(blockOf(base))
		}
	}
}

// agreeBlock returns the Split block that n ranks agree on, given each rank's next
// (Dup's counter) and busy bitmap: the lowest block that no rank uses, above every
// rank's Dups. Every rank computes it from the same records, so every rank gets the same
// answer; false when no block is left.
func agreeBlock(n int, next func(r int) uint16, busy func(r int) []byte) (uint16, bool) {
	maxNext := uint16(0)
	for r := range n {
		maxNext = max(maxNext, next(r))
	}
	for k := 0; k < splitBlocks && int(blockBase(k)) >= int(maxNext); k++ {
		free := true
		for r := 0; r < n && free; r++ {
			free = !blockBusy(busy(r), k)
		}
		if free {
			return blockBase(k), true
		}
	}
	return 0, false
}

func blockBase(k int) uint16 { return uint16(splitTop - (k+1)*splitBlock) }

// blockIndex returns k of the block whose base is b.
func blockIndex(b uint16) int { return (splitTop-int(b))/splitBlock - 1 }

// blockOf returns the base of the Split block holding context c.
func blockOf(c uint16) uint16 {
	k := (splitTop - 1 - int(c)) / splitBlock
	return blockBase(k)
}

func blockBusy(busy []byte, k int) bool { return busy[k/8]&(1<<(k%8)) != 0 }
