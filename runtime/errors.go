package runtime

import (
	"errors"
	"fmt"
	"strconv"
)

// Sentinel errors. Errors returned by this package wrap one of these (or a context error),
// to be tested with errors.Is.
var (
	// ErrProcFailed means a peer rank died, closed its transport, or its connection failed.
	// It arrives wrapped in a *ProcError that names the rank and its host.
	ErrProcFailed = errors.New("process failed")
	// ErrAborted means the job is being aborted (by a rank's Abort or by the launcher). It
	// arrives wrapped in a *ProcError naming the rank that aborted, when known.
	ErrAborted = errors.New("job aborted")
	// ErrTruncated means a message was longer than the receive buffer. The buffer holds
	// the message's first bytes.
	ErrTruncated = errors.New("message truncated")
	// ErrFinalized means the World was used after Finalize.
	ErrFinalized = errors.New("world finalized")
	// ErrInvalid means a bad argument: a rank out of range, a negative tag, a nil World.
	ErrInvalid = errors.New("invalid argument")
	// ErrTransport means the transport could not be set up or chosen (Init), such as
	// GOLAUNCH_TRANSPORT=shm with a peer on another host.
	ErrTransport = errors.New("transport unavailable")
	// ErrConfig means a bad GORMA_* environment variable.
	ErrConfig = errors.New("bad runtime configuration")
)

// ProcError reports a failed or aborting rank. Err is ErrProcFailed or ErrAborted; Cause
// says what was seen (a transport completion status, the launcher's report).
type ProcError struct {
	Op    string // the call that found the failure: "recv", "send", "barrier", ...
	Rank  int    // the failed or aborting rank, -1 if not known
	Host  string // its host, "" if not known
	Err   error  // ErrProcFailed or ErrAborted
	Cause error  // what was seen, may be nil
}

func (e *ProcError) Error() string {
	s := "runtime"
	if e.Op != "" {
		s += ": " + e.Op
	}
	s += ": " + e.Err.Error()
	if e.Rank >= 0 {
		s += ": rank " + strconv.Itoa(e.Rank)
		if e.Host != "" {
			s += " on host " + e.Host
		}
	}
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

// Unwrap returns the sentinel and the cause, for errors.Is and errors.As.
func (e *ProcError) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.Cause}
}

// withOp returns a copy of err with Op set, if err is a *ProcError without one; otherwise
// it wraps err with the operation's name.
func withOp(op string, err error) error {
	if err == nil {
		return nil
	}
	var pe *ProcError
	if errors.As(err, &pe) && pe.Op == "" {
		c := *pe
		c.Op = op
		return &c
	}
	return fmt.Errorf("runtime: %s: %w", op, err)
}

// invalidf returns an ErrInvalid error; callers add the operation with withOp.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// errNilWorld is the error of a call given a nil *World. Every function that takes a
// World checks for it, so that a nil World (an ignored Init error, a missing field) is an
// ErrInvalid error rather than a nil dereference deep inside the runtime.
func errNilWorld() error {
	return invalidf("nil World (pass the World that Init, Dup or Sibling returned)")
}
