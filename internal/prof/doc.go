// Package prof owns a job's communication profile. Each rank counts the bytes and
// messages it sends to each peer (point-to-point, collectives, RMA at the origin)
// and the calls it makes (calls, bytes, time). The outputs are Open MPI's
// monitoring file (.prof), which Debian's profile2mat reads, a JSON document for
// the whole job, a text summary and an SVG heat map. The package imports only the
// standard library.
//
// A rank makes one [Counters] at Init and records on its hot paths:
//
//	c := prof.New(rank, size)       // nil when profiling is off: every method is then a no-op
//	t := c.Start(prof.CallAllreduce) // counts the call; reads the clock if it is timed
//	c.Coll(peer, n)                 // per member, the call's data for it
//	t.Stop(n)                       // adds n bytes, and the time since Start if timed
//	c.Send(peer, n)                 // one point-to-point message; PutTo, GetFrom for RMA
//
// Peers are ranks of the job (MPI_COMM_WORLD), in [0, size). Recording allocates
// nothing and takes no lock: each call is one to three atomic adds on arrays that
// New sized. A kind's first calls are timed, then a sample of them (ExactCalls,
// SampleEvery), so that short calls rarely read the clock. A [Local] counts with plain
// adds for an owner that holds its own lock. On nil Counters each is a nil check.
//
// At the end a rank writes its profile with [Counters.WriteOMPI] (prof.<rank>.prof)
// and [Rank.WriteJSON] of [Counters.Snapshot]; the launcher reads the ranks'
// documents ([ReadRank]), joins them with [Merge] into a [Job], and writes
// [Job.WriteJSON], [Job.WriteSummary] and [HeatMap] of [Job.Bytes]. [ParseOMPI]
// reads Open MPI's own .prof files, and [File.Rank] turns one into a [Rank], so
// that a job of Open MPI and one of gorma compare. design.md gives the formats,
// their sources and how gorma's counts relate to Open MPI's.
//
// Concurrency: the recording methods and Snapshot may be called from any goroutine
// at once; a Snapshot taken while others record may hold part of their counts. The
// other functions are pure; they neither keep nor modify what they are given.
package prof
