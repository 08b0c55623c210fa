package runtime

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// Fast boxes. An eager message of up to fbMaxPayload bytes to a peer on shm bypasses the
// verbs queue pair. The sender writes it straight into a fast box, a single-producer
// single-consumer ring of fbCells fixed cells that the receiver allocated for that one
// sender in its own arena and that the sender maps (verbs.Mapper). The receiver's poller
// reads the box directly. No QP or CQ lock, no work request, no send slot, no receive slot
// to repost, one copy on each side. (Open MPI's vader BTL has per-peer "fast boxes" for the
// same reason.) Everything else — larger eager messages, RTS, FIN, and messages that find
// the box full — goes through the queue pair as before.
//
// Layout of a box (receiver's arena memory, 64-byte aligned, fbSize bytes):
//
//	0     head  u64   cells the receiver has consumed (receiver writes; the sender reads
//	                  it only when its cached copy says the box is too full)
//	64    cell 0, cell 1, ... each fbCellSize bytes. A record starts at cell position
//	      pos (counting from 0; cell pos % fbCells) and fills fbRecCells(len) cells in a
//	      row, never past the last cell:
//	  0   seq   u64   pos+1, stored last (release): a record starts here
//	  8   tag   i32
//	  12  len   u16   payload bytes, at most fbMaxPayload; fbPad for a pad record
//	  14  ctx   u16   communication context
//	  16  qseq  u64   matchable messages (eager, RTS) the sender had posted through the
//	                  queue pair before this one
//	  24  payload, continuing through the record's later cells
//
// A record that would run past the last cell is preceded by a pad record (len fbPad, qseq
// 0), which stands for the cells to the end of the lap: the receiver skips them.
//
// Stale words never pass for a record. The receiver only reads a seq word where a record
// must start. A word there is pos+1 of an older lap (smaller than any later position's),
// zero, or payload of a record's later cell. The receiver zeroes the seq word of a record's
// later cells once it has taken the record, before it publishes the head that lets the
// sender reuse them. So payload never outlives its record in a seq word (as the verbs
// ring's consume does). A pad writes only its first cell; the cells it skips keep words of
// older laps, which are zero or smaller positions. A one-cell record, every message of up
// to fbCellSize-fbRecHdr bytes, is read and never written by the receiver: the sender's
// next store to the cell only invalidates the receiver's copy instead of fetching a line it
// dirtied.
//
// Order. MPI's non-overtaking rule spans both paths: a receive must take a peer's messages
// in the order they were sent, whichever way each travelled. The receiver counts the
// matchable messages it has handled from the queue pair (peer.qrecv). A box message is
// handled only once qrecv has reached its qseq (every queue-pair message sent before it
// was handled). And before handling a queue-pair message the receiver handles every box
// message whose qseq allows it (those sent before that message: they were published before
// it, so a load after seeing it sees them). The sender uses the box only when nothing
// waits in its out queue for the peer.
//
// Pages. The receiver reads a peer's box only once the peer has said it wrote into it.
// After its first record the sender notes the box's region (shm's mapping.Note, one
// store into the region's key table entry). The receiver's poll reads that entry
// (mr.Noted, one load) until it is set, then the box itself (fbIn.awake). So the box of
// a peer that never sends is never read, and none of its pages is faulted in. The
// connections that Attach opens between ranks that only map each other's memory hold no
// shared memory (`scripts/compare-scale.sh`, shm).
//
// Waiting. The poller's spin checks the boxes with one load per peer and takes mu only
// when a message can be handled (fastboxReady). To sleep, the device's CQ.Wait is given
// the same check (shm's SetWaitCheck), and the sender rings the receiver's doorbell after
// publishing (shm's NotifyPeer: a load of the sleepers count and, only when the receiver
// sleeps, a futex wake; no fence, since a sleeper re-checks soon after it registers).
// So block and hybrid modes sleep and wake exactly as for queue-pair messages. A record
// waiting for its qseq does not count as ready, so a sleeper does not spin on it.
//
// Failure. A dead peer is detected through its queue pair, as without boxes (its flushed
// receives, or the launcher); its box is then no longer read (fbOff). A malformed record
// (length out of range, or running past the last cell) fails the peer like a malformed
// message. The sender checks the mapping's PeerAlive before writing and falls back to the
// queue pair, which reports the death.
//
// Prefetch. After each message the sender prefetches for writing the cell fbAhead
// cells on (prefetchW). A store to a cell the receiver read last lap must first take
// the line from the receiver's cache, and the engine lock's next locked instruction
// waits for that store. Taken early, the line is in the sender's cache when the store
// comes. fbAhead cells on, the line is not the one a waiting receiver polls.
// `bin/golaunch -n 2 bin/pingpong --test bw --max-size 8` measures the message rate.
//
// Sizes. A cell holds 5 cache lines, so that OSU's 256-byte message fits one (296 bytes of
// payload) and does not take the queue pair. A message that spills into a second
// line costs more than one that fits the first (the receiver's load of the second line
// waits for the first). Messages of up to 4 KiB take several cells, which saves the queue
// pair's four copies (into a send slot, into the peer's ring, out of it into a receive
// slot, into the user's buffer) and the QP's and CQ's locks. `bin/golaunch -n 2
// bin/pingpong --test latency --max-size 8K` measures both sides of fbMaxPayload.
const (
	fbCells      = 64
	fbCellSize   = 320
	fbHdrSize    = 64
	fbRecHdr     = 24
	fbMaxPayload = 4096
	fbPad        = 0xffff // len of a pad record
	fbAhead      = 8      // the cell a sender prefetches for writing, ahead of its next
	fbSize       = fbHdrSize + fbCells*fbCellSize
)

// fbRecCells is the number of cells of a record of n payload bytes.
func fbRecCells(n int) uint64 { return uint64(fbRecHdr+n+fbCellSize-1) / fbCellSize }

// peerNotifier and waitChecker are what a provider offers for fast boxes besides
// verbs.Mapper (shm's QP and CQ). roleReturner is a CQ whose waiters may take over the
// serving of peers' requests (tcp's leader; see substrate.ServePeers and substrate.PollPeers).
type (
	peerNotifier interface{ NotifyPeer() }
	waitChecker  interface{ SetWaitCheck(func() bool) }
	roleReturner interface {
		HandBack()
		Progress() bool
	}
)

// fbRecord is a decoded fast box record.
type fbRecord struct {
	tag  int32
	ctx  uint16
	n    int
	qseq uint64
	pad  bool // a pad record: the cells to the end of the lap are skipped
}

// decodeFastbox decodes the record at the start of b, which runs from the record's first
// cell to the end of the box (seq already checked), into rec. It never panics; a length
// out of range or a record running past the end of b is an *errWire. It fills the
// caller's rec rather than returning one: a returned record, stored field by field and
// copied at once with wider loads, stalls the receiver on every message (a failed store
// forward; BenchmarkSoftware8B measures that path).
func decodeFastbox(b []byte, rec *fbRecord) error {
	if len(b) < fbRecHdr {
		*rec = fbRecord{}
		return &errWire{fmt.Sprintf("fast box cell of %d bytes", len(b))}
	}
	rec.tag, rec.n, rec.ctx, rec.qseq, rec.pad = int32(le.Uint32(b[8:])), int(le.Uint16(b[12:])), le.Uint16(b[14:]), le.Uint64(b[16:]), false
	if rec.n == fbPad {
		*rec = fbRecord{pad: true}
		return nil
	}
	if rec.n > fbMaxPayload || fbRecHdr+rec.n > len(b) {
		return &errWire{fmt.Sprintf("fast box message of %d bytes with %d bytes to the end of the box, at most %d fit", rec.n, len(b)-fbRecHdr, fbMaxPayload)}
	}
	return nil
}

// encodeFastbox writes everything of a record but its seq word into b (the record's cells).
func encodeFastbox(b []byte, ctx uint16, tag int32, qseq uint64, payload []byte) {
	copy(b[fbRecHdr:], payload)
	le.PutUint32(b[8:], uint32(tag))
	le.PutUint16(b[12:], uint16(len(payload)))
	le.PutUint16(b[14:], ctx)
	le.PutUint64(b[16:], qseq)
}

// word64 is the shared 8-byte word at b[0:8] (8-byte aligned: boxes are).
func word64(b []byte) *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Pointer(&b[0])) }

// fbCell is the first cell of position pos.
func fbCell(box []byte, pos uint64) []byte {
	off := fbHdrSize + int(pos%fbCells)*fbCellSize
	return box[off : off+fbCellSize : off+fbCellSize]
}

// fbTail is the box from position pos's cell to its end: where a record starting at pos
// must fit.
func fbTail(box []byte, pos uint64) []byte {
	return box[fbHdrSize+int(pos%fbCells)*fbCellSize:]
}

// fbIn is the receiving side of a peer's fast box. box and mr are set at Init; pos and
// gate are written under engine.mu and read without it by the poller's spin and the CQ's
// wait check (fastboxReady), hence atomics.
type fbIn struct {
	box   []byte   // our arena memory, which the peer writes through its mapping
	mr    verbs.MR // box's region
	pos   atomic.Uint64
	gate  atomic.Uint64 // peer.qrecv
	off   atomic.Bool   // the peer failed: its box is no longer read
	live  atomic.Bool   // the box is read: the peer said it wrote (noted), or the MR cannot say
	noted func() bool   // the MR's Noted, nil when it has none
}

// awake reports whether the box may be read: once the peer has said it wrote into it
// ("Pages"). It takes no lock.
func (f *fbIn) awake() bool {
	if f.live.Load() {
		return true
	}
	if !f.noted() {
		return false
	}
	f.live.Store(true)
	return true
}

// fbOut is the sending side of a fast box in the peer's memory. Guarded by engine.mu.
type fbOut struct {
	box    []byte // the peer's box in our mapping; nil when the peer has none
	m      verbs.Mapping
	notify peerNotifier
	note   func() // the mapping's Note, until the first message calls it ("Pages")
	pos    uint64 // next message number
	head   uint64 // the peer's head as last read
}

// newFastboxIn allocates the box in which peer p will write, zeroed. Reused arena memory
// is cleared; fresh memory reads zero already and is left untouched, so that a box's pages
// are faulted in only as its cells are used (the host's shared memory grows by the cells
// a peer's messages reach, not by the whole box: `scripts/compare-scale.sh`, shm). It
// returns the key to publish to p, or 0 when d has no fast boxes.
func newFastboxIn(d *device, p *peer) (uint64, error) {
	if !d.fastbox {
		return 0, nil
	}
	mr, err := d.pd.AllocMR(fbSize, verbs.LocalWrite|verbs.RemoteRead|verbs.RemoteWrite)
	if err != nil {
		return 0, fmt.Errorf("%w: fast box for rank %d: %w", ErrTransport, p.rank, err)
	}
	b := mr.Bytes()
	if len(b) < fbSize || uintptr(unsafe.Pointer(&b[0]))%64 != 0 {
		mr.Dereg()
		return 0, nil
	}
	if z, ok := mr.(interface{ Zero() bool }); !ok || !z.Zero() {
		clear(b[:fbSize])
	}
	p.fin.box, p.fin.mr = b[:fbSize:fbSize], mr
	if n, ok := mr.(interface{ Noted() bool }); ok {
		p.fin.noted = n.Noted
	} else {
		p.fin.live.Store(true)
	}
	return mr.RKey(), nil
}

// mapFastboxOut maps p's box for this rank's messages (key from p's endpoint card; 0: none).
func mapFastboxOut(p *peer, key uint64) error {
	if key == 0 || !p.dev.fastbox {
		return nil
	}
	mp, ok1 := p.qp.(verbs.Mapper)
	nt, ok2 := p.qp.(peerNotifier)
	if !ok1 || !ok2 {
		return nil
	}
	m, err := mp.Map(key, 0, fbSize, verbs.RemoteRead|verbs.RemoteWrite)
	if err != nil {
		return fmt.Errorf("map rank %d's fast box: %w", p.rank, err)
	}
	b := m.Bytes()
	if len(b) != fbSize || uintptr(unsafe.Pointer(&b[0]))%64 != 0 {
		m.Unmap()
		return nil
	}
	p.fout = fbOut{box: b, m: m, notify: nt}
	if n, ok := m.(interface{ Note() }); ok {
		p.fout.note = n.Note
	}
	return nil
}

// postFastLocked sends an eager message (buf, on communication context ctx with tag) to p
// through p's fast box, if it fits and the box has room, and reports whether it did. The
// caller checked that p has not failed, that buf is within p's eager limit, and that p's
// out queue is empty. A one-cell message (the common small one) computes no cell count
// and needs no pad: every instruction here is on a ping-pong's path.
func (p *peer) postFastLocked(ctx uint16, tag int, buf []byte) bool {
	f := &p.fout
	if f.box == nil || len(buf) > fbMaxPayload {
		return false
	}
	need, pad := uint64(1), uint64(0)
	if len(buf) > fbCellSize-fbRecHdr {
		need = fbRecCells(len(buf))
		if idx := f.pos % fbCells; idx+need > fbCells {
			pad = fbCells - idx
		}
	}
	if !f.room(pad+need) || !f.m.PeerAlive() {
		return false // a full box, or a dead peer, which the queue pair reports
	}
	var rec []byte
	if need == 1 {
		rec = fbCell(f.box, f.pos)
	} else {
		if pad > 0 {
			f.padLocked(pad)
		}
		rec = fbTail(f.box, f.pos)
	}
	encodeFastbox(rec, ctx, int32(tag), p.qsent, buf)
	publish(word64(rec), f.pos+1)
	f.pos += need
	if f.note != nil {
		f.note() // after the record, before the ring: the receiver reads the box from now on
		f.note = nil
	}
	f.notify.NotifyPeer()
	prefetchW(unsafe.Pointer(&fbCell(f.box, f.pos+fbAhead)[0]))
	return true
}

// room reports whether the box has n free cells at the sender's position, reading the
// receiver's head only when the cached one says it has not. A head that makes no sense
// turns the box off.
func (f *fbOut) room(n uint64) bool {
	if f.pos+n-f.head <= fbCells {
		return true
	}
	h := word64(f.box).Load()
	if h > f.pos || f.pos-h > fbCells {
		f.box = nil // the peer's head makes no sense: stop using the box
		return false
	}
	f.head = h
	return f.pos+n-h <= fbCells
}

// padLocked writes a pad record for the n cells to the end of the lap.
func (f *fbOut) padLocked(n uint64) {
	cell := fbCell(f.box, f.pos)
	le.PutUint16(cell[12:], fbPad)
	le.PutUint64(cell[16:], 0)
	publish(word64(cell), f.pos+1)
	f.pos += n
}

// drainFastboxLocked handles the messages waiting in p's box that the order allows. A
// one-cell record is read through its cell alone, as postFastLocked writes it.
func (e *engine) drainFastboxLocked(p *peer) {
	f := &p.fin
	if f.box == nil || p.failed != nil || p.dev.closed || !f.awake() {
		return
	}
	start := f.pos.Load()
	pos := start
	for {
		rec := fbCell(f.box, pos)
		if word64(rec).Load() != pos+1 {
			break
		}
		prefetchR(unsafe.Pointer(&fbCell(f.box, pos+1)[0]))
		long := le.Uint16(rec[12:]) > fbCellSize-fbRecHdr // several cells, a pad or garbage
		if long {
			rec = fbTail(f.box, pos)
		}
		var r fbRecord
		if err := decodeFastbox(rec, &r); err != nil {
			e.peerFailedLocked(p, err)
			return
		}
		if r.pad {
			pos += fbCells - pos%fbCells
			continue
		}
		if r.qseq > p.qrecv {
			break // a queue-pair message sent before it has not been handled yet
		}
		h := header{kind: msgEager, ctx: r.ctx, tag: r.tag}
		e.incomingLocked(p.rank, &h, rec[fbRecHdr:fbRecHdr+r.n])
		if !long {
			pos++
			continue
		}
		k := fbRecCells(r.n)
		for i := uint64(1); i < k; i++ {
			le.PutUint64(rec[i*fbCellSize:], 0) // payload must not pose as a later seq word
		}
		pos += k
	}
	if pos != start {
		publish(&f.pos, pos) // read in this process only, but without mu
		publish(word64(f.box), pos)
	}
}

// drainFastboxesLocked drains every peer's box.
func (e *engine) drainFastboxesLocked() {
	for _, p := range e.poll.boxList() {
		e.drainFastboxLocked(p)
	}
}

// boxesReady reports whether the box of one of peers holds a message that can be handled
// now. It takes no lock: the poller's spin calls it.
func boxesReady(peers []*peer) bool {
	for _, p := range peers {
		f := &p.fin
		if f.off.Load() || !f.awake() {
			continue
		}
		pos := f.pos.Load()
		cell := fbCell(f.box, pos)
		if word64(cell).Load() == pos+1 && le.Uint64(cell[16:]) <= f.gate.Load() {
			return true
		}
	}
	return false
}

// closeFastboxesLocked unmaps the peers' boxes before the devices close.
func (l *links) closeFastboxesLocked() {
	for _, p := range l.peers {
		if p != nil && p.fout.m != nil {
			p.fout.m.Unmap()
			p.fout = fbOut{}
		}
	}
}
