// Package trace records each rank's timeline in a bounded ring (a flight recorder) and
// merges the ranks' dumps into one Chrome trace-event JSON file that Perfetto's UI opens.
// It imports only the standard library.
//
// The runtime makes one Recorder per rank at Init and names its calls and algorithms
// there (Label takes a lock). On the hot path it reads the clock and records:
//
//	rec := trace.NewRecorder(rank, 1<<16)
//	send, _ := rec.Label("Send")
//	start := rec.Stamp()
//	// ... the call ...
//	rec.Record(trace.Event{Kind: trace.Send, Start: start, End: rec.Stamp(), Bytes: n,
//		Flow: seq, Peer: int32(dest), Tag: int32(tag), Label: send})
//
// Costs: Stamp reads a Clock: the time-stamp counter where the kernel keeps time by it,
// else the monotonic clock. Snapshot converts stamps to nanoseconds. Record takes no lock
// and allocates nothing (one atomic add, one compare-and-swap and one atomic store on
// the slot). When the ring is full the oldest event is overwritten; Dump.Dropped counts
// the events a dump lacks. A Batch holds one owner's events with plain stores and
// records them together when the owner flushes it, before it waits.
//
// A Send event and the Match event of the same message carry the same Flow: the
// message's number on its (sender, receiver) pair, counted from 1 by both ends. A Recv
// event with a Flow holds that Match at its end, which the merge writes (MatchName).
// design.md states the rule and where it holds.
//
// MapRecorder keeps the ring in a file that another process reads once the recorder's
// process has ended, however it ended (ReadRing): golaunch gives each rank a memfd, so a
// crashed rank's timeline survives it.
//
// At the end (or when a hang report is asked for) each rank writes its Snapshot with
// AppendDump; a Dump's Open events are the calls it was blocked in. The merge reads the
// dumps one at a time: a Merger takes each dump (Add) and writes one process per rank, a
// complete event per Event and per open call, and at Close a flow from each Send to its
// Match. MergeJob and MergeFilesJob run one over dumps in memory and over dump files,
// with each rank's clock offset, and name the job's size, its failed ranks and its dead
// ones. Continue goes on with a merged document, to add the dumps of ranks it lacks. Pointer
// formats the line a hang report adds to name the rank's last event in the trace.
//
// Concurrency: Record, Stamp, Now, Label, Labels, Last, Snapshot and Recorded may be
// called from any goroutine at once; a Batch's methods only by its owner, one at a time,
// and a Merger's by one goroutine. A Record that meets a slot another goroutine holds
// drops its event and counts it in Dump.Lost rather than wait. The other functions are
// pure. Merge and AppendDump neither keep nor modify what they are given.
package trace
