// Package shm is gorma's same-host verbs provider: ranks are separate processes on one
// host, and every operation is a copy between shared mappings made by the initiator; the
// target process runs no code.
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
// A device owns one arena (package arena): a memfd segment that peers map once and keep.
// AllocMR carves memory regions from it; RegMR gives ordinary Go memory a key, which
// peers reach with process_vm_readv/writev where the kernel allows it (atomics on such
// memory are refused with ErrUnsupported). Each QP owns an inbound ring in its arena
// through which Sends and immediates travel, against credits for posted receives. The
// device also owns its mappings of peer arenas and one monitor goroutine that watches
// peer processes (through a bounded number of pidfds; the others are polled). The
// package starts one OS thread per process, parked, whose exit the kernel reports in
// every device's liveness word.
//
// RDMA writes, reads and atomics run inside PostSend, in the caller's goroutine. A Send
// completes once its data is in the peer's ring; a Send that cannot go yet waits in the
// send queue and later PostSend, Poll and Wait calls resume it, so requests run in post
// order. CQ.Wait follows Config.Wait and sleeps on a futex doorbell in the arena header;
// a delivering peer makes a system call only when somebody sleeps. Beyond the verbs
// interfaces, QP.NotifyPeer and CQ.SetWaitCheck (found by type assertion) let work that
// bypasses the queues use the same doorbell. design.md describes the ring, credits,
// waiting, the error rules and Close.
//
// # Errors
//
// An error completion moves the QP to Err. As in InfiniBand the peer is not told of a
// local error: its next request fails with RetryExcErr. A receive buffer shorter than the
// message completes with LocLenErr and the sender's next request fails with RemOpErr.
// QP.Close, Device.Close and the death of the peer process fail the peer's waiting
// requests at once, the first with RetryExcErr and the rest with WRFlushErr.
// A request that runs once the peer's death is observable fails with RetryExcErr,
// although the peer's shared memory would still take it: the kernel marks a liveness
// word in the dead process's arena, which requests read with one atomic load.
//
// # Concurrency
//
// All objects are safe for concurrent use. Byte ownership is as the verbs package says:
// Local of a queued request is read (or, for RDMA reads and atomics, written) until its
// completion. A device's monitor goroutine stops in Device.Close. Lock order is in
// LOCKING.md.
package shm
