//go:build race

package launcher

func init() { raceEnabled = true }
