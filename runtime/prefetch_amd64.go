package runtime

import "unsafe"

// prefetchW asks the core to own the cache line at p, ahead of a store to it (PREFETCHW;
// a no-op on cores without it). A fast box sender calls it for the next cell, so that the
// store of the next message finds the line in its cache instead of waiting for the
// receiver to give it up. A locked instruction that follows a store that missed (the
// engine lock's next Lock) waits for that line; this takes the wait off the send path.
//
//go:noescape
func prefetchW(p unsafe.Pointer)

// prefetchR asks the core to load the cache line at p into its cache, ahead of a load
// (PREFETCHT0). A fast box receiver calls it for the next cell while it handles a
// message, so that the two lines' transfers from the sender overlap.
//
//go:noescape
func prefetchR(p unsafe.Pointer)

// spinPause executes PAUSE: a polling loop's hint that it waits for another core's
// store (see poller.go's "Spinning").
func spinPause()
