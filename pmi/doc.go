// Package pmi is the protocol between a rank and its host's agent (PMI-style), both ends.
//
// A rank learns its place from the GOLAUNCH_* environment ([ReadContract]) and connects
// to its agent's Unix socket ([Dial]). Over that one connection it publishes endpoint
// cards ([Client.Put]), waits for the job-wide exchange ([Client.Fence]), reads other
// ranks' cards ([Client.Get]), asks for the job to be aborted ([Client.Abort]) and says it
// is done ([Client.Finalize]). The agent pushes events the other way at any time
// ([Client.Events]): a peer rank failed, or the job is being aborted.
//
// # Wire protocol
//
// Lines of space-separated key=value fields, each line at most [MaxLine] bytes, values
// percent-encoded (url.QueryEscape), binary values hex. Every line has cmd=. The rank sends
// one request at a time and the agent answers it in order; event lines (cmd=event) may
// come between. Version [ProtocolVersion] is checked at init.
//
//	rank → agent                              agent → rank
//	cmd=init version=1 rank=R job=J           cmd=init-ok size=N secret=HEX
//	cmd=put key=K value=HEX                   cmd=put-ok
//	cmd=fence                                 cmd=fence-ok              (after every rank fenced)
//	cmd=get rank=R key=K                      cmd=get-ok value=HEX | cmd=error code=notfound msg=...
//	cmd=abort code=C msg=M                    cmd=abort-ok
//	cmd=finalize                              cmd=finalize-ok
//	                                          cmd=event kind=proc-failed|abort rank=R host=H code=C cause=M
//
// Any request may be answered with cmd=error code=CODE msg=M.
//
// # Foreign process managers
//
// A rank started by Slurm's srun, MPICH's mpiexec.hydra or Flux finds a PMI server in its
// environment ([Detect]: PMI_FD, or PMI_PORT with PMI_ID) and talks to it through
// [Connect], which returns a [*Foreign]. Both *Client and *Foreign are a [Session]: rank,
// size, put, fence, get, abort, finalize. Foreign speaks PMI-1 (the simple wire, 1.1) or
// PMI-2, chosen by GORMA_PMI (auto, 1 or 2); it stores binary values as base64url split
// to the server's vallen_max under keys "gorma-RANK-KEY", and reads the node of every
// rank from PMI_process_mapping ([Foreign.Nodes], [ParseProcessMapping]).
//
// The PMI-1 line codec ([ParseSimpleLine], [FormatSimpleLine], [SimpleReader]) and the
// PMI-2 frame codec ([ParseFrame], [FormatFrame], [ReadFrame]) serve both ends: a client
// of a foreign server, and a server that MPICH-built programs talk to. design.md gives
// the wire as gorma speaks it.
//
// # Concurrency
//
// A Client and a Foreign are safe for concurrent use; requests are serialized. Blocking
// calls take a context and return when it ends; ranks wait on the socket, never spin. A
// Foreign request abandoned by its context leaves the session unusable (PMI is
// lock-step). A Server runs one goroutine per connection and calls its Handler from them;
// Close stops them all.
package pmi
