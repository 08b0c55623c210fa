// Package verbs is gorma's transport API, modelled on InfiniBand verbs (libibverbs).
//
// A provider (shm for processes on one host, tcp across hosts) registers itself from its
// init function with [Register]; [Open] opens a [Device] of a named provider. The objects
// and their names follow libibverbs so that a reader who knows verbs knows this package:
//
//   - [Device]: an opened provider instance. It owns one pre-registered memory arena.
//   - [PD]: protection domain; memory regions and queue pairs belong to one.
//   - [MR]: memory region with a local key ([MR.LKey]) and a remote key ([MR.RKey]) and
//     access rights ([LocalWrite], [RemoteRead], [RemoteWrite], [RemoteAtomic]). [PD.AllocMR]
//     carves an MR from the pre-registered arena (the fast path, no system call on reuse);
//     [PD.RegMR] registers an ordinary Go slice.
//   - [CQ]: completion queue. [CQ.Poll] fills the caller's slice of [WC] without
//     allocating; [CQ.Wait] blocks until a completion is available. One CQ may serve many QPs.
//   - [QP]: reliable-connected queue pair with the states Reset → Init → RTR → RTS → Err.
//     Two QPs connect by exchanging opaque endpoint bytes ([QP.Endpoint], [Connect]).
//
// Work requests ([SendWR], [RecvWR]) are Send, RDMAWrite, RDMAWriteWithImm, RDMARead,
// AtomicFetchAdd and AtomicCmpSwap. Remote memory is named by (rkey, offset within the MR).
// Keys are 64 bits wide (libibverbs uses 32) because they carry a generation that never
// wraps in practice. Once an MR is deregistered, every access with its old key fails with
// [RemAccessErr], even if the same bytes now belong to a new MR.
//
// # Capabilities
//
// A provider declares what it can do as [Caps], and the layers above choose by them, never
// by the provider's name. Besides the operations it offers (CapSend, CapRDMAWrite, ...):
//
//   - CapSameHost, CapCrossHost: where its peers may run. A provider with CapSameHost
//     alone connects only processes of one host.
//   - CapMap: its QPs implement [Mapper], so a peer's arena regions are plain memory here.
//   - CapZeroCopy: an RDMA read or write is one copy by the initiator; the target's
//     processor does nothing.
//   - CapCMA: its peers share this host, and it reaches RegMR memory with cross-memory
//     calls (process_vm_readv, process_vm_writev). Only a peer the kernel lets read this
//     process's memory reaches such a region; a layer above may read a peer's memory the
//     same way.
//   - CapLocalRTS: [QP.ToRTS] completes at once. Without it ToRTS waits for the peer's QP
//     to connect, which the peer does once it has this QP's endpoint.
//   - CapReaders: completions come from goroutines the provider runs (a reader per
//     connection). A CQ.Wait that spins ([WaitHybrid]) leaves the processor to them.
//
// verbstest checks each provider against the caps it declares.
//
// # Back-pressure and credits
//
// A QP holds at most QPAttr.MaxSendWR outstanding send work requests and QPAttr.MaxRecvWR
// posted receives. Past that, PostSend and PostRecv return [ErrQueueFull] at once; they never
// block. A send work request stays outstanding until its completion (or the completion of a
// later signaled request on the same QP) has been polled, exactly as in libibverbs: a caller
// that posts only unsignaled requests must signal one periodically. A Send for which the
// receiver has no room yet waits inside the provider (it counts against MaxSendWR), so no
// layer above needs flow control of its own.
//
// # Errors
//
// Errors of calls are *[Error] values wrapping one of the sentinels ([ErrQueueFull],
// [ErrQPState], ...), to be tested with errors.Is. Errors of work that was accepted arrive
// in [WC.Status]; after an error completion the QP moves to Err and all of its outstanding
// and later work completes with [WRFlushErr].
//
// # Concurrency
//
// Devices, PDs, MRs, CQs and QPs are safe for concurrent use by several goroutines.
// Ownership of bytes: a provider reads SendWR.Local during PostSend or, for work it queues,
// until the completion of that request; it writes RecvWR.Local and the Local slice of a
// RDMARead or atomic until their completion. The caller must not touch these bytes in
// between. Providers never retain the *SendWR or *RecvWR pointer itself.
package verbs
