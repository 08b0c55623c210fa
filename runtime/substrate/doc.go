// Package substrate is what the layers above the runtime (window, collectives, topo) use of
// a runtime.World beyond the user's API: registered memory that peers reach one-sidedly
// (Region, Remote, Counter), the naming of their calls in hang reports and GORMA_CHECK=1's
// comparison of them (Track, CallSig), how one rank reaches another (Reach, ReadsUser),
// and the World's internal hooks (Sibling, OnFree, MarkInternal, FreedErr).
//
// An MPI program does not need it. Its functions take the *runtime.World they act on.
//
//   - Region: memory of this rank that every peer may access one-sidedly. AllocRegion
//     carves it from the pre-registered arena; RegisterRegion registers user memory.
//     AppendDesc describes it to peers: the key per provider.
//   - Remote: a peer's region as seen from this rank (Attach). On a shm peer an arena
//     region is also mapped: Mapped returns the peer's bytes for direct loads, stores and
//     CPU atomics. Every Remote also takes work requests: Write, Read, FetchAdd, CmpSwap.
//   - Counter: counts one-sided work requests until they complete. Wait drives progress
//     until every counted request completed, and returns the first error among them.
//
// A refused remote access (a key the target revoked) breaks the connection to that peer
// as it does in InfiniBand. A Remote whose peer fails fails its counters with a
// *runtime.ProcError.
package substrate
