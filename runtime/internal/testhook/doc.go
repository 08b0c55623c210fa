// Package testhook lets package runtimetest start ranks through the runtime's internal
// initialization (with a launch environment of its own instead of the process's, a host
// identity salt, and an exit function), without adding that entry point to the runtime's
// public API. Package runtime sets Init from its init function.
package testhook

import "context"

// Options are the knobs of Init.
type Options struct {
	// Getenv replaces os.Getenv: the rank's GOLAUNCH_* contract and GORMA_* settings.
	Getenv func(string) string
	// HostSalt, if not empty, is mixed into the rank's host identity, so that ranks of one
	// process with different salts count as being on different hosts.
	HostSalt string
	// Exit replaces os.Exit for Abort.
	Exit func(code int)
}

// Init is runtime's internal Init; it returns a *runtime.World.
var Init func(ctx context.Context, opt Options) (any, error)

// ArenaUse returns the bytes in use and the live MRs of the arenas of every device of a
// *runtime.World's rank, for leak tests (runtimetest.ArenaUse). Package runtime sets it.
var ArenaUse func(w any) (inUse, liveMRs int64)
