package coherence

import (
	"errors"
	"fmt"
)

// ErrCrashed is the error of a request or operation that failed because a rank it needed
// was declared dead by Machine.Crashed.
var ErrCrashed = errors.New("coherence: rank crashed")

// ReqID names one request of the driver: a Get, a write (Wrote) or an owner sync. The
// driver chooses it; it must be nonzero and unique among the requests in progress.
type ReqID uint64

// OpID names one operation emitted by a Machine. Nonzero; never reused by a Machine.
type OpID uint64

// WordKind says which protocol word a Word names.
type WordKind uint8

// The protocol words. All are uint64 in registered memory.
const (
	// Slot is slot[Page][Cacher] at home Rank: 0 or the cacher's registration token.
	Slot WordKind = iota + 1
	// Version is ver[Page] at home Rank: the count of writes to the page.
	Version
	// Flag is flag[Home][Page] at cacher Rank (see Usable and DecodeFlag).
	Flag
)

func (k WordKind) String() string {
	switch k {
	case Slot:
		return "slot"
	case Version:
		return "ver"
	case Flag:
		return "flag"
	}
	return "word(?)"
}

// Word names one protocol word. Rank is the rank whose memory holds it. For Slot and
// Version, Home == Rank (the page's home) and Cacher is set only for Slot; for Flag, Home
// is the page's home and Cacher == Rank.
type Word struct {
	Kind   WordKind
	Rank   int
	Home   int
	Page   int
	Cacher int
}

func (w Word) String() string {
	switch w.Kind {
	case Slot:
		return fmt.Sprintf("slot@%d[%d][%d]", w.Rank, w.Page, w.Cacher)
	case Version:
		return fmt.Sprintf("ver@%d[%d]", w.Rank, w.Page)
	case Flag:
		return fmt.Sprintf("flag@%d[%d][%d]", w.Rank, w.Home, w.Page)
	}
	return "word(?)"
}

// OpKind is the kind of a one-sided operation.
type OpKind uint8

// The one-sided operations a Machine emits.
const (
	// ReadData reads page Op.Page of rank Op.Target's window. With Op.Req != 0 the data
	// lands in that request's own buffer (an uncached read); with Op.Req == 0 it lands in
	// the cache buffer of (Op.Target, Op.Page) at this rank (a fill).
	ReadData OpKind = iota + 1
	// ReadVersion reads Op.Word (a Version word); the result is its value.
	ReadVersion
	// ReadSlots reads the slot rows of pages [Op.Page, Op.Page+Op.N) at Op.Target; the
	// result words are slot[p][c] at index (p-Op.Page)*Ranks + c.
	ReadSlots
	// Write stores Op.Value into Op.Word.
	Write
	// CAS replaces Op.Word with Op.Value if it holds Op.Expect; the result is the old value.
	CAS
	// FetchAdd adds Op.Value to Op.Word; the result is the old value.
	FetchAdd
)

func (k OpKind) String() string {
	switch k {
	case ReadData:
		return "ReadData"
	case ReadVersion:
		return "ReadVersion"
	case ReadSlots:
		return "ReadSlots"
	case Write:
		return "Write"
	case CAS:
		return "CAS"
	case FetchAdd:
		return "FetchAdd"
	}
	return "OpKind(?)"
}

// Op is one one-sided operation to perform. Target is the rank whose memory it touches
// (equal to Word.Rank for word operations); Target == Config.Self means a CPU operation on
// this rank's own memory. The driver posts each Op and later reports it with Machine.Done.
type Op struct {
	ID     OpID
	Kind   OpKind
	Target int
	Word   Word   // ReadVersion, Write, CAS, FetchAdd
	Page   int    // ReadData: the page; ReadSlots: the first page
	N      int    // ReadSlots: the number of pages
	Req    ReqID  // ReadData: the request whose buffer receives the data, or 0 for a fill
	Value  uint64 // Write: the value; CAS: the new value; FetchAdd: the addend
	Expect uint64 // CAS: the expected value
}

func (o Op) String() string {
	switch o.Kind {
	case ReadData:
		return fmt.Sprintf("#%d ReadData %d[%d] req=%d", o.ID, o.Target, o.Page, o.Req)
	case ReadSlots:
		return fmt.Sprintf("#%d ReadSlots %d[%d:%d]", o.ID, o.Target, o.Page, o.Page+o.N)
	case CAS:
		return fmt.Sprintf("#%d CAS %v %#x->%#x", o.ID, o.Word, o.Expect, o.Value)
	}
	return fmt.Sprintf("#%d %v %v %#x", o.ID, o.Kind, o.Word, o.Value)
}

// OutcomeKind is the kind of an Outcome.
type OutcomeKind uint8

// The outcomes a Machine reports.
const (
	// Served: Get Req is answered. With FromCache the data is the cache buffer of
	// (Home, Page) at this rank, else the buffer of the uncached ReadData issued for Req.
	// Installed says the cache now holds a Valid copy (statistics only).
	Served OutcomeKind = iota + 1
	// Completed: write or owner sync Req is complete; Flush, Unlock or Fence may return.
	Completed
	// Failed: request Req failed with Err.
	Failed
	// Released: this rank no longer caches (Home, Page); its cache buffer may be reused.
	Released
)

func (k OutcomeKind) String() string {
	switch k {
	case Served:
		return "Served"
	case Completed:
		return "Completed"
	case Failed:
		return "Failed"
	case Released:
		return "Released"
	}
	return "OutcomeKind(?)"
}

// Outcome reports the end of a request, or the release of a cache buffer.
type Outcome struct {
	Kind      OutcomeKind
	Req       ReqID
	Home      int
	Page      int
	FromCache bool
	Installed bool
	Err       error
}

// Ready is the pending output of a Machine: operations to post and outcomes to deliver.
// The slices are owned by the Machine and stay valid until the next Advance.
type Ready struct {
	Ops      []Op
	Outcomes []Outcome
}
