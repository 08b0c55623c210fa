// Package tcp is gorma's cross-host verbs provider: reliable-connected queue pairs over
// TCP, with the target side of RDMA played by a progress goroutine.
//
// Import it (its init registers the provider) and open a device by name, with its Options:
//
//	import "github.com/gorma-hpc/gorma/transport/verbs/tcp"
//
//	dev, err := verbs.Open("tcp", verbs.Config{Provider: tcp.Options{Secret: jobSecret, Addr: "10.0.0.5:0"}})
//	pd, _ := dev.AllocPD()
//	cq, _ := dev.CreateCQ(256)
//	qp, _ := pd.CreateQP(verbs.QPAttr{SendCQ: cq, RecvCQ: cq})
//	qp.ToInit()
//	// exchange qp.Endpoint() with the peer out of band, then on both sides:
//	err = verbs.Connect(ctx, qp, peerEndpoint)
//
// # What it owns
//
// A device owns one arena (package arena) from which PD.AllocMR carves memory regions; the
// region's key is its LKey and RKey. PD.RegMR registers ordinary Go memory in the same key
// table (arena.RegisterUser) and keeps the slice referenced until Dereg. Keys carry
// generations: after Dereg every access with the old key fails with RemAccessErr, even
// once the bytes belong to a new region. A device also owns a TCP listener on Options.Addr
// (default 127.0.0.1:0; a listener on 0.0.0.0 advertises the host's first global unicast
// address) and one TCP connection per connected QP.
//
// # Connections and authentication
//
// Endpoint bytes carry the protocol version, the listen address, a random 64-bit device
// id and the QPN. Both sides call ToRTR with the other's endpoint, then ToRTS. The side
// with the smaller (device id, qpn) dials during ToRTR; the other accepts, matching the
// inbound connection to its QP by the QPN in the handshake, and its ToRTS waits (honouring
// ctx) until that connection is up. The handshake (handshake.go) is a mutual
// HMAC-SHA256 challenge-response over both nonces, direction labels, device ids and QPNs,
// keyed by Options.Secret (at least MinSecretLen bytes), under a 5 s deadline. A connection
// that fails it is closed before a single frame is read or any memory is touched, and
// counted (see Rejections). The handshake authenticates the peers; it does not encrypt
// or integrity-protect the frames that follow, so the network between hosts must be
// trusted not to tamper with established connections.
//
// # Wire
//
// After the handshake each direction is a stream of frames (wire.go): a fixed 64-byte
// little-endian header (version, opcode, flags, status, payload length, sequence number,
// rkey, offset, length, immediate, compare/add, swap or piggybacked ack, credits) and a
// payload. Requests are numbered per direction and answered in order: a cumulative ack
// for successful writes and Sends, a read response with the data, an atomic response with
// the old value, or an error status in the answer of the request's kind. The cumulative
// ack rides on the next frame this side sends (flagAck; any frame but a compare-and-swap
// or an error ack), so a Send/Recv ping-pong costs one frame per direction; it goes as a
// frame of its own only when whoever reads the connection is about to block. In a deep
// stream of RDMA writes, whose receiver blocks after each one, that would be an ack frame
// per write; so the writer marks a write without immediate that more than 8 request
// frames follow in its queue (flagLater), and the receiver holds the ack of marked writes
// until 7 more request frames have arrived (or a role holder leaves its role): one ack
// per 7 writes, a completion late by at most frames already on their way (lead.go,
// ackBatch). The mark came with protocol version 4. A disconnect frame tells the peer
// that this side's QP is in Err.
//
// The frames of one direction form two streams, each in order: this side's requests
// (with credit frames) and its answers to the peer's requests (conn.go). Once a request
// has had to queue behind an answer on a connection, the connection carries mixed
// traffic: from then on a read response longer than 256 KiB goes out as slices, frames
// with flagMore on all but the last, and a request waiting to be written goes between two
// slices rather than after the whole response; the kernel keeps about 32 KiB of unsent
// data (TCP_NOTSENT_LOWAT), the rest waiting in the provider's queue, where requests can
// pass it. The ack a request may carry answers too and keeps its place among the
// answers: a request that passes answers leaves it behind them as an opAck frame, and an
// answer queued while a request still holds one moves it ahead of itself. Without this, two ranks that exchange large
// messages by rendezvous (each reads from the other) serialize on their link: one's read
// request waits behind the other's read response, and one direction idles. A connection
// that only streams one way never switches, as slices and the lowat's wake-ups cost a
// loopback stream a tenth to a third of its rate.
//
// Every connection gets the device's TCP congestion control (TCP_CONGESTION;
// Options.Congestion, CUBIC by default, checked at Open). A collective runs several flows
// per link that start and end together; under BBR, the kernel default of some systems,
// the flows left at a round's end took long to take up the bandwidth the others freed
// (a link sampled every 10 ms during an Allreduce across 4 netns hosts on 1 Gbit/s
// links ran at 60-80 of its 120 MB/s for 100 ms and more at a time), and the Allreduce
// was 3-5% slower.
//
// Sends and writes with immediate consume a receive at the target; the receiver grants
// one credit per posted receive (on any frame it sends, or in a credit frame when the
// peer has none left), and the sender never sends without one, so
// an arriving Send always finds its receive. Sends beyond the credits wait in the send
// queue, counted against MaxSendWR. Frames are bounded (MaxMessageSize), decoding never
// panics and the reader allocates nothing per frame.
//
// # Progress and data path
//
// Each connection has two goroutines. The reader (progress.go) executes the peer's
// requests against this device's memory, each access validated and pinned with the key
// table (Table.Pin/Unpin; a failed Pin answers RemAccessErr and leaves memory untouched,
// a misaligned atomic RemInvReqErr), so passive-target operations never wait for the
// application. Atomics are CPU atomics on the target word, atomic with respect to local
// and shm-provider atomics on the same memory; after each one the reader calls
// Config.OnRemoteAtomic, if set, so that the process can wake whoever sleeps until that
// word changes (a window's PSCW counters: the origin's CPU cannot reach a futex here,
// as a shm peer's does). The same reader completes this side's
// requests when their answers arrive. While a goroutine waits in CQ.Wait on the CQ that
// the connection alone feeds, the reader lends it the reading role (lead.go, leader/
// follower): the waiter reads and handles frames itself, so the completion it waits for
// is produced on its own goroutine with no hand-off, as in a raw socket ping-pong. The
// role stays with the application between waits and returns to the reader goroutine when
// the process idles or, on a device with an idle-role watch (Options.IdleWatch, watch.go:
// golaunch gives every rank one), when the launcher's watcher finds it idle on two of its
// 1 ms ticks, so that leaving Wait costs no system call; a process about to block
// elsewhere (a futex) hands it back at once with the CQ's HandBack (runtime's
// World.ServePeers), and a goroutine spinning on a word that a peer's request changes
// serves the idle role itself, without waiting, with the CQ's Progress (runtime's
// World.PollPeers). The watcher also rings a rank
// whose reader has left unread data on its socket through a tick: Go polls the network
// only from an otherwise idle thread or every 10 ms, so a reader can be stranded while
// the application computes (watch.go). It ticks every 1 ms only for a rank that has led
// a wait or holds memory peers may write or update (windows), else every 50 ms: its
// wake-ups cost the cores that ranks need. Payloads move with one copy each way: the sender's writev goes
// straight from the caller's buffer (or pinned target memory, for read responses), and
// the reader reads large payloads straight into target memory, the receive buffer or the
// read's Local. PostSend writes its frame itself with one non-blocking writev; only a
// frame the socket cannot take at once goes to the writer goroutine (conn.go), so
// PostSend never blocks on the network and neither does the reader, which keeps two peers
// that both write heavily from deadlocking. A target pins an MR only for the duration of
// one access; for an RDMA write that is while its payload streams in, so Dereg of the
// target MR waits for that payload (the arena quarantines the bytes if a pin outlives its
// drain timeout).
//
// # Waiting
//
// CQ.Wait honours Config.Wait. WaitSpin polls, yielding the processor now and then.
// WaitBlock and WaitHybrid park at once. A waiter on a CQ fed by one connection whose
// reading role is idle takes the role and reads the socket itself, blocked in ppoll(2) on
// its own thread, which the kernel wakes directly when the peer's bytes land, as a raw
// blocking ping-pong is (sock.go: the socket is kept out of Go's network poller, whose
// thread hops cost a wake-up of a halted vCPU each on the machines this was measured on;
// the reader and writer goroutines still park in the poller, through two epoll instances
// of the socket's own); ctx, Close and completions pushed by other goroutines wake it with
// a past read deadline (an eventfd write), honoured between frames. Otherwise
// the first waiter parks in the network poller on an eventfd that the reader goroutine
// writes when it queues a completion, so the reader's own thread hands the waiter over
// when it next parks, without waking another thread; the reader, about to block again,
// offers that waiter its role. Further concurrent waiters park on a channel. WaitHybrid
// does not spin on the completion ring in this provider: a completion always comes from
// this process reading its sockets, so a spinning waiter only takes the core that the
// reading goroutine (and, on one host, the peer's process) needs. On a 2-core machine its
// 50 µs spin doubled the latency of an 8-byte RDMA read between two processes. The
// readers spin instead, in WaitHybrid with a Config.Spin budget: a leader tries its
// socket without blocking for the budget before it blocks in ppoll (unless its
// connection has frames queued to send: each read(2) takes the socket's lock, which the
// writer's writev(2) holds while it copies), and the reader
// goroutine of a connection alone on its CQ (the one a waiter could lead), about to park
// in the network poller, tries its socket for the budget while no other goroutine of the
// process runs or waits to run (runtime/metrics), giving its
// core away (sched_yield) after each empty attempt (sock.go, spinIdle). A passive
// target whose application is blocked so answers a request without a wake-up through the
// poller: an 8-byte RDMA read took 9.6-10.4 us against 22.5-34.2 us parking at once, and
// a raw Go socket round trip 19-24 us.
//
// # Failure
//
// When the connection fails (the peer's process or host died: EOF, reset, keepalive or
// TCP_USER_TIMEOUT expiry, or the peer broke the protocol) the QP moves to Err: the oldest
// outstanding request (or, if none, the next one posted) completes with RetryExcErr, the
// others and all posted receives with WRFlushErr, and waiters in ToRTS wake. A QP that
// enters Err itself (ToErr, an error completion such as RemAccessErr, LocLenErr) flushes
// at once but keeps its connection in Err mode, like an InfiniBand QP in Error: it refuses
// every later request of the peer with RetryExcErr and tells the peer to stop waiting for
// credits, so the peer's QP fails when, and only when, it asks for something. A target
// that answers one of the peer's requests with an error (RemAccessErr, RemInvReqErr)
// refuses every later request on that connection as well, even those already on the
// wire: the peer's QP goes to Err when the error arrives and completes them with
// WRFlushErr, so none of them may run. ToErr,
// QP.Close and Device.Close flush with WRFlushErr and return after the QP's goroutines
// have stopped (Close) or its buffers are released (ToErr).
//
// # Race detector
//
// The provider plays the NIC: the peer's RDMA writes, reads and atomics on registered
// memory, and payloads landing in receive buffers and read sinks, go through dma.go. In
// race builds these accesses are not instrumented (raw read(2)/writev(2), a word copy
// loop, assembly atomics on amd64 and arm64), as DMA by hardware is not: a passive target
// learns of remote writes through messages the detector cannot see (sockets, pipes), so
// instrumented accesses would be reported as races although the program is correct.
//
// # Concurrency and buffer ownership
//
// Every object is safe for concurrent use. Goroutines and how each stops: the device's
// accept loop stops when Device.Close closes the listener; its idle-watch sweeper (only
// with Options.IdleWatch) stops when Device.Close closes the watch's bell, after the QPs; a handshake goroutine per
// inbound connection ends with its handshake (5 s deadline; Device.Close closes its
// connection); a connection's reader stops when the connection fails or is closed
// (QP.Close, Device.Close, a flush that must abort a transfer, the peer), and before it
// exits it stops the connection's writer goroutine and waits for it. A reader that lent
// its role parks on its role eventfd and takes the role back when the leader leaves Wait
// (or stops at a fault, which the reader then exits with), or when the watcher's sweep or
// a QP close writes the eventfd of a role left idle under a watch; a closed connection
// fails a leader's read, so the reader always learns of it. Acks and the reading role add no
// goroutine. Each CQ holds one
// eventfd, closed by CQ.Close or Device.Close. Device.Close waits for all of them before it releases the
// arena. The provider reads SendWR.Local until the request completes (a queued frame
// references it, it is not copied) and writes RecvWR.Local and a read's or atomic's Local
// from the reader goroutine until the completion is queued; it retains neither *SendWR
// nor *RecvWR. Lock order is in LOCKING.md.
package tcp
