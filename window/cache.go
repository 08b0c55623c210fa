package window

import "context"

// The coherent page cache for cross-host targets (DSM invalidation, window/coherence).

func (w *Win[T]) coherenceLayout() {}

func (w *Win[T]) initCoherence() error { return nil }

func (w *Win[T]) closeCoherence() {}

// cacheGet serves a Get of len(result) elements at byte offset off of t from a coherent
// cached copy, and reports whether it did.
func (w *Win[T]) cacheGet(s span[T], result []T, off uint64) bool { return false }

// noteWrite records a transport-path write of n bytes at off of t. w.mu is held.
func (w *Win[T]) noteWrite(s span[T], off uint64, n int) {}

// completeWrites runs the invalidations of t's recorded writes.
func (w *Win[T]) completeWrites(ctx context.Context, t *target[T]) error { return nil }

// ownerSync makes this rank's own stores visible to ranks caching its pages.
func (w *Win[T]) ownerSync(ctx context.Context) error { return nil }
