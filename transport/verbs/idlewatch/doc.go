// Package idlewatch is the cross-process idle-role watch of a rank's tcp device: the
// page layout that the rank and its watcher share, and the watcher, which runs in the
// process that starts ranks (golaunch's agents, apps/verbsperf).
//
// A tcp device lends a connection's reading role to a goroutine waiting in CQ.Wait; a
// role left idle when that goroutine returns must go back to the connection's reader, or
// passive-target requests wait until the application waits again. The rank records in
// the shared page that a role is idle (one store). The watcher ticks every Tick while a
// rank needs it. It rings the rank (an eventfd, the bell, and Signal) for a role it
// found idle in the same state on two scans in a row. It also rings for a parked reader
// whose socket held unread data on two scans (it holds a duplicate of the socket, taken
// with pidfd_getfd). The timer lives in another process because any Go timer that fires
// every millisecond changes how the rank's idle threads park and slows its round trips
// (apps/verbsperf measures a rank's round trip with and without a watch:
// --idle-watch=false).
//
// # Use
//
// The process that starts a rank creates a Watcher once (NewWatcher), and per rank calls
// Add, passes the returned Files to the rank's process (inherited descriptors; the rank
// hands them to its tcp device), closes its copies, and gives the started process to the
// Watch (Watch.Signal). Remove ends a watch once the rank exited; Close ends them all.
// The rank side (mapping the page, marking slots) lives in the tcp provider and uses the
// layout functions of this package: Word, SlotWord, SockWord, SetSlot, MapPage.
//
// # Concurrency
//
// A Watcher is safe for concurrent use; one goroutine scans its pages until Close. Page
// words are read and written atomically by both processes; each word has one writer
// (see the layout in page.go).
package idlewatch
