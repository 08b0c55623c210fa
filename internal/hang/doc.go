// Package hang owns what a hang report says. The [Record] of a call a rank is blocked in,
// the [Report] a rank gives when asked, their one-line and text forms, and [Diagnose],
// which names the cause of a hang from every rank's report. The runtime produces records
// and reports; the launcher gathers them, prints [Report.Line] for each rank and then the
// lines of Diagnose. The package imports only the standard library.
//
// A rank describes each goroutine blocked in a gorma call with a Record (point-to-point
// calls name a Peer and Tag; collective calls carry their number Seq on their
// communicator, and Members when the communicator is not World) and answers with a Report.
// Its Done records are the last collective calls it returned from, which Diagnose and
// [Mismatched] compare with the others' calls of the same numbers:
//
//	rep := hang.Report{Rank: 0, Host: host, State: hang.Blocked, Progress: done,
//		Records: []hang.Record{{Call: "Recv", Comm: "World", Peer: 1, Tag: 0,
//			Root: -1, Count: -1, Since: time.Since(start)}}}
//	msg := hang.AppendReport(nil, rep) // what the rank sends to its agent
//
// The launcher parses each answer and prints:
//
//	rep, err := hang.ParseReport(string(msg))   // a rank that does not answer: {Rank: r, State: hang.Silent}
//	fmt.Println(rep.Line())                     // rank 0: Recv(src=1, tag=0, World) for 31.2s
//	for _, cause := range hang.Diagnose(reps) { // deadlock: rank 0 waits for rank 1 in Recv; rank 1 waits in Finalize
//		fmt.Println(cause)
//	}
//
// A rank that is no gorma rank (an MPI library's) cannot answer. Its agent answers for it
// with a [Foreign] report whose [PMICalls] say what the agent saw of its PMI requests, and
// [ForeignSummary] states the facts of such a job without naming a cause.
//
// Unknown values: Peer is [NoRank] when the call names no peer and [AnyRank] for any
// source; Tag, Root and Count are -1 and Type, Op and Win "" when unknown or not
// applicable. A zero Record is not one of these: set them.
//
// The text form (AppendRecord, ParseRecord, AppendReport, ParseReport) is bounded
// ([MaxRecordLen], [MaxString], [MaxMembers], [MaxRecords], [MaxStacks]). The appenders
// cut what exceeds the bounds, so that a value whose numbers are in range (int32, Peer
// from NoRank, Tag, Root and Count from -1, Rank and Omitted from 0, a named State)
// encodes to text the parsers accept, and the parsers reject anything else with an error
// wrapping [ErrSyntax]. design.md describes the forms and the model Diagnose applies.
//
// Concurrency: the package is pure and holds no state; every function may be called from
// any goroutine. The functions neither keep nor modify the slices they are given (the
// appenders extend b as append does).
package hang
