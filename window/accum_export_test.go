package window

import "time"

// SetAccChunk sets the largest range (bytes) of one transport-path accumulate chunk, so
// that tests cut small operations into several chunks, and returns a function restoring
// it. Call it before starting the ranks.
func SetAccChunk(n int) (restore func()) {
	old := accChunk
	accChunk = n
	return func() { accChunk = old }
}

// SetSleepMax sets the longest sleep of a wait for a metadata word and returns a function
// restoring it. Call it before starting the ranks.
func SetSleepMax(d time.Duration) (restore func()) {
	old := sleepMax
	sleepMax = d
	return func() { sleepMax = old }
}

// SetCacheMaxPages sets the page cache's per-window budget and returns a function
// restoring it. Call it before starting the ranks.
func SetCacheMaxPages(n int) (restore func()) {
	old := cacheMaxPages
	cacheMaxPages = n
	return func() { cacheMaxPages = old }
}
