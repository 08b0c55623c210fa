package trace

// haveCounter reports whether rdtsc reads the time-stamp counter.
const haveCounter = true

// rdtsc returns the processor's time-stamp counter (clock_amd64.s).
func rdtsc() int64
