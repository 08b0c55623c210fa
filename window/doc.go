// Package window provides MPI-3 style RMA windows: Win[T], memory of every rank of a
// World that every rank accesses with one-sided Put, Get, accumulates and atomics, in
// epochs opened and closed by Fence, PSCW (Post/Start/Complete/Wait) or passive-target
// Lock/Unlock with Flush.
package window
