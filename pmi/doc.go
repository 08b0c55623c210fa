// Package pmi is the protocol between a rank and its process manager, both ends: the
// PMI-1 simple wire that MPI libraries, Slurm, Hydra and Flux speak, with gorma's
// extensions on top.
//
// A rank started by golaunch learns its place from the GOLAUNCH_* environment
// ([ReadContract]) and talks to its agent over its PMI_FD ([DialConn]; [Dial] connects
// to the agent's Unix socket instead). Over that one connection it publishes endpoint
// cards ([Client.Put]), waits for the job-wide exchange ([Client.Fence]), reads other
// ranks' cards ([Client.Get]), asks for the job to be aborted ([Client.Abort]) and says it
// is done ([Client.Finalize]). The agent pushes events the other way at any time
// ([Client.Events]): a peer rank failed, the job is being aborted, or the launcher asks
// what the rank is blocked in, which the rank answers with [Client.Report].
//
// The agent's [Server] answers gorma clients and PMI-1 clients alike, with one
// dispatcher and one key-value store ([Exchange]): on its socket ([Listen]) and on the
// socketpair end whose other end a rank got as PMI_FD ([Server.ServeConn]), so that an
// unmodified MPICH program runs under golaunch.
//
// # Wire protocol
//
// Lines of space-separated key=value fields (PMI-1's simple wire), each line at most
// [MaxLine] bytes, keys in any order, unknown keys ignored. Every line has cmd=; an
// answer that failed has rc=-1 and msg=. The client sends one request at a time and the
// agent answers it in order. A PMI-1 connection gets exactly the answers below and no
// other line; a gorma connection (one that began with gorma-init) also gets event lines
// at any time, an id= echoed on every answer, and text values percent-encoded (binary
// values hex).
//
//	rank → agent                                agent → rank
//	cmd=init pmi_version=1 pmi_subversion=1     cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0
//	cmd=get_maxes                               cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024
//	cmd=get_appnum                              cmd=appnum appnum=A
//	cmd=get_my_kvsname                          cmd=my_kvsname kvsname=K
//	cmd=get_universe_size                       cmd=universe_size size=N
//	cmd=put kvsname=K key=KEY value=V           cmd=put_result rc=0 msg=success
//	cmd=get kvsname=K key=KEY [rank=R]          cmd=get_result rc=0 msg=success value=V
//	cmd=barrier_in                              cmd=barrier_out           (after every rank fenced)
//	cmd=abort exitcode=C [message=M]            (none; a gorma client: cmd=abort_ack rc=0)
//	cmd=finalize                                cmd=finalize_ack
//	cmd=gorma-init version=3 rank=R job=J       cmd=gorma-init_ack rc=0 size=N secret=HEX kvsname=K appnum=A mapping=M hosts=H1,H2
//	cmd=gorma-spawn n=N                         cmd=gorma-spawn_ack rc=0 first=F n=N  (once the N new ranks fenced)
//	                                            cmd=gorma-event kind=proc-failed|abort rank=R host=H code=C cause=M
//	                                            cmd=gorma-event kind=report ... [stacks=1]
//	cmd=gorma-report text=T                     (none: one way, taken even while a fence waits)
//
// A get without rank= is PMI-1's: the job's value of KEY ([AnyRank]); the agent answers
// PMI_process_mapping itself ([Info.ProcessMapping]). A PMI-1 get of a missing key is
// answered as Hydra does: cmd=get_result rc=-1 msg=key_KEY_not_found value=unknown. A
// PMI-1 put's value= keeps its spaces. A request that breaks the protocol is answered
// with rc=-1 and passed to a Handler that is a [ProtocolHandler] ([ProtocolError]).
// design.md has the reasoning.
//
// # Foreign process managers
//
// A rank started by Slurm's srun, MPICH's mpiexec.hydra or Flux finds a PMI server in its
// environment ([Detect]: PMI_FD, or PMI_PORT with PMI_ID) and talks to it through
// [Connect], which returns a [*Foreign]. Both *Client and *Foreign are a [Session]: rank,
// size, put, fence, get, abort, finalize. Foreign speaks PMI-1 (the simple wire, 1.1) or
// PMI-2, chosen by GORMA_PMI (auto, 1 or 2). It stores binary values as base64url split
// to the server's vallen_max under keys "gorma-RANK-KEY", and reads the node of every
// rank from PMI_process_mapping ([Foreign.Nodes], [ParseProcessMapping]).
//
// Under Open MPI's mpirun or srun --mpi=pmix, [ConnectPMIx] speaks OpenPMIx's v4.1 wire
// to the PMIx server ([DetectPMIx]) and returns a [*PMIx], also a Session. [ListenPMIx]
// serves that wire to a job's ranks in front of a Handler ([PMIxServer]): golaunch runs
// one beside its PMI-1 server, so that Open MPI programs run under golaunch.
//
// The PMI-1 line codec ([ParseSimpleLine], [FormatSimpleLine], [SimpleReader]) and the
// PMI-2 frame codec ([ParseFrame], [FormatFrame], [ReadFrame]) serve both ends: a client
// of a foreign server, and a server that MPICH-built programs talk to. design.md gives
// the wire as gorma speaks it.
//
// # Concurrency
//
// A Client and a Foreign are safe for concurrent use; requests are serialized. Blocking
// calls take a context and return when it ends; ranks wait on the socket, never spin.
// A Foreign Put or Get cut off by its context leaves its answer to the next request;
// any other cut-off request ends the connection (PMI is lock-step). Servers run
// goroutines per connection and call their Handler from them; Close stops them all.
package pmi
