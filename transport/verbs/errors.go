package verbs

import (
	"errors"
	"strconv"
)

// Sentinel errors. Call errors wrap one of these in an *Error.
var (
	ErrQueueFull       = errors.New("queue full")
	ErrQPState         = errors.New("wrong queue pair state")
	ErrClosed          = errors.New("closed")
	ErrInvalid         = errors.New("invalid argument")
	ErrUnsupported     = errors.New("not supported by this provider")
	ErrUnknownProvider = errors.New("unknown provider")
	ErrNoMemory        = errors.New("arena exhausted")
	ErrTooManyMRs      = errors.New("memory region table full")
	ErrCQOverrun       = errors.New("completion queue overrun")
	ErrAuth            = errors.New("authentication failed")
	ErrPeer            = errors.New("peer unreachable")
	ErrBadEndpoint     = errors.New("bad endpoint bytes")
	ErrAccess          = errors.New("remote access refused (stale, forged or out-of-range key, or missing rights)")
)

// Error is a structured error of a verbs call, in the style of net.OpError.
type Error struct {
	Op       string // the call, such as "post send" or "reg mr"
	Provider string // provider name, if known
	QPN      uint32 // queue pair number, if the call concerns one
	Detail   string // extra context for the reader, such as "length 12 > MR length 8"
	Err      error  // the cause, usually a sentinel
}

func (e *Error) Error() string {
	s := "verbs"
	if e.Provider != "" {
		s += " " + e.Provider
	}
	s += ": " + e.Op
	if e.QPN != 0 {
		s += " qp " + strconv.FormatUint(uint64(e.QPN), 10)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// StatusError is an error for a failed completion, for callers that turn a WC into an error.
type StatusError struct {
	Op     WCOpcode
	WRID   uint64
	QPN    uint32
	Status Status
}

func (e *StatusError) Error() string {
	return "verbs: " + e.Op.String() + " wrid " + strconv.FormatUint(e.WRID, 10) + " on qp " +
		strconv.FormatUint(uint64(e.QPN), 10) + " completed with " + e.Status.String()
}

// Err returns nil for a successful completion and a *StatusError otherwise.
func (wc *WC) Err() error {
	if wc.Status == Success {
		return nil
	}
	return &StatusError{Op: wc.Op, WRID: wc.WRID, QPN: wc.QPN, Status: wc.Status}
}

func quote(s string) string { return strconv.Quote(s) }
