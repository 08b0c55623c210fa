// Package shm is gorma's same-host verbs provider: ranks are separate processes on one
// host, and every operation is a copy between shared mappings made by the initiator.
//
// Importing the package registers the provider as "shm":
//
//	import _ "github.com/gorma-hpc/gorma/transport/verbs/shm"
//
//	dev, err := verbs.Open("shm", verbs.Config{Name: "rank 0"})
//	pd, _ := dev.AllocPD()
//	cq, _ := dev.CreateCQ(256)
//	qp, _ := pd.CreateQP(verbs.QPAttr{SendCQ: cq, RecvCQ: cq})
//	qp.ToInit()
//	// exchange qp.Endpoint() with the peer (out of band), then
//	err = verbs.Connect(ctx, qp, peerEndpoint)
//
// # What it owns
//
// A device owns one arena (package arena): a memfd segment that peers map once. AllocMR
// carves memory regions from it (the key is both LKey and RKey); RegMR gives ordinary Go
// memory a key (RDMA reads and writes reach it through process_vm_readv/writev; atomics on
// it are refused with ErrUnsupported). Each QP owns an inbound ring in its arena, named in
// its endpoint bytes. The device also owns its mappings of peer arenas (one per peer
// device, made on the first connection and kept) and one monitor goroutine that watches
// peer processes through pidfds.
//
// # Data path
//
// RDMA write, read and atomics run inside PostSend, in the caller's goroutine: pin the
// remote key in the peer's key table, copy (or run a CPU atomic) on the peer's arena
// through our mapping, unpin, push the completion. The target process runs no code. A
// refused key completes with RemAccessErr and leaves target memory untouched. RDMA to
// RegMR memory uses process_vm_readv/writev, which the kernel allows only where the
// initiator may ptrace the owner (same user; with Yama's ptrace_scope of 1 or more, not
// between sibling processes): where it refuses, the request completes with RemAccessErr.
// RegMR backs the 2 MiB stretches around a large buffer with transparent huge pages
// (MADV_COLLAPSE, once per stretch; see huge.go), so that those copies walk and pin one
// page per 2 MiB: it doubles the bandwidth of a megabyte read.
//
// Sends, SendWithImm and the immediate of RDMAWriteWithImm travel through the peer's
// inbound ring (see ring.go for the layout): the sender writes records into it and
// publishes each with a release store (a plain MOV on amd64: the XCHG of an atomic store
// stalls on the line the receiver polls), and the receiver's CQ.Poll (or Wait) drains
// them into posted receives in order. The receiver publishes how far it has drained (the
// ring's head, which the sender reads only when its cached copy says the ring is full)
// every eighth of the ring rather than after every record: a sender never waits on that
// lag (ring.go, headLagDiv), and a small message's path saves a fence.
// Messages larger than a record travel as fragments, so any size streams through the
// ring. Messages go against credits: the receiver publishes how many receives it has
// posted, and a message starts only when one is posted for it. The count is published
// with a release store; the receiver fences and looks whether the sender waits for a
// credit only where the sender may have used every credit it could have seen (see
// creditFenceLocked), so a receiver that keeps receives to spare reposts without a full
// barrier. A Send completes once its
// last fragment is in the peer's ring. A Send that cannot go yet (no receive posted at the
// peer, or no room in its ring) waits in the send queue, counted against MaxSendWR, and
// the sender's later PostSend, Poll and Wait calls resume it; requests posted behind it
// wait behind it, so every request runs in post order. A Send flushed while it waits for a
// receive never arrives.
//
// # Errors
//
// An error completion moves the QP to Err, as the verbs package says. As in InfiniBand the
// peer is not told of a local error (or of ToErr): its next request on the connection
// finds our ring marked and fails with RetryExcErr. A receive buffer shorter than the
// arriving message completes with LocLenErr (holding the prefix that fit) and moves the
// receiving QP to Err; the sender's request has already completed successfully (it
// completes when its data is in the ring), and the sender's next request fails with
// RemOpErr. QP.Close and Device.Close do tell the peer at once, and so does the death of
// the peer process, which the device notices through a pidfd: the peer QP's waiting
// requests complete with RetryExcErr (the first) and WRFlushErr (the rest) and its
// receives with WRFlushErr. A QP with nothing outstanding stays in its state until its next
// request, which then fails with RetryExcErr.
//
// # Completion queues
//
// A CQ holds depth completions in a fixed ring and Poll copies them into the caller's
// slice without allocating. A QP never has more completions pending than its MaxSendWR
// and MaxRecvWR (send completions keep their slots until polled; receive completions used
// up posted receives), so a CQ sized to the sum of its QPs' queues never holds more; if it
// is smaller, the excess is kept in an overflow list (allocated then) instead of being
// lost. Poll drives progress (drains rings, resumes waiting sends, notices peers) unless
// the completions already waiting fill its slice; a receive completion it produces while
// the CQ holds nothing goes straight into its slice (no push and pop), which keeps each
// QP's completions in order since they enter only under the QP's lock.
//
// # Waiting
//
// CQ.Wait follows Config.Wait: WaitHybrid polls for Config.Spin and then sleeps on the
// device's futex doorbell in the arena header; WaitSpin polls only, yielding between polls
// (runtime.Gosched, and sched_yield every few dozen polls so that ranks outnumbering cores
// still progress); WaitBlock sleeps at once. A peer that delivers into one of our rings
// wakes us with FUTEX_WAKE only if somebody sleeps, so the fast path makes no system call.
// A post or a progress pass rings the peer's doorbell once, after its last record, and a
// signaled Send rings it after pushing its completion, whose atomic add stands in for the
// doorbell's fence.
// Sleeps last at most 10 ms, which bounds how late a cancelled context is noticed.
// Wait ends, without draining it, when a ring's head holds a whole message (first and last
// fragment in one record; the sender's credit promised a receive): the Poll that follows
// then takes it straight into the caller's slice instead of through the CQ's own ring.
// Each record ends at most one Wait this way; a later Wait drains as usual.
//
// Work that bypasses the queues can use the same doorbell: a process that writes into a
// peer's memory through a Mapping (the runtime's fast boxes) calls QP.NotifyPeer, which
// rings the peer device's doorbell, and the peer gives its CQ a check for that work with
// CQ.SetWaitCheck, which ends Wait as a completion would. Both are methods of this
// provider beyond the verbs interfaces; a caller finds them with a type assertion.
//
// Device.Close frees no arena memory region one by one (that would wait for peers' pins
// of mapped regions, which a dead peer never drops): the arena closes as a whole. It
// retires the arena rather than unmapping it (arena.Arena.Retire): the memory and the
// memfd are released at once, but the address range stays mapped to inert zeros until
// the device is unreachable, because Poll, and Wait until it goes to sleep, read the
// rings without registering themselves (registration was two atomic adds, most of an
// empty Poll's cost), and one that raced the Close must find zeros there, not a fault.
// Close waits only for the Waits that sleep, which it wakes.
//
// # Concurrency
//
// All objects are safe for concurrent use. Each QP has one mutex and each CQ one (qlock,
// lock.go: a compare-and-swap to lock and a plain release store to unlock, which saves a
// locked instruction on every post and poll; a waiter spins, yields, then sleeps in short
// steps); a QP's lock is held while it pushes to a CQ (LOCKING.md, section shm). Poll takes a QP's lock
// only if that QP has something to do, and no lock and no atomic read-modify-write when
// nothing is. Byte ownership is as the verbs package says: Local
// of a queued request is read (or, for RDMA reads and atomics, written) until its
// completion. A device's monitor goroutine stops in Device.Close.
package shm
