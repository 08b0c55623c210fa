//go:build race

package runtime_test

// raceEnabled reports a -race build, under which sync.Pool drops items at random, so
// allocation counts of pooled paths mean nothing.
const raceEnabled = true
