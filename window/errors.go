package window

import (
	"errors"
	"fmt"
)

// Sentinel errors. Errors of this package wrap one of these (or an error of the runtime,
// such as runtime.ErrProcFailed, or a context error) in an *Error; test with errors.Is.
var (
	// ErrEpoch means an operation outside a matching epoch. An access to a rank with no
	// Fence, Start or Lock epoch open towards it, an Unlock without Lock, a Fence inside
	// a passive-target epoch, a Complete without Start, a Free while any rank has an
	// epoch open.
	ErrEpoch = errors.New("no matching synchronization epoch")
	// ErrRange means a displacement or length outside the target's window memory.
	ErrRange = errors.New("displacement or length out of range")
	// ErrFreed means the window was used after Free.
	ErrFreed = errors.New("window freed")
	// ErrNotShared means SharedQuery named a rank whose memory this rank cannot address
	// directly (another host, or user memory reached only through the transport).
	ErrNotShared = errors.New("memory not directly addressable from this rank")
	// ErrFlavor means an operation that this window's flavor does not offer (Attach on a
	// window that is not dynamic, say).
	ErrFlavor = errors.New("not supported by this window flavor")
	// ErrInvalid means a bad argument: a rank out of range, a nil buffer where one is
	// needed, an unknown lock type or option.
	ErrInvalid = errors.New("invalid argument")
)

// Error reports a failed window call: the call, the target rank (for a refused Free, the
// rank that refused; -1 when none) and the displacement (in elements; -1 when none).
type Error struct {
	Op   string
	Rank int
	Disp int
	Err  error
}

func (e *Error) Error() string {
	s := "window " + e.Op
	if e.Rank >= 0 {
		s += fmt.Sprintf(" rank %d", e.Rank)
	}
	if e.Disp >= 0 {
		s += fmt.Sprintf(" disp %d", e.Disp)
	}
	return s + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

func werr(op string, rank, disp int, err error) error {
	if err == nil {
		return nil
	}
	var we *Error
	if errors.As(err, &we) && we.Op == op {
		return err
	}
	return &Error{Op: op, Rank: rank, Disp: disp, Err: err}
}

// freedErr is the ErrFreed error of call op on w after its Free. It names the window as
// hang reports do ("win3"), with the name SetName gave it, and says what to do.
func (w *house[T]) freedErr(op string, rank, disp int) error {
	label := "this window"
	if w.label != "" {
		label = w.label
	}
	if name, _ := w.attrs.Name(); name != "" {
		label += fmt.Sprintf(" (%q)", name)
	}
	return werrf(op, rank, disp, ErrFreed, "%s: Free was called on it, and a freed window takes no calls "+
		"(create another with Allocate or Create)", label)
}

func werrf(op string, rank, disp int, sentinel error, format string, args ...any) error {
	return &Error{Op: op, Rank: rank, Disp: disp, Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)}
}
