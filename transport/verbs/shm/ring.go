package shm

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"
)

// Messages are sent against credits: the receiver counts the receives it has ever posted
// in the ring header, and the sender starts a message only when that count exceeds the
// messages it has started. So a Send waits in the sender's queue (not in the ring) until a
// receive is posted for it, and a Send flushed before that never arrives.
//
// An inbound ring carries Sends, SendWithImms and the immediates of RDMAWriteWithImm from
// one peer QP (the only sender) to the QP that owns it (the only receiver). It lives in the
// owner's arena as two raw regions: a header of ringHdrSize bytes and a data area of a power
// of two of 64-byte slots. The sender writes through its mapping of the owner's arena; the
// owner reads through its own.
//
// A record occupies one or more contiguous slots and never wraps around the end of the data
// area (the sender shortens a fragment instead). Its first slot starts with a 16-byte header:
//
//	word0 (8 bytes): (pos+1) & seqMask | kind<<seqBits   pos = absolute slot position
//	word1 (8 bytes): length uint32 | imm uint32
//
// followed by the payload, which continues into the following slots. The sender writes word1
// and the payload with plain stores and publishes the record with one release store of word0
// (publish: a plain MOV on amd64, not the XCHG of an atomic Store, which stalls while the
// receiver polls the line). The receiver polls that single word of the slot at its position. An
// 8-byte message is header plus payload in one cache line. After consuming a record the
// receiver zeroes word0 of each of its slots but the first, so stale payload bytes can never
// pose as a header on a later lap (see consume). It then publishes its position in the header's
// head word (every slots/headLagDiv slots), which the sender reads only when its cached copy
// says the ring is full.
const (
	slotSize   = 64
	slotShift  = 6
	recHdrSize = 16
	inlineMax  = slotSize - recHdrSize // payload bytes in a one-slot record

	defaultRingSlots = 2048 // 128 KiB of data per QP
	minRingSlots     = 16
	maxRingSlots     = 1 << 20
	maxRecordSlots   = defaultRingSlots / 4 // fragment size limit, so both sides pipeline
	minChunkSlots    = 16                   // don't trickle fragments smaller than this into a nearly full ring

	// headLagDiv sets how far the published head may lag the receiver's position. The
	// receiver publishes it (a store, a fence and a check of txWait) only once it has
	// consumed slots/headLagDiv slots since it last did, not after every record, which
	// takes a fence off every small message's path. A sender never waits on the lag. It
	// waits only while its view of the head leaves less than a record's slots (at most
	// slots/4) free, and with a lag below slots/8 that view leaves more than 7/8 of the
	// ring free once the receiver has drained it. So a sender that waits has records
	// still in the ring, and the receiver's draining of them publishes the head again,
	// sees txWait and rings, as it always did.
	headLagDiv = 8

	seqBits = 56
	seqMask = 1<<seqBits - 1

	ringHdrSize = 256
	ringMagic   = 0x474e4952_4d485347 // "GSHMRING" little-endian
)

// Ring header offsets. Words written by different sides sit on different cache lines.
const (
	rhHead        = 0   // uint64: receiver position (receiver writes)
	rhMagic       = 64  // uint64: ringMagic (owner writes once)
	rhSlots       = 72  // uint32: data slots (owner writes once)
	rhOwnerState  = 76  // uint32: owner QP state, a peerCode (owner writes)
	rhClaim       = 80  // uint64: the sender that connected, claimDead once closed (CAS)
	rhNonce       = 88  // uint64: owner device nonce (owner writes once)
	rhQPN         = 96  // uint32: owner QP number (owner writes once)
	rhTxWait      = 128 // uint32: sender waits for space or credit (sender sets, receiver swaps to 0)
	rhSenderState = 132 // uint32: sender QP state, a peerCode (sender writes)
	rhStarted     = 136 // uint32: nonzero once the sender has put a record (sender writes once)
	rhPosted      = 192 // uint64: receives ever posted, the sender's credit (receiver writes)
)

// Record kinds, the top byte of word0.
const (
	recFirst    = 1 << 0 // first fragment of a message
	recLast     = 1 << 1 // last fragment of a message
	recSend     = 0 << 2
	recSendImm  = 1 << 2
	recWriteImm = 2 << 2 // the immediate of an RDMAWriteWithImm; length is the write's
	recTypeMask = 3 << 2
)

// peerCode is what a QP tells its peer through the ring headers when it leaves RTS.
type peerCode = uint32

const (
	codeLive   peerCode = 0
	codeClosed peerCode = 1 // closed or in Err: the peer's work fails with RetryExcErr
	codeRemOp  peerCode = 2 // a message could not be delivered (LocLenErr, LocProtErr at the receiver): RemOpErr
)

const claimDead = ^uint64(0)

// ring is a view of an inbound ring in one process's mapping. It is immutable after
// construction; the words it points to are shared memory.
type ring struct {
	hdr   []byte
	data  []byte
	slots uint64
	mask  uint64

	head        *atomic.Uint64
	magic       *atomic.Uint64
	ownerState  *atomic.Uint32
	claim       *atomic.Uint64
	txWait      *atomic.Uint32
	senderState *atomic.Uint32
	started     *atomic.Uint32
	posted      *atomic.Uint64
}

// newRing makes a view of a ring whose header is hdr (ringHdrSize bytes, 64-byte aligned)
// and whose data is data (slots*slotSize bytes).
func newRing(hdr, data []byte) ring {
	slots := uint64(len(data)) >> slotShift
	return ring{
		hdr:         hdr[:ringHdrSize:ringHdrSize],
		data:        data,
		slots:       slots,
		mask:        slots - 1,
		head:        (*atomic.Uint64)(unsafe.Pointer(&hdr[rhHead])),
		magic:       (*atomic.Uint64)(unsafe.Pointer(&hdr[rhMagic])),
		ownerState:  (*atomic.Uint32)(unsafe.Pointer(&hdr[rhOwnerState])),
		claim:       (*atomic.Uint64)(unsafe.Pointer(&hdr[rhClaim])),
		txWait:      (*atomic.Uint32)(unsafe.Pointer(&hdr[rhTxWait])),
		senderState: (*atomic.Uint32)(unsafe.Pointer(&hdr[rhSenderState])),
		started:     (*atomic.Uint32)(unsafe.Pointer(&hdr[rhStarted])),
		posted:      (*atomic.Uint64)(unsafe.Pointer(&hdr[rhPosted])),
	}
}

// initRing clears a freshly allocated ring (arena memory may be reused; data known to
// read zero is left untouched, so that a ring's pages fault in only as records reach
// them), records its owner, and publishes its magic last.
func initRing(hdr, data []byte, zero bool, nonce uint64, qpn uint32) ring {
	clear(hdr)
	if !zero {
		clear(data)
	}
	binary.LittleEndian.PutUint32(hdr[rhSlots:], uint32(len(data)>>slotShift))
	binary.LittleEndian.PutUint64(hdr[rhNonce:], nonce)
	binary.LittleEndian.PutUint32(hdr[rhQPN:], qpn)
	r := newRing(hdr, data)
	r.magic.Store(ringMagic)
	return r
}

// owner returns the owning device nonce and QP number that initRing recorded, which a
// connecting peer checks against the endpoint bytes (so a stale endpoint never attaches
// to a ring that now belongs to another QP).
func (r *ring) owner() (nonce uint64, qpn uint32) {
	return binary.LittleEndian.Uint64(r.hdr[rhNonce:]), binary.LittleEndian.Uint32(r.hdr[rhQPN:])
}

// word0 is the sequence-and-kind word of slot idx.
func (r *ring) word0(idx uint64) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&r.data[idx<<slotShift]))
}

// ready reports whether a record starts at absolute position pos. It reads the data only
// once the sender has put a record (started): a ring whose sender never writes is never
// read, so none of its pages is faulted in (`scripts/compare-scale.sh`, shm). The word
// shares its cache line with senderState, which the receiver's poll reads anyway.
func (r *ring) ready(pos uint64) bool {
	return r.started.Load() != 0 && r.word0(pos&r.mask).Load()&seqMask == (pos+1)&seqMask
}

// wholeAt reports whether a record at position pos holds a whole message (its first and
// last fragment), which a receive the sender's credit promised completes at once.
func (r *ring) wholeAt(pos uint64) bool {
	if r.started.Load() == 0 {
		return false
	}
	w0 := r.word0(pos & r.mask).Load()
	return w0&seqMask == (pos+1)&seqMask && (w0>>seqBits)&(recFirst|recLast) == recFirst|recLast
}

// recSlots is the number of slots of a record with n payload bytes.
func recSlots(n int) uint64 { return uint64(recHdrSize+n+slotSize-1) >> slotShift }

// tx is the sender's state for the peer's inbound ring. Guarded by the sending QP's mu.
type tx struct {
	r         ring   // the peer's ring, in our mapping of the peer's arena
	pos       uint64 // next slot position to write
	headCache uint64 // the receiver's head as last read
	msgs      uint64 // messages started (each consumes one of the peer's receives)
	credits   uint64 // the peer's posted-receive count as last read
	corrupt   bool   // the head word made no sense: the peer's memory is not trustworthy
	started   bool   // r.started is set
}

// credit reports whether the peer has a receive posted for the next message. Like space,
// it re-reads the shared counter only when the cached one is exhausted, and announces the
// sender in txWait before giving up, so that the receiver's next PostRecv rings its bell.
func (t *tx) credit() bool {
	if t.msgs < t.credits {
		return true
	}
	t.credits = t.r.posted.Load()
	if t.msgs < t.credits {
		return true
	}
	t.r.txWait.Store(1)
	t.credits = t.r.posted.Load()
	return t.msgs < t.credits
}

// space returns how many contiguous slots the sender may fill at its position, at most
// want, or 0 if it should wait. It re-reads the receiver's head only when the cached copy
// is short, and announces itself in txWait before giving up, so the receiver rings its
// doorbell when it frees space.
func (t *tx) space(want uint64) uint64 {
	if n := t.fit(want); n > 0 {
		return n
	}
	if !t.refresh() {
		return 0
	}
	if n := t.fit(want); n > 0 {
		return n
	}
	t.r.txWait.Store(1)
	if !t.refresh() {
		return 0
	}
	return t.fit(want)
}

func (t *tx) refresh() bool {
	h := t.r.head.Load()
	if h > t.pos || t.pos-h > t.r.slots || h < t.headCache {
		t.corrupt = true
		return false
	}
	t.headCache = h
	return true
}

func (t *tx) fit(want uint64) uint64 {
	free := t.r.slots - (t.pos - t.headCache)
	contig := t.r.slots - t.pos&t.r.mask
	n := min(free, contig, want)
	if n < want && n < minChunkSlots && contig >= free {
		return 0 // nearly full: wait for a useful chunk rather than trickle
	}
	return n
}

// put writes a record of n slots at the sender's position and publishes it with a release
// store of word0 (publish). The caller rings the peer's doorbell afterwards, which fences.
func (t *tx) put(kind uint8, n uint64, payload []byte, length, imm uint32) {
	if !t.started {
		t.r.started.Store(1) // before the record: a receiver that sees the record sees it
		t.started = true
	}
	off := (t.pos & t.r.mask) << slotShift
	copy(t.r.data[off+recHdrSize:], payload)
	binary.LittleEndian.PutUint64(t.r.data[off+8:], uint64(length)|uint64(imm)<<32)
	publish(t.r.word0(t.pos&t.r.mask), (t.pos+1)&seqMask|uint64(kind)<<seqBits)
	t.pos += n
}

// record is one record as the receiver sees it.
type record struct {
	kind    uint8
	n       uint64 // slots
	length  uint32
	imm     uint32
	payload []byte // aliases the ring
}

// peek reads the record at position pos into rec, if one is there. ok is false when none
// is; bad is true when the header is inconsistent (a corrupt or hostile sender). It
// fills the caller's rec rather than returning one. A returned record is stored field by
// field and then copied whole into the caller's variable (whose address its users take),
// and that copy of lines just written in pieces stalls (a failed store forward) at every
// message.
func (r *ring) peek(pos uint64, rec *record) (ok, bad bool) {
	idx := pos & r.mask
	w0 := r.word0(idx).Load()
	if w0&seqMask != (pos+1)&seqMask {
		return false, false
	}
	off := idx << slotShift
	w1 := binary.LittleEndian.Uint64(r.data[off+8:])
	rec.kind, rec.length, rec.imm, rec.n, rec.payload = uint8(w0>>seqBits), uint32(w1), uint32(w1>>32), 1, nil
	if rec.kind&recTypeMask == recWriteImm {
		return true, rec.kind&(recFirst|recLast) != recFirst|recLast
	}
	rec.n = recSlots(int(rec.length))
	if rec.length > uint32(maxRingSlots*slotSize) || rec.n > r.slots-idx {
		return true, true
	}
	rec.payload = r.data[off+recHdrSize : off+recHdrSize+uint64(rec.length)]
	return true, false
}

// consume clears the n slots of the record at pos for their next lap. The first slot
// needs nothing: its word0 holds a sequence below every later position's, so it can never
// pass for a later header. The slots after it hold payload where a header would sit, so
// their word0 is zeroed, lest stale payload bytes pose as a header on a later lap. A
// one-slot record (every small message) is therefore read and never written by the
// receiver, which saves a cache-line transfer: the sender's next store to the slot only
// invalidates our copy instead of fetching a line we dirtied.
//
// Plain stores suffice (an aligned 8-byte store is atomic on every platform Go supports
// shared memory on): nobody writes these slots until the receiver publishes its head with
// a release store (publish) after them. A concurrent peek that reads the old word0 only
// takes the QP's lock to find the record gone.
func (r *ring) consume(pos, n uint64) {
	idx := pos & r.mask
	for i := idx + 1; i < idx+n; i++ {
		binary.LittleEndian.PutUint64(r.data[i<<slotShift:], 0)
	}
}
