package launcher

import (
	"time"

	"github.com/gorma-hpc/gorma/internal/hang"
	"github.com/gorma-hpc/gorma/pmi"
)

// A rank that is no gorma rank (an MPI library's, or a program that never reached PMI
// init) cannot answer a hang report's request. Its agent answers for it with what its PMI
// servers saw of the rank's requests: the PMIx server's for an Open MPI rank, the PMI-1
// server's for an MPICH rank. That is the fence the rank waits in, or its last request,
// and whether it called finalize. The submitter knows the ranks that ended.

// reportForeign answers a report request for each local rank that runs, is not stopped
// (reportStalled answers for those) and is no gorma rank.
func (j *agentJob) reportForeign() {
	now := time.Now()
	for _, p := range j.procList() {
		select {
		case <-p.ended:
			continue // its exit is reported
		default:
		}
		rep, ok := j.foreignReport(p.rank, p.pid, now)
		if !ok {
			continue // a gorma rank answers itself
		}
		if _, stalled := procStalled(p.pid); stalled {
			continue // reportStalled answers for it
		}
		j.send(fReport, reportMsg{Rank: p.rank, Text: string(hang.AppendReport(nil, rep))})
	}
}

// foreignReport returns the report of rank, whose process is pid, at now; false for a
// gorma rank, which answers itself.
func (j *agentJob) foreignReport(rank, pid int, now time.Time) (hang.Report, bool) {
	c, ok := j.srv.Calls(rank)
	if ok && c.Wire == pmi.WireGorma {
		return hang.Report{}, false
	}
	if px, pok := j.pmix.Calls(rank); pok {
		c, ok = px, true
	}
	rep := hang.Report{Rank: rank, Host: j.host(), Pid: pid, State: hang.Foreign}
	if ok {
		rep.Progress, rep.PMI = c.Done, foreignCalls(c, now)
	}
	return rep, true
}

// foreignCalls is what a report says of a rank's PMI requests c at now: the fence it waits
// in and for how long, or its last request and how long ago.
func foreignCalls(c pmi.Calls, now time.Time) hang.PMICalls {
	pc := hang.PMICalls{Wire: c.Wire, Last: c.Last, Since: now.Sub(c.LastAt), Finalized: c.Finalized}
	if c.Fence != "" {
		pc.Wait, pc.Since = c.Fence, now.Sub(c.FenceAt)
	}
	return pc
}
