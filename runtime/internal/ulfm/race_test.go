//go:build race

package ulfm

// raceEnabled reports a -race build. The machines run on one goroutine, so the largest
// model check, which the race detector slows most, is left to builds without it.
const raceEnabled = true
