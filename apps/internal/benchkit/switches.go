package benchkit

import "syscall"

// Switches returns the process's voluntary and involuntary context switches so far
// (getrusage RUSAGE_SELF: every thread of the process). The benchmarks report the
// difference around a timed loop, per operation, as vcsw_per_call and ivcsw_per_call.
// It returns zeros if getrusage fails.
func Switches() [2]float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return [2]float64{}
	}
	return [2]float64{float64(ru.Nvcsw), float64(ru.Nivcsw)}
}
