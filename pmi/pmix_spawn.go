package pmi

// SpawnRefuser is implemented by a Handler that ends a job when one of its ranks asks the
// PMIx server to start programs (Open MPI's MPI_Comm_spawn), which golaunch does not do.
// Open MPI 4.1 gives the refusal to the spawn's root alone. In a job of more than one
// rank the other ranks of the spawn would wait for its result for ever. So the server
// calls RefusedSpawn and leaves the rank unanswered until the job ends. In a job of one
// rank, or under a Handler without it, the request is answered PMIX_ERR_NOT_SUPPORTED:
// the rank alone sees the error.
type SpawnRefuser interface {
	// RefusedSpawn reports rank's spawn of program: the command of the request's first
	// app, or "" when the request does not say. The server calls it from the
	// connection's goroutine.
	RefusedSpawn(rank int, program string)
}

// spawn serves a spawn request, whose body after the command d holds.
func (s *PMIxServer) spawn(pc *pxConn, tag uint32, d *pmixDec) {
	sr, ok := s.h.(SpawnRefuser)
	if !ok || len(s.job.NodeOf) < 2 {
		pc.send(tag, pmixStatusBody(pmixErrNotSupported))
		return
	}
	sr.RefusedSpawn(pc.rank, Truncate(pmixSpawnProgram(d)))
}

// pmixSpawnProgram reads the command of a spawn request's first app, or "" when the body
// does not parse. The body holds the job's directives (infos), then the count of apps and
// the apps, each starting with its command.
func pmixSpawnProgram(d *pmixDec) string {
	d.infos()
	d.count(1)
	n := d.n("app count", int64(d.uvar()), 1)
	if n == 0 || d.err != nil {
		return ""
	}
	d.count(n)
	cmd := d.str()
	if d.err != nil {
		return ""
	}
	return cmd
}
