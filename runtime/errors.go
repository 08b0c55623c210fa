package runtime

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
)

// Sentinel errors. Errors returned by this package wrap one of these (or a context error),
// to be tested with errors.Is.
var (
	// ErrProcFailed means a peer died or its connection failed; in a *ProcError.
	ErrProcFailed = errors.New("process failed")
	// ErrAborted means the job is being aborted; in a *ProcError naming who aborted it.
	ErrAborted = errors.New("job aborted")
	// ErrTruncated means a message was longer than the receive buffer, which holds its start.
	ErrTruncated = errors.New("message truncated")
	// ErrFinalized means the World was used after Finalize.
	ErrFinalized = errors.New("world finalized")
	// ErrInvalid means a bad argument: a rank out of range, a negative tag, a nil World.
	ErrInvalid = errors.New("invalid argument")
	// ErrTransport means Init could not set up or choose a transport.
	ErrTransport = errors.New("transport unavailable")
	// ErrConfig means a bad GORMA_* environment variable.
	ErrConfig = errors.New("bad runtime configuration")
	// ErrRevoked means a rank called Revoke on the World (ulfm.go).
	ErrRevoked = errors.New("world revoked")
)

// ProcError reports a failed or aborting rank. Its text leads with the rank, its host and
// what became of it (Why), then the call that found it: "rank 1 on host vm failed: exited
// with code 3 (in recv)". Cause, what was seen (a completion status, a refused
// connection...), stays in the chain for errors.Is and errors.As; it is printed only with
// GORMA_VERBOSE=1, or in Why's place when Why is empty.
type ProcError struct {
	Op   string // the call that found the failure: "recv", "send", "barrier", ...
	Rank int    // the failed or aborting rank, -1 if not known
	Host string // its host, "" if not known
	Err  error  // ErrProcFailed or ErrAborted
	// Why is what became of the rank, after its name ("failed: exited with code 3"), or
	// for Rank -1 why the job was aborted. May be "".
	Why   string
	Cause error // what was seen, may be nil
}

func (e *ProcError) Error() string {
	var s string
	switch {
	case e.Rank >= 0:
		s = "rank " + strconv.Itoa(e.Rank)
		if e.Host != "" {
			s += " on host " + e.Host
		}
		if e.Why != "" {
			s += " " + e.Why
		} else if errors.Is(e.Err, ErrAborted) {
			s += " aborted the job"
		} else {
			s += " failed"
		}
	case e.Why != "":
		s = e.Err.Error() + ": " + e.Why
	default:
		s = e.Err.Error()
	}
	if e.Why == "" && e.Cause != nil {
		s += ": " + e.Cause.Error() // no words for it: the cause is the reason
	}
	if e.Op != "" {
		s += " (in " + e.Op + ")"
	}
	if e.Why != "" && e.Cause != nil && verbose() {
		s += ": " + e.Cause.Error()
	}
	return s
}

// EnvVerbose set to 1 makes errors print ProcError's Cause.
const EnvVerbose = "GORMA_VERBOSE"

// verbose reports whether GORMA_VERBOSE asks for the transport's detail in errors; read
// once, at the first error printed.
var verbose = sync.OnceValue(func() bool {
	v := os.Getenv(EnvVerbose)
	return v != "" && v != "0"
})

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
var errNilWorld = invalidf("nil World (pass the World that Init, Dup or Sibling returned)")
