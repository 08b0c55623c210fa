package subcore

import "context"

// CounterOps is the runtime's side of a Counter: its slot in the engine's table.
type CounterOps interface {
	Close()
	Pending() int
	Wait(ctx context.Context) error
}

// Counter counts one-sided work requests until they complete. A Counter belongs to one
// World's engine; it may be used by several goroutines, but Wait is meant for one at a
// time (a second concurrent Wait returns when the first does).
//
// Buffer ownership: the local buffer of a request (Write's src, Read's dst, an atomic's
// result) belongs to the runtime until the Wait that follows its posting has returned.
type Counter struct {
	ops CounterOps
}

// NewCounter returns the Counter of ops.
func NewCounter(ops CounterOps) *Counter { return &Counter{ops: ops} }

// Ops returns c's runtime side.
func Ops(c *Counter) CounterOps { return c.ops }

// Close releases the counter; its pending requests must have completed (Wait).
func (c *Counter) Close() { c.ops.Close() }

// Pending reports how many counted requests have not completed.
func (c *Counter) Pending() int { return c.ops.Pending() }

// Wait makes progress until every request counted so far has completed, or ctx ends.
// It returns the first error among them (once: the next Wait starts afresh).
func (c *Counter) Wait(ctx context.Context) error { return c.ops.Wait(ctx) }
