package subcore

import "sync/atomic"

// CallNames holds the function of substrate.NameCalls, or nil: it names the process's
// calls in hang reports by the API the program called.
var CallNames atomic.Pointer[func(call string) string]
