// Package stalecheck is the stale-read checker of gorma's RMA windows. Every rank runs a
// random mix of locked increments (Get + Put under an exclusive lock), Accumulates,
// shared-lock Gets and owner stores on a small window with the page cache on, and counts
// reads that return data older than a write whose completion the reader knows of.
//
// Each window element is a counter that only grows. A reader knows a lower bound for an
// element from three sources. Its own completed writes (read-your-writes), the values it
// read before (monotonic reads), and notes other ranks send it after their writes
// completed (a message sent after Unlock returned: causality across ranks). A Get that
// returns less than the bound is a stale read. At the end every element must equal the
// number of increments made to it (a stale Get under an exclusive lock would lose one).
//
// It runs inside tests with ranks as goroutines (runtimetest, pretend hosts) and as a
// scenario of tests/rmaprog through golaunch across network-namespace hosts.
package stalecheck
