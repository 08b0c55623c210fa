package subcore

import (
	"sync/atomic"
	"time"
)

// The coarse clock of hang reports. The runtime's event watcher advances it (Tick) while
// the rank is under a launcher that can ask for reports; elsewhere it stays 0 and reports
// give no durations.
var (
	clockStart = time.Now()
	clockMs    atomic.Int64 // milliseconds since clockStart
)

// Now returns the coarse clock plus one, so that 0 means "not waiting".
func Now() int64 { return clockMs.Load() + 1 }

// Tick advances the coarse clock.
func Tick() { clockMs.Store(time.Since(clockStart).Milliseconds()) }

// Since converts a Now stamp into the time elapsed since it.
func Since(stamp int64) time.Duration {
	if stamp == 0 {
		return 0
	}
	return time.Duration(clockMs.Load()-(stamp-1)) * time.Millisecond
}
