package window

// SetAccChunk sets the largest range (bytes) of one transport-path accumulate chunk, so
// that tests cut small operations into several chunks, and returns a function restoring
// it. Call it before starting the ranks.
func SetAccChunk(n int) (restore func()) {
	old := accChunk
	accChunk = n
	return func() { accChunk = old }
}
