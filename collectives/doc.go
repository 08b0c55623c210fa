// Package collectives holds gorma's collective operations — Allreduce, Reduce, Bcast,
// Allgather, ReduceScatter, Alltoall, Barrier — and the reduction operators they (and
// window accumulates) apply. They are built on the runtime's point-to-point messages.
//
//	err := collectives.Allreduce(ctx, w, send, recv, collectives.Sum[float64]())
//	err = collectives.Bcast(ctx, w, buf, 0)
//
// # Reduction operators
//
// An Op[T] combines two equally long slices element by element: Apply(inout, in) sets
// inout[i] = inout[i] ∘ in[i]. The predefined operators are Sum, Prod, Min, Max (ordered
// types), Band, Bor, Bxor (integer types), and the two that MPI defines for one-sided
// accumulates: Replace (inout[i] = in[i]) and NoOp (inout unchanged, for fetching with
// GetAccumulate). NewOp makes a user-defined operator with a commutativity flag.
//
//	sum := collectives.Sum[float64]()
//	a, b := []float64{1, 2}, []float64{10, 20}
//	sum.Apply(a, b) // a == [11 22]
//
// Ops are small values, safe to copy and to use from any number of goroutines. Apply
// allocates nothing. Operators must be associative; the collectives combine the ranks'
// vectors as x0 ∘ x1 ∘ ... ∘ x(p-1) in rank order whenever an operator is not
// commutative (each algorithm below says how), in any order otherwise.
//
// # Algorithms and selection
//
// One file per algorithm, as MPICH's coll directory:
//
//   - allreduce_shm.go: ranks on one host, through shared memory (every rank maps every
//     other's arena scratch, set up at the first call and reused; shm.go). Up to 8 KiB,
//     one step: each rank copies its vector into its scratch and publishes a sequence
//     number; each combines all the vectors, in rank order, into its recv. Up to 48
//     bytes the vector travels in the cache line of the sequence number itself (one
//     line per rank and step: a peer fetches one line, and polls only that). Longer
//     vectors go in chunks of up to 256 KiB through two alternating buffers, two steps a
//     chunk: copy in and publish; rank r reduces block r by loading it from every rank's
//     scratch (in rank order) and publishes; every rank copies the reduced chunk out.
//     Flags, not messages: a waiting rank spins briefly (a bare spin when every rank has
//     a processor; yielding, and the OS thread too, when the host has more ranks than
//     processors), then sleeps on the publisher's doorbell
//     (a shared futex) while checking ctx and the publisher's liveness.
//   - allreduce_hier.go: jobs spanning hosts: the ranks of each host reduce to the host's
//     lowest rank through shared memory, those leaders run a point-to-point Allreduce
//     among themselves, and each broadcasts the result on its host through shared memory.
//   - allreduce_recdbl.go: recursive doubling, log2(p) rounds of the whole vector; the
//     extra ranks of a non power of two fold into their neighbours first and get the
//     result back last. Short vectors.
//   - allreduce_rabenseifner.go: reduce-scatter by recursive halving, then allgather by
//     recursive doubling (same fold). Long vectors on a power of two, and long vectors
//     with a non-commutative operator.
//   - allreduce_ring.go: ring reduce-scatter then ring allgather, any p, commutative
//     operators only. Long vectors when p is not a power of two.
//   - bcast.go (binomial tree), bcast_scatter.go (binomial scatter + ring allgather, from
//     64 KiB with p > 2); reduce.go (binomial tree; a non-commutative operator is reduced
//     at rank 0 and sent to root); allgather_recdbl.go (power-of-two p, under 256 KiB in
//     all) and allgather_ring.go; reducescatter_halving.go (power-of-two p, commutative,
//     up to 64 KiB in all), reducescatter_ring.go (commutative) and
//     reducescatter_pairwise.go (any operator, combined in rank order); alltoall.go
//     (pairwise exchange); barrier.go (the runtime's dissemination barrier).
//
// select.go decides Allreduce's algorithm in one function, selectAllreduce: shm when
// every rank is on this host and reached through shm; hier when the job spans hosts and
// some host holds more than one rank (unless the operator is not commutative and a
// host's ranks are not consecutive); otherwise recursive doubling up to 4 KiB per rank
// (or fewer elements than ranks), then Rabenseifner on a power of two or with a
// non-commutative operator, ring otherwise. Ranks are on one host when the World names
// the same host for them (World.HostOf) and reach each other through shm
// (World.Transport). The environment variable GORMA_ALLREDUCE (EnvAllreduce) overrides
// the choice: auto (default), recdbl, rabenseifner, ring, shm or hier — except that ring,
// which combines in ring order, and a hier that could not keep rank order give way to
// Rabenseifner for a non-commutative operator, and that shm on a job that is not on one
// host makes every Allreduce fail with an error wrapping runtime.ErrConfig. Any other value makes every Allreduce fail
// with an error wrapping runtime.ErrConfig that names the variable and the choices. The
// variable is read at a World's first collective call.
//
// # Messages, scratch and errors
//
// The collectives talk on their own communication context (a Dup of the World, made at
// the World's first collective call and kept for the process's life), so their messages
// never match user receives; each call's messages carry the call's sequence number as
// tag, so a message left over from a failed call never matches a later one. Scratch
// buffers and Requests are kept per World and reused: a small Allreduce allocates nothing
// in steady state, and a large one allocates only when it is the largest so far (the
// scratch stays allocated at that size). The shm and hier algorithms use arena scratch
// instead (about 16 KiB plus two buffers of up to 256 KiB per rank), allocated and mapped
// by every rank at their first call — a collective step with point-to-point messages —
// grown the same way when a longer vector first needs bigger buffers, set up again after
// a failed call, and otherwise reused: they allocate nothing per call. A mismatched
// count is seen by every rank of the shm algorithm (each publishes its byte count).
//
// Every receive checks the length of what arrives. A call whose ranks pass different
// counts fails with ErrMismatch (a message shorter than expected) or runtime.ErrTruncated
// (longer), naming the ranks and counts, at the ranks that see it; the ranks waiting for
// those end when their ctx does. Only Bcast cannot always tell: ranks whose count equals
// root's get root's vector. Errors read "collectives: <name>: ..." and wrap the runtime's
// sentinels (runtime.ErrInvalid for bad arguments, *runtime.ProcError for a failed rank)
// or ctx's error. After a failed call the World's collectives may be used again, but the
// ranks' results are only as good as their agreement on what failed.
//
// # Concurrency contract and buffer ownership
//
// Collective calls on one World must be made by every rank, in the same order, with
// matching arguments (counts, root, operator). They may come from any goroutine, but not
// concurrently on one World: a call that starts while another runs on the same World
// fails with ErrConcurrent. Calls on different Worlds (w.Dup()) are independent and may
// run concurrently. Point-to-point traffic on the World may go on meanwhile.
//
// The buffers are the caller's again when a call returns; during the call send is only
// read and recv is written (in place: recv is both). send and recv must not overlap
// unless send is nil (in place). On error the contents of recv are undefined.
package collectives
