// Package collectives holds gorma's collective operations — Allreduce, Reduce, Bcast,
// Allgather, Allgatherv, ReduceScatter, Alltoall, Alltoallv, Gather, Scatter, Scan,
// Exscan, Barrier — and the reduction operators they (and window accumulates) apply. They are built on the
// runtime's point-to-point messages.
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
// GetAccumulate). NewOp makes a user-defined operator with a commutativity flag. Sum of
// float64 and float32 runs on the vector unit where it can (AVX2 on amd64, op_amd64.s:
// four or eight adds to an instruction, bit for bit the scalar sums); the other operators
// and types are Go loops.
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
//     chunk: each rank copies in the blocks the others reduce and publishes; rank r
//     reduces block r, its own from its send buffer and the others' from their scratch
//     (in rank order), into its recv, copies it into its scratch and publishes; every
//     rank copies the other blocks out. No rank stores into another's scratch, and the
//     copies into scratch use non-temporal stores on amd64 (no store waits for a cache
//     line a peer still holds: when the cores share no cache, that wait was most of a
//     long Allreduce). Flags, not messages: a waiting rank spins briefly (a bare spin
//     when every rank has a processor, which does not yield to the Go scheduler: a yield
//     wakes an idle thread that takes a processor from a rank), then sleeps on the
//     publisher's doorbell (a shared futex) while checking ctx and the publisher's
//     liveness, and yields after each long sleep. When the host has more
//     ranks than processors (World.LocalSize above World.HostCPUs, the processors the
//     host gives the job, which golaunch passes), a waiting rank instead gives its processor away (sched_yield) at every
//     poll, for up to a millisecond before it sleeps, so that the ranks sharing a core
//     take turns at once, as Open MPI does when it knows it oversubscribes.
//   - allreduce_hier.go: jobs spanning hosts: the ranks of each host reduce to the host's
//     lowest rank through shared memory, those leaders run a point-to-point Allreduce
//     among themselves, and each broadcasts the result on its host through shared memory.
//   - allreduce_recdbl.go: recursive doubling, log2(p) rounds of the whole vector; the
//     extra ranks of a non power of two fold into their neighbours first and get the
//     result back last. Short vectors.
//   - allreduce_rabenseifner.go: reduce-scatter by recursive halving, then allgather by
//     recursive doubling (same fold). Long vectors on a power of two, and long vectors
//     with a non-commutative operator. On a power of two its first round reads from send
//     and combines in one pass, so it does not copy send into recv first either.
//   - allreduce_ring.go: ring reduce-scatter then ring allgather, any p, commutative
//     operators only. Long vectors when p is not a power of two.
//   - allreduce_direct.go: reduce-scatter and allgather in one round each, every rank
//     sending to and receiving from every other at once (p-1 messages each way per
//     round), commutative operators only. The same bytes as ring and Rabenseifner, but
//     2 message latencies on the critical path instead of 2(p-1) or 2 log2(p): long
//     vectors on a few ranks each on a host of its own, where every large message is a
//     tcp rendezvous whose offer and read request each wait for a process to be
//     scheduled. Once every contribution is in, it combines send's block with them a
//     cache-sized chunk at a time, so the vector is read once per input and written
//     once; like Rabenseifner on a power of two, and unlike recursive doubling and ring,
//     it does not copy send into recv first. Blocks of 2 MiB or more are pipelined: each
//     is sent in two segments, every receive of both rounds is posted at the start, and a
//     rank combines a segment and sends it on as soon as its contributions are in, so
//     that a host's link does not idle while the slowest flow of a round finishes.
//     When every member reaches every other over tcp and a block is 64 KiB or more in
//     segments of at most 1 MiB, it pushes instead (allreduce_direct_push.go): each
//     segment goes as an RDMA write straight into the receiver's scratch (2(p-1) slots
//     of a block, registered once and kept with the group), followed on the same
//     connection by an 8-byte note with its count, so no segment waits for an offer and
//     a read request to cross loaded links. A failed call leaves the scratch to be set
//     up again at the next one, and keeps it until then, since peers may still write.
//   - allreduce_lanes.go: jobs spanning a few hosts with as many ranks on each: the ranks
//     of a host reduce-scatter the vector among themselves (one round of direct's, over
//     point-to-point messages, through shm), the i-th ranks of every host run direct
//     across the hosts on block i, and one round of direct's allgather on each host puts
//     the blocks together. Every rank takes part in the step across hosts, which costs 2
//     message latencies; commutative operators only.
//   - bcast.go (binomial tree), bcast_scatter.go (binomial scatter + ring allgather, from
//     64 KiB with p > 2); reduce.go (binomial tree; a non-commutative operator is reduced
//     at rank 0 and sent to root); allgather_recdbl.go (power-of-two p, under 256 KiB in
//     all) and allgather_ring.go; reducescatter_halving.go (power-of-two p, commutative,
//     up to 64 KiB in all), reducescatter_ring.go (commutative) and
//     reducescatter_pairwise.go (any operator, combined in rank order); alltoall.go
//     (pairwise exchange); barrier.go (one step of the shm algorithm's flags when every
//     rank is on this host, the runtime's dissemination barrier otherwise).
//   - gather.go and scatter.go: binomial trees (binomial.go; MPICH's gather and scatter
//     intra_binomial), log2(p) rounds, at any size: root receives straight into recv and
//     sends straight from send, but for the one subtree whose ranks wrap past p-1 when
//     root is not 0 (through scratch); an inner rank forwards its subtree's blocks
//     through scratch. Their messages' tag mixes the root into the call's number
//     (rootTag), so that ranks passing different roots never take each other's blocks
//     (Bcast and Reduce mix it in as well);
//     a message a failed rooted call left could then match a call about 2^31/(3p) calls
//     later rather than 2^31.
//   - scan.go: Scan and Exscan by recursive doubling (MPICH's
//     scan_intra_recursive_doubling), log2(p) rounds of the whole vector instead of a
//     chain's p-1, in rank order for any operator (a partial from a lower rank is put in
//     front of this rank's). Unlike the other collectives, Gather, Scatter, Scan and
//     Exscan still exchange their (empty) messages when the count is 0, so that a rank
//     passing 0 while others pass more is told.
//   - allgatherv.go and alltoallv.go: the variable-count versions, a count per rank
//     (Allgatherv) or per pair of ranks (Alltoallv), blocks in rank order at the prefix
//     sums of the counts. Allgatherv is the ring (MPICH's allgatherv_intra_ring), p-1
//     steps; Alltoallv posts every receive, then every send, and waits for them all
//     (MPICH's alltoallv_intra_scattered). Both send their zero-length blocks as empty
//     messages, so that counts that differ across ranks are told as well.
//
// select.go decides Allreduce's algorithm in one function, selectAllreduce: shm when
// every rank is on this host and reached through shm; hier when the job spans hosts and
// some host holds more than one rank (unless the operator is not commutative and a
// host's ranks are not consecutive, or the vector has 1 MiB or more, p is a power of two
// and each host's ranks are consecutive: then lanes when the operator is commutative,
// every host has as many ranks and there are at most 4 hosts, else Rabenseifner, whose
// first rounds pair ranks of one host); otherwise recursive doubling up to 4 KiB per rank
// (or fewer elements than ranks), then direct when every rank (at most 4) has a host of
// its own and the operator is commutative (so the leaders' step of hier and the step
// across hosts of lanes, too), then Rabenseifner on a power of two or with a
// non-commutative operator, ring otherwise. Ranks are on one host when the World names
// the same host for them (World.HostOf) and reach each other through shm
// (World.Transport). The environment variable GORMA_ALLREDUCE (EnvAllreduce) overrides
// the choice: auto (default), recdbl, rabenseifner, ring, shm, hier, direct or lanes —
// except that ring, direct and lanes, which combine in ring or arrival order, and a hier
// that could not keep rank order give way to Rabenseifner for a non-commutative
// operator, and that shm on a job that is not on one host, or lanes on one whose hosts
// have different numbers of ranks (or one each), makes every Allreduce fail with an
// error wrapping runtime.ErrConfig. Any other value makes every Allreduce fail with an
// error wrapping runtime.ErrConfig that names the variable and the choices. The
// variable is read at a World's first collective call.
//
// # Messages, scratch and errors
//
// The collectives talk on their own communication context (the World's Sibling, taken at
// the World's first collective call and kept while the World lives), so their messages
// never match user receives; each call's messages carry the call's sequence number as
// tag, so a message left over from a failed call never matches a later one. Scratch
// buffers and Requests are kept per World and reused: a small Allreduce allocates nothing
// in steady state, and a large one allocates only when it is the largest so far (the
// scratch stays allocated at that size). The shm and hier algorithms use arena scratch
// instead (about 16 KiB plus two buffers of up to 256 KiB per rank), allocated and mapped
// by every rank at their first call — a collective step with point-to-point messages —
// grown the same way when a longer vector first needs bigger buffers, set up again after
// a failed call, and otherwise reused: they allocate nothing per call. A mismatched
// count is seen by every rank of the shm algorithm (each publishes its byte count and
// the call's number, so that a rank whose count of 0 let it go on to its next call is not
// taken for one of this call, and ranks whose scratch was sized for different counts are
// told so).
//
// A World's state goes with the World: once the program has dropped it (a Dup'd World it
// is done with, the World of a finished job) and the garbage collector finds it
// unreachable, a cleanup forgets its Sibling, Requests and scratch (state_cleanup.go). Its
// mappings of the peers' arena scratch are closed at once; its own arena scratch, which a
// peer may still be reading at the end of the last call, is freed when every peer has
// dropped its World too and said so (a peer that failed a call, died or keeps its World
// keeps it allocated; a finalized job's arena goes as a whole). A call keeps its World
// reachable until it returns.
//
// Every receive checks the length of what arrives. A call whose ranks pass different
// counts fails with ErrMismatch (a message shorter than expected) or runtime.ErrTruncated
// (longer), naming the ranks and counts, at the ranks that see it; the ranks waiting for
// those end when their ctx does. Only Bcast cannot always tell: ranks whose count equals
// root's get root's vector. Errors read "collectives: <name>: ..." and wrap the runtime's
// sentinels (runtime.ErrInvalid for bad arguments, *runtime.ProcError for a failed rank)
// or ctx's error; a call on a finalized World fails at once with runtime.ErrFinalized
// (its shared-memory scratch is not touched). Once any rank has failed, a call fails at every rank that waits for a
// message, naming the failed rank, whoever it waits for (the receives of the World's
// Sibling fail on any failure, as Barrier's). After a failed call the World's collectives may be used again, but the
// ranks' results are only as good as their agreement on what failed.
//
// # Scratch policy: arena or fresh
//
// The environment variable GORMA_SCRATCH (EnvScratch), read at the process's first
// collective call that needs scratch, or SetScratch, chooses how Allreduce gets its
// scratch: arena (ScratchArena, the default: as above, acquired once and reused) or fresh
// (ScratchFresh), which pays per call what Open MPI and MPICH pay — their temporary
// vectors come from malloc, which above glibc's mmap threshold (dynamic, at most 32 MiB)
// maps fresh pages and unmaps them at free, and a registration dies with its mapping. It
// exists to measure what pre-registration buys (apps/allreducebench --scratch). Under
// fresh, every Allreduce call that needs data scratch acquires it and releases it before
// it returns:
//
//   - shm and hier, vectors above 8 KiB (scratch_shm.go): each rank carves a new region
//     for its two big buffers from its arena (AllocHostRegion: a new key, registered
//     with the shared-memory device), writes a byte of every page (each a page fault and a zeroed page,
//     since the last release gave the pages back), and publishes the region's description
//     with one step of the flags; every rank attaches (validates and pins the key, maps)
//     each peer's region and reads a byte of every page (a fault per page in its own
//     page table). At the end each rank unpins the peers' regions, all take one step,
//     and each gives its region's pages back to the kernel (madvise MADV_REMOVE: a hole
//     punched in the shared memory, dropped from every process's mapping) and frees the
//     region (the key is revoked). The flag lines and small slots stay set up, as the
//     control segments of the MPIs' shared-memory collectives do; vectors of up to 8 KiB
//     therefore cost the same under both policies (so do Barrier and the other
//     collectives, which keep their reused scratch). The big buffers keep their size (two
//     of up to 256 KiB per rank): the policy changes how scratch is acquired, not how
//     much the algorithm uses.
//   - ring, direct and Rabenseifner, the leaders' step of hier and the steps of lanes
//     (scratch_fresh.go; direct keeps its rendezvous form, as its push form needs
//     scratch that peers have attached): the temporary vector (a block for ring, p-1 blocks for direct,
//     the whole vector for Rabenseifner) is a new anonymous mmap, written a byte per
//     page (the faults a registration's pinning takes), registered with every device
//     (World.RegisterRegion), and at the end deregistered and unmapped. A call that fails leaks it rather than unmapping memory
//     a withdrawn receive might still write.
//   - Recursive doubling (vectors up to 4 KiB, which malloc serves from its heap) keeps
//     its reused scratch.
//
// A bad GORMA_SCRATCH makes the Allreduce calls that acquire scratch fail with an error
// wrapping runtime.ErrConfig. Every rank must use the same policy: a rank of the shm
// algorithm whose policy differs from its peers' makes the call fail with ErrMismatch.
//
// # Concurrency contract and buffer ownership
//
// Collective calls on one World must be made by every rank, in the same order, with
// matching arguments (counts, root, operator). They may come from any goroutine, but not
// concurrently on one World: a call that starts while another runs on the same World
// fails with ErrConcurrent. Calls on different Worlds (w.Dup()) are independent and may
// run concurrently, first calls included: the collectives' messages travel on the World's
// Sibling, whose context the World determines, not the order of calls. Point-to-point
// traffic on the World may go on meanwhile.
//
// The buffers are the caller's again when a call returns; during the call send is only
// read and recv is written (in place: recv is both). send and recv must not overlap
// unless send is nil (in place): a call whose send and recv share memory, even the same
// slice, fails with an error wrapping runtime.ErrInvalid at the ranks that pass them
// (the others end when their ctx does). On error the contents of recv are undefined.
package collectives
