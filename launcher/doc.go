// Package launcher is golaunch: it runs N copies of a rank program as one job, on this host
// or over a cluster of per-host agents, and owns everything between the user's command
// line and the ranks' PMI connections: flags and hostfiles, the memberlist cluster, the
// rank table, spawning and watching ranks, output forwarding, and aborting jobs. The
// command in launcher/cmd/golaunch only calls [Main].
//
// # Running a job
//
// Locally (`golaunch -n 4 ./prog`), golaunch is agent 0 and the seed of a one-member
// memberlist cluster on 127.0.0.1 with a random key, and submits the job to itself over
// the same authenticated control protocol a multi-host job uses: one code path. With
// --join, golaunch joins a running cluster of `golaunch agent` processes as a member with
// no slots, reads the member list it got at join (it never waits for gossip to converge),
// and pushes the job to every agent that gets ranks.
//
// The rank table ([PlanRanks], [Roster]) is computed, not negotiated: ranks fill the hosts
// in host order (the -H/--hostfile order, or the agents sorted by name), each up to its
// slots. golaunch never oversubscribes: too few slots is a usage error.
//
// Each agent creates a 0700 directory with its PMI socket for the job (package pmi),
// spawns its ranks from one goroutine locked to its OS thread (so that Pdeathsig SIGKILLs
// them when the agent process dies, even by SIGKILL, and never earlier), each in its own
// process group, with the GOLAUNCH_* contract ([pmi.Contract]) plus the -x variables in the
// agent's environment. PMI Init hands each rank the job size and a per-job 32-byte
// random secret. Fences are global: on a multi-host job every agent forwards its ranks'
// puts to the submitter, which merges the round and sends each agent the other hosts'
// puts ([pmi.Exchange.Merge]). Agents stream the ranks' output and exit statuses back to
// the submitter, which prints the output (tagged "[rank] " per whole line when N>1, or to
// --output-dir/rank.N.log) and forwards its stdin to rank 0.
//
// The spawning thread binds itself to a rank's processors for the fork, so the rank
// starts bound (--bind-to, bind.go): by default only on a host whose ranks outnumber the
// agent's processors, the ranks then dealt to the processors in turn (local rank l on
// processor l mod c), except ranks that sleep for every message (GORMA_PROGRESS=block).
// A rank bound to one processor gets GOMAXPROCS=2 unless its environment sets one, and
// every rank gets GOLAUNCH_HOST_CPUS, the agent's processor count, which its own affinity
// no longer tells.
//
// # Cluster and control protocol
//
// Agents gossip with hashicorp/memberlist, encrypted with the cluster key (16, 24 or 32
// bytes from --keyfile, raw or hex, mode 0600) and labelled "gorma", so two clusters never
// mix and a member with another key never joins. An agent that joins with the name of a
// live agent at another address gives up at once (exit 125, "the name h1 is taken by the
// agent at ADDR") and without a goodbye in that name: left running, it got the live agent
// declared dead, aborting its jobs. Two agents that end up with one name after both
// joined (a restart with the same --name while the old agent was only suspected, or an
// agent cut off, replaced and back) are settled by memberlist's failure detector, which
// probes one address per name: the agent that no member has probed for 15 probe
// intervals although it has had live peers for as long gives up the same way, the other
// keeps the name and its jobs (rejoin.go). Node metadata ([NodeMeta]) carries each
// agent's slots, control address, control protocol version and a random boot id (also in
// its acks). memberlist is tuned to declare a dead agent in about 1-2 s (see cluster.go
// for the arithmetic), against about 5 s with its defaults. memberlist never contacts a
// member it declared dead or that left, so each agent runs a rejoin loop (rejoin.go): it
// joins the addresses of departed agents again (after 1 s, then at a tenth of their
// absence, at most a minute apart, for a day), its own --join addresses while no other
// agent is live, and at once an agent whose acks carry a new boot id (restarted before its
// death was noticed). A restarted agent, the seed included (restarted without --join), is
// back in every member's list within about 1-2 s. The submitter talks to each agent over one TCP connection
// authenticated by a mutual HMAC-SHA256 challenge-response with a key derived from the
// cluster key; the agent reads only a fixed-size hello from a peer that cannot prove the
// key, writes nothing to it, and never reads its frames. Frames are then sealed with
// AES-256-GCM under per-connection, per-direction keys, so the job's secret and
// environment never cross the network in clear (control.go).
//
// # Failure
//
// The job succeeds when every rank exits 0 after calling Finalize. A program that never
// uses PMI (`golaunch -n 2 hostname`) may exit 0 without Finalize as long as no rank of
// the job reaches PMI init. The first of these aborts the job:
//
//   - a rank exits non-zero, is killed by a signal, or exits 0 without Finalize after
//     reaching PMI init (or while other ranks use PMI);
//   - a rank calls Abort(code) through PMI;
//   - an agent becomes unreachable: its control connection ends (a killed agent, at once)
//     or memberlist declares it dead or gone (a hung host or a cut link, in about 1-2 s),
//     also before the ranks start (while golaunch connects to the agents and while they
//     set the job up: then no rank starts), and at once for an agent that departed after
//     golaunch read the member list (the agent on the far side of a cut ends its own
//     ranks when memberlist declares the submitter dead, or isolatedGrace after it lost
//     every other host of the job);
//   - at a startup check (--startup-timeout after the start, then every such period
//     until some rank has reached PMI init), a running rank has not reached PMI init
//     while another has;
//   - --timeout expires; golaunch gets SIGTERM or SIGHUP, or a second SIGINT (the first
//     is forwarded to every rank).
//
// Aborting tells the surviving ranks through PMI (a ProcFailed or Aborted event), fails
// pending fences, sends SIGTERM (then SIGCONT) to every rank's process group, and
// SIGKILL after --grace (at once on a second Ctrl-C). An agent that loses its submitter
// (its control connection ends, or memberlist declares it dead or gone) aborts its ranks
// by itself, or drops the job it was setting up. An aborted job gives the ranks' last output at most
// outputStall to reach a stdout nobody reads, then golaunch exits anyway. The job directory (PMI socket) of an agent killed by
// SIGKILL is removed by the next agent (or local golaunch) started on that host once the
// directory is a minute old (a younger one is left alone, as a job being set up has one
// for a moment with its socket not yet listening). golaunch prints one summary line on stderr, such as
//
//	golaunch: rank 3 (host h1, pid 1234) exited with code 7; job aborted
//	golaunch: rank 1 (host h1, pid 1230) killed by signal 9 (SIGKILL); job aborted
//	golaunch: rank 0 (host h1, pid 1229) exited without calling Finalize; job aborted
//	golaunch: agent h2 unreachable (declared dead by memberlist (no answer to probes)); job aborted
//	golaunch: agent h2 unreachable (left the cluster); job aborted
//
// The line names the root cause. Survivors of a killed rank see the failure within
// milliseconds and may exit non-zero before the killed rank's report arrives; a root cause
// (a rank killed by a signal its agent did not send, a lost agent, an Abort, a timeout)
// that arrives within 250 ms of a first failure that was only a non-zero exit or a missing
// Finalize takes its place in the summary line and the exit code.
//
// # Exit codes
//
//	0        every rank called Finalize and exited 0
//	N        the first failing rank's exit code N (1-255), or the code it passed to
//	         Abort (Abort(0) and codes outside 1-255 become 1)
//	2        usage error: bad flags, hostfile line (file:line), keyfile, or a program
//	         that is not found or not executable; no rank was started
//	124      --timeout expired
//	125      the job failed without an exit code of its own: an agent unreachable, a rank
//	         that exited without Finalize, never reached PMI init, or could not start
//	128+N    the first failing rank was killed by signal N; or golaunch itself got
//	         SIGTERM (143), SIGHUP (129) or a second SIGINT (130); or its stdout was
//	         closed by its reader (golaunch ... | head: 141, the job ends)
//
// A rank's own exit code can of course collide with 2, 124 or 125; the summary line tells.
//
// # Concurrency
//
// An [Agent] serves any number of jobs, one control connection each; each job
// (agentJob) is driven by its connection's reader goroutine, and its rank waiters,
// output pumps and PMI handlers report to the submitter through the connection's
// serialized writes. The submitter (submitter) keeps all job state in one event-loop
// goroutine, fed by one reader goroutine per agent connection (which also writes output,
// so a rank's output always precedes its exit report). An agent's rejoin loop is one
// goroutine, woken by a ticker and by the ping delegate. A job's spawner (spawn.go) holds
// the ranks' idle-role watcher (idlewatch.Watcher: one goroutine on a timer, 1 ms while a
// rank needs it (it led a tcp wait, or has a window), 50 ms otherwise; only for jobs that
// may use tcp: --transport tcp, or ranks on several hosts; a rank leaves roles to it
// only once it ticks for the rank), which hands the tcp reading roles that ranks leave
// idle back to their progress goroutines and rings ranks whose
// progress goroutines are stranded (docs/launcher.md "Idle-role watch"); it stops with
// the spawner. Every
// goroutine ends with its connection, its process, the job, or the cluster member (the
// rejoin loop); no blocking wait is without a bound.
//
// # Gaps
//
// Agents do not reserve slots: concurrent jobs on one cluster may oversubscribe a host.
// A rank's descendants that leave its process group are not tracked. (Those that stay in
// it die with the job, even when golaunch or the agent is SIGKILLed: Pdeathsig kills the
// rank, and the spawner's watchdog process, watchdog.go, kills the rank's group.) Agents
// are started by the user (or systemd), never over ssh.
package launcher
