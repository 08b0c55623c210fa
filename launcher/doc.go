// Package launcher is golaunch: it runs N copies of a rank program as one job, on this host
// or over a cluster of per-host agents. It owns everything between the user's command line
// and the ranks' PMI connections: flags and hostfiles, the memberlist cluster, the rank
// table, spawning and watching ranks, output forwarding, and aborting jobs. The command in
// launcher/cmd/golaunch only calls [Main].
//
//	golaunch -n 4 ./prog                                # one host
//	golaunch agent --bind 10.0.0.2:7946 --join 10.0.0.1:7946 --slots 8 --keyfile key
//	golaunch --join 10.0.0.1:7946 --keyfile key -n 16 ./prog  # over the cluster
//
// The rank table ([Place], [Roster]) is computed, not negotiated: ranks fill the hosts in
// host order, each up to its slots (--map-by node deals them out in turn, --npernode caps
// each host), and golaunch oversubscribes only when told to (--oversubscribe). An MPMD
// command line (golaunch -n 2 ./a : -n 2 ./b) is one job whose programs' ranks follow each
// other; each rank's program number is its PMI appnum. Each agent serves package pmi to
// its ranks, which learn their place from the GOLAUNCH_* contract. Every rank also gets
// PMI_FD, PMI_RANK and PMI_SIZE and is served PMI-1 on PMI_FD, so an MPI program built
// with MPICH runs under golaunch as under mpiexec.hydra. Agents gossip with
// hashicorp/memberlist under the cluster key, and the submitter talks to each agent over
// an authenticated, encrypted control connection. design.md describes the roster,
// spawning, the cluster, the control protocol and the abort rules.
//
// # Failure
//
// The job succeeds when every rank exits 0 after calling Finalize. The first rank that
// exits non-zero, dies by a signal, exits without Finalize or calls Abort, any agent that
// becomes unreachable, a rank that never reaches PMI init, --timeout, and SIGTERM, SIGHUP
// or a second SIGINT abort the job. Every rank's process group gets SIGTERM, then SIGKILL
// after --grace. golaunch prints one summary line naming the root cause, such as
//
//	golaunch: rank 3 (host h1, pid 1234) exited with code 7; job aborted
//	golaunch: rank 1 (host h1, pid 1230) killed by signal 9 (SIGKILL); job aborted
//	golaunch: rank 2 (host h1, pid 1232) panicked: panic: index out of range [3] with length 3; job aborted
//	golaunch: agent h2 unreachable (left the cluster); job aborted
//
// and exits with
//
//	0        every rank called Finalize and exited 0 (ExitOK)
//	N        the failing rank's exit code N (1-255), or the code it passed to Abort
//	         (Abort(0) and codes outside 1-255 become 1)
//	2        usage error; no rank was started (ExitUsage)
//	123      the failing rank crashed in Go: a panic or fatal error in its stderr, which
//	         exits 2 itself, or raises SIGABRT under GOTRACEBACK=crash (ExitPanic)
//	124      --timeout expired (ExitTimeout)
//	125      the job failed without an exit code of its own: an agent unreachable, a rank
//	         that exited without Finalize, never reached PMI init, broke the PMI
//	         protocol, or could not start
//	128+N    the failing rank was killed by signal N; or golaunch itself got
//	         SIGTERM (143), SIGHUP (129) or a second SIGINT (130), or its stdout closed (141)
//
// The failing rank is the root cause rather than the first report. A rank killed from
// outside or a lost agent outranks the Aborts and non-zero exits of ranks that saw it fail,
// if its report arrives within a second of theirs. A rank's own exit code can collide with
// 2, 123, 124 or 125; the summary line tells. No rank process survives its job, even when
// golaunch or an agent is SIGKILLed, unless it left its process group. The ranks of a
// stopped (SIGSTOP) agent end when it resumes, or by themselves once their runtime has seen
// a peer fail and heard nothing from the agent for a while. memberlist's verdict that an
// agent is dead ends a job only once the agent's control connection is silent too
// (design.md, Liveness). Agents do not reserve slots: concurrent jobs on one cluster may
// oversubscribe a host.
//
// With --ft a rank's failure, or a lost agent's for each of its ranks, does not abort the
// job: golaunch prints a line for it, every other rank gets a pmi.ProcFailed event, and
// fences complete without it. The ranks get GORMA_FT=1. The job exits 0 when every
// surviving rank finalized and exited 0; Abort, --timeout and signals abort it as ever.
//
// # Concurrency
//
// An [Agent] serves any number of jobs, one control connection each, and is safe for
// concurrent use. The submitter keeps all job state in one event-loop goroutine. Every
// goroutine ends with its connection, its process, the job, or the cluster member; no
// blocking wait is without a bound.
package launcher
