// Package collectives holds gorma's collective operations (Allreduce, Reduce, Bcast,
// Allgather(v), ReduceScatter(V), Alltoall(v, w), Gather(v), Scatter(v), Scan, Exscan,
// Barrier, AllreduceLoc and ReduceLoc for (value, index) pairs, the ...Type forms over
// datatype layouts, ReduceType and AllreduceType with user operators over them:
// NewTypeOp), their nonblocking (I...) and persistent (...Init) forms. The reduction
// operators that they and window accumulates apply. They run over a runtime.World's
// point-to-point messages and, between ranks on one host, over shared arena scratch. On
// an intercommunicator, Barrier, Bcast, Reduce, Allreduce, Gather(v), Scatter(v),
// Allgather(v), Alltoall(v, w), ReduceScatter(V) and the Type forms of Bcast, Gather,
// Scatter, Allgather and Alltoall move data between its groups (inter.go). Rooted calls
// take runtime.Root at the root, runtime.ProcNull at the rest of its group, and the
// root's rank at the other group.
//
//	err := collectives.Allreduce(ctx, w, send, recv, collectives.Sum[float64]())
//	err = collectives.Allreduce(ctx, w, nil, recv, collectives.Max[float64]()) // in place
//	err = collectives.Bcast(ctx, w, buf, 0)
//
// # Operators
//
// An Op[T] combines two equally long slices element by element: Apply(inout, in) sets
// inout[i] = inout[i] ∘ in[i]. The predefined operators are Sum, Prod, Min, Max, Band,
// Bor, Bxor, Land, Lor, Lxor, and Replace and NoOp for one-sided accumulates; NewOp makes
// a user operator with a commutativity flag; ReduceLocal applies one locally. Operators must be associative; a non-commutative one is
// applied in rank order. Ops are small values, safe to copy and to use from any goroutine;
// Apply allocates nothing.
//
// # Algorithms
//
// Each operation picks its algorithm from the vector size, the number of ranks and where
// they run; Allreduce has shm, hierarchical, recursive-doubling, Rabenseifner, ring,
// direct and lanes algorithms. GORMA_ALLREDUCE (EnvAllreduce) forces one, and
// GORMA_SCRATCH (EnvScratch) or SetScratch chooses between reused arena scratch and fresh
// scratch per call. design.md describes the algorithms and the selection rule.
//
// Scratch and Requests are kept per World and reused: a small Allreduce allocates nothing
// in steady state. They are released when the World becomes unreachable.
//
// # Nonblocking and persistent calls
//
// Iallreduce, Ibcast and the other I functions start the blocking call of their name and
// return a Request at once; Wait, Test, WaitAll and TestAll report how it ended. The
// calls of one World run in the order the rank started them on a worker goroutine, so
// they progress while the caller computes. AllreduceInit and the other Init functions
// make persistent Requests (MPI-4), inactive until Start or Startall and reusable once
// finished, released by Free. While a Request is active its buffers belong to the library.
//
//	req := collectives.Iallreduce(ctx, w, send, recv, collectives.Sum[float64]())
//	compute()
//	err := req.Wait(ctx)
//
// # Errors
//
// Errors read "collectives: <name>: ..." and wrap the runtime's sentinels
// (runtime.ErrInvalid for bad arguments, runtime.ErrConfig for a bad environment
// variable, *runtime.ProcError for a failed rank, runtime.ErrFinalized after Finalize) or
// ctx's error. Ranks that pass different counts fail with ErrMismatch (a message shorter
// than expected) or runtime.ErrTruncated (longer) at the ranks that see it; the others
// end when their ctx does. Bcast cannot always tell: ranks whose count equals root's get
// root's vector. Under GORMA_CHECK=1 every call is first compared across the ranks (its
// call, count, element type, operator and root: substrate.Track.Check), and a difference
// fails it at every rank, before it runs, with a *runtime.MismatchError naming both calls
// (ErrMismatch is runtime.ErrMismatch). Once any rank has failed, a call fails at every rank that waits for a
// message. After a failed call the World's collectives may be used again; on error the
// contents of recv are undefined.
//
// # Concurrency contract and buffer ownership
//
// Every rank must make the collective calls on one World in the same order, with
// matching arguments (counts, root, operator). Calls may come from any goroutine, but not
// concurrently on one World: a call that starts while another runs fails with
// ErrConcurrent. A blocking call made while nonblocking calls started before it are
// unfinished waits for them. Calls on different Worlds (w.Dup()) are independent and may run
// concurrently; point-to-point traffic on the World may go on meanwhile.
//
// The buffers are the caller's again when a call returns; during the call send is only
// read and recv is written. A nil send means in place: recv is both. send and recv must
// not otherwise overlap: a call whose send and recv share memory fails with an error
// wrapping runtime.ErrInvalid at the ranks that pass them.
package collectives
