package collectives

import (
	"context"

	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime"
)

// A call is the host group's hostgroup.Call: the methods below, with Req (state.go).

// Context is the call's context.
func (c *call) Context() context.Context { return c.ctx }

// World is the World of the call's state: its sub-group's World for a sub-call.
func (c *call) World() *runtime.World { return c.s.comm }

// ID names the call in the host group's meta words: its number, kind, root and tags.
func (c *call) ID() hostgroup.CallID {
	return hostgroup.CallID{Number: uint64(c.s.seq), Kind: c.kind, Root: c.root, Tag: c.tag, SetupTag: setupTag(c)}
}

// Flush gives the call's observation a turn while the call waits (observe.go).
func (c *call) Flush(long bool) { c.s.flushEvents(long) }

// FreshScratch reports whether the call acquires its big buffers (ScratchFresh).
func (c *call) FreshScratch() (bool, error) { return freshScratch() }
