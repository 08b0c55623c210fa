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
// # Concurrency
//
// A Client is safe for concurrent use; requests are serialized. Blocking calls take a
// context and return when it ends; ranks wait on the socket, never spin. A Server runs one
// goroutine per connection and calls its Handler from them; Close stops them all.
package pmi
