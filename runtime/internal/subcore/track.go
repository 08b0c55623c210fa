package subcore

import (
	"context"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gorma-hpc/gorma/transport/verbs/arena"
)

// CallSig describes a collective call: what every rank of the World must agree on. It
// names the call in hang reports (Track.BeginSig) and is what GORMA_CHECK=1 compares
// across the ranks (Track.Check).
type CallSig struct {
	Call  string // the call: "Allreduce", "window.Fence", ...
	Count int    // elements every rank passes, -1 when the ranks' counts may differ
	Type  string // element type ("float64"), "" for none
	Op    string // reduction operator ("sum"), "" for none
	Root  int    // root rank, -1 for none
	Win   string // the window ("win3": made by the World's collective call #3), "" for none
}

// TrackInfo is what a Track knows of its World; it never changes.
type TrackInfo struct {
	Comm     string // the World's name in reports
	Members  []int  // the World's ranks in the job, nil for every rank
	Ctx      uint16 // the World's communication context
	Me, Size int    // this rank in the World, and the World's size
	Internal bool   // made on a World marked internal (MarkInternal)
}

// TrackOps is the runtime's side of a Track: its list of Tracks and its messages.
type TrackOps interface {
	// CloseTrack stops reporting t.
	CloseTrack(t *Track)
	// CheckCall runs GORMA_CHECK=1's comparison of sig across the ranks (Track.Check).
	CheckCall(ctx context.Context, t *Track, seq uint64, sig *CallSig) error
}

// A Track names the calls of a layer above the runtime (a collective, a window call) in
// this rank's hang reports. One goroutine at a time runs a Track's calls (Begin ... End);
// reports read it from another goroutine.
//
// The calling goroutine writes the fields that reports read with release stores
// (storeWord, storeSig): on amd64 plain stores, which do not stall it behind a store to
// shared memory that a peer reads (a collective's step). A fenced store there costs a
// line transfer per call. The call's name and number share one word, so a report never
// pairs one call's name with another's number.
type Track struct {
	ops   TrackOps
	calls *atomic.Uint64 // the World's collective calls
	info  TrackInfo
	word  uint64               // the call's name (nameID)<<48 | its number on the World; 0 between calls
	sig   *CallSig             // the call's details (BeginSig), nil for none
	since uint64               // Now at Begin
	ends  uint64               // calls ended (End): the rank's progress in hang reports
	done  [doneSlots]doneCall  // the last collective calls ended, call k of doneN in done[k%doneSlots]
	doneN uint64               // collective calls ended (End) and kept in done
	ids   [nameCache]nameEntry // the calling goroutine's cache of nameID
}

// DoneKept is how many of its last ended collective calls a Track keeps (TrackDone).
// A rank that returned early from a rooted call keeps going, through rooted calls
// that return early too, until a call waits for the others: the few last calls
// hold the one the others are still in.
const DoneKept = 4

// doneSlots holds one entry more than DoneKept: the one End may be writing.
const doneSlots = DoneKept + 1

// doneCall is one ended collective call: name, number and details as begin stored them.
type doneCall struct {
	word uint64 // nameID<<48 | the call's number
	sig  *CallSig
}

// NewTrack returns a Track on a World whose collective calls calls counts.
func NewTrack(ops TrackOps, calls *atomic.Uint64, info TrackInfo) *Track {
	return &Track{ops: ops, calls: calls, info: info}
}

// Info returns what t knows of its World.
func Info(t *Track) *TrackInfo { return &t.info }

// TrackRecord returns t's call under way: its name, number, details (nil for none) and
// Now stamp; ok is false between calls.
func TrackRecord(t *Track) (call string, seq uint64, sig *CallSig, since int64, ok bool) {
	w := loadWord(&t.word)
	if w == 0 {
		return "", 0, nil, 0, false
	}
	call = nameOf(w >> 48)
	if sig = loadSig(&t.sig); sig != nil && sig.Call != call {
		sig = nil
	}
	return call, w & (1<<48 - 1), sig, int64(loadWord(&t.since)), true
}

// Internal reports whether t was made on a World a layer marked internal (MarkInternal):
// its calls serve a call of that layer, which the profile counts instead.
func (t *Track) Internal() bool { return t.info.Internal }

// Busy reports whether a call of t is under way.
func Busy(t *Track) bool { return loadWord(&t.word) != 0 }

// Close stops reporting t.
func (t *Track) Close() { t.ops.CloseTrack(t) }

// Begin marks the start of call (a name of at most 64 KiB, normally a constant) on the
// Track's World. A collective call (one every rank of the World makes, in the same
// order) gets the next number of the World's collective calls, counted across all its
// Tracks, so that reports of two ranks compare. Another call gets none.
func (t *Track) Begin(call string, collective bool) {
	var seq uint64
	if collective {
		seq = t.calls.Add(1)
	}
	t.BeginAt(call, seq)
}

// Next numbers a collective call among the World's collective calls without marking it
// under way: a layer whose calls are too short to mark every time calls BeginAt with
// the number only once the call blocks.
func (t *Track) Next() uint64 { return t.calls.Add(1) }

// BeginAt marks the start of call with number seq (0: not a collective call).
func (t *Track) BeginAt(call string, seq uint64) {
	storeSig(&t.sig, nil)
	t.begin(call, seq)
}

// BeginSig marks the start of the collective call sig with number seq (from Next), with
// its count, type, operator, root and window. Reports read *sig from another goroutine
// at any time, so it must never change: a caller keeps the last one and makes a new one
// only for a call that differs.
func (t *Track) BeginSig(sig *CallSig, seq uint64) {
	storeSig(&t.sig, sig)
	t.begin(sig.Call, seq)
}

func (t *Track) begin(call string, seq uint64) {
	storeWord(&t.since, uint64(Now()))
	storeWord(&t.word, t.nameID(call)<<48|seq&(1<<48-1))
}

// End marks the end of the call Begin named, and counts it among the calls t ended. A
// collective call joins the last DoneKept ended ones (TrackDone).
func (t *Track) End() {
	// End's caller is the one goroutine that writes t: it reads t's fields plainly.
	if w := t.word; w&(1<<48-1) != 0 {
		n := t.doneN
		d := &t.done[n%doneSlots]
		storeWord(&d.word, w)
		storeSig(&d.sig, t.sig)
		storeWord(&t.doneN, n+1)
	}
	storeWord(&t.word, 0)
	storeWord(&t.ends, t.ends+1)
}

// TrackDone calls f with each of the last collective calls t ended, oldest first: name,
// number and details (nil for none). It may run while t's goroutine ends calls: it
// leaves out a call whose entry End may have overwritten while it read.
func TrackDone(t *Track, f func(call string, seq uint64, sig *CallSig)) {
	n := loadWord(&t.doneN)
	first := n - min(n, DoneKept)
	var got [DoneKept]struct {
		call string
		seq  uint64
		sig  *CallSig
	}
	for k := first; k < n; k++ {
		d, g := &t.done[k%doneSlots], &got[k-first]
		w := loadWord(&d.word)
		if w == 0 {
			continue
		}
		g.call, g.seq, g.sig = nameOf(w>>48), w&(1<<48-1), loadSig(&d.sig)
	}
	// End writes entry n%doneSlots before it counts it, so an entry k read above is
	// whole if no End of call k+doneSlots had begun: k+doneSlots > the count now.
	now := loadWord(&t.doneN)
	for k := first; k < n; k++ {
		g := got[k-first]
		if k+doneSlots <= now || g.call == "" {
			continue
		}
		if g.sig != nil && g.sig.Call != g.call {
			g.sig = nil
		}
		f(g.call, g.seq, g.sig)
	}
}

// Progress returns how many calls t has ended, and the number of the World's last
// collective call: a call that ends, or a collective call numbered without being marked
// (Next), moves it. Hang reports add it to the rank's progress.
func Progress(t *Track) uint64 { return loadWord(&t.ends) + t.calls.Load() }

// Check compares sig, the collective call number seq on the Track's World, with every
// other rank's call of that number under GORMA_CHECK=1; otherwise it returns nil at once.
// A difference is a *runtime.MismatchError at every rank, so nothing of the call has run
// at any rank when one fails. A rank that makes no call numbered seq leaves the others
// waiting in Check until ctx ends, as its call would; a hang report names both.
func (t *Track) Check(ctx context.Context, seq uint64, sig *CallSig) error {
	if !arena.Checking() || t.info.Size < 2 {
		return nil
	}
	return t.ops.CheckCall(ctx, t, seq, sig)
}

// CheckNow runs Check's comparison whatever GORMA_CHECK says (for the runtime's tests).
func CheckNow(ctx context.Context, t *Track, seq uint64, sig *CallSig) error {
	return t.ops.CheckCall(ctx, t, seq, sig)
}

// The names of tracked calls, interned: a Track stores a name's index (from 1) in the
// word that holds the call's number. The list only grows; the names are the layers'
// constants (and their API names), a few dozen.
var callNames struct {
	mu   sync.Mutex
	ids  map[string]uint64
	list atomic.Pointer[[]string] // list[id-1] is name id; replaced, never changed, when one is added
}

// nameCache is how many names a Track remembers the index of: a program alternates a
// few calls on a World.
const nameCache = 8

// nameEntry is a remembered index of a name: by the address and length of its text.
type nameEntry struct {
	p  *byte
	n  int
	id uint64
}

// nameID returns call's index in callNames, from t's cache when call's text is one it
// remembers (the layers pass constants), else from the list, which it remembers.
func (t *Track) nameID(call string) uint64 {
	p := unsafe.StringData(call)
	for i := range t.ids {
		if e := &t.ids[i]; e.p == p && e.n == len(call) && e.id != 0 {
			return e.id
		}
	}
	id := internName(call)
	copy(t.ids[1:], t.ids[:nameCache-1])
	t.ids[0] = nameEntry{p: p, n: len(call), id: id}
	return id
}

// internName returns name's index in callNames, adding it if new. Past 1<<16-1 names it
// returns the last one's.
func internName(name string) uint64 {
	callNames.mu.Lock()
	defer callNames.mu.Unlock()
	if id, ok := callNames.ids[name]; ok {
		return id
	}
	var list []string
	if l := callNames.list.Load(); l != nil {
		list = *l
	}
	if len(list) >= 1<<16-1 {
		return uint64(len(list))
	}
	list = append(list[:len(list):len(list)], name)
	if callNames.ids == nil {
		callNames.ids = make(map[string]uint64)
	}
	id := uint64(len(list))
	callNames.ids[name] = id
	callNames.list.Store(&list)
	return id
}

// nameOf returns the name of index id ("" for none).
func nameOf(id uint64) string {
	if l := callNames.list.Load(); l != nil && id >= 1 && id <= uint64(len(*l)) {
		return (*l)[id-1]
	}
	return ""
}
