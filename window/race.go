//go:build race

package window

// raceEnabled is true in race builds (see rmwMapped).
const raceEnabled = true
