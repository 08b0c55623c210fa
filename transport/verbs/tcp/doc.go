// Package tcp is gorma's cross-host verbs provider: reliable-connected queue pairs over
// TCP, with the target side of RDMA played by goroutines of the target process, so that
// passive-target operations never wait for the target's application code.
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
// A device owns one arena (package arena) from which PD.AllocMR carves memory regions;
// PD.RegMR registers ordinary Go memory in the same key table and keeps the slice
// referenced until Dereg. A device also owns a TCP listener (Options.Addr, default
// 127.0.0.1:0) and one TCP connection per connected QP. Connections are authenticated by
// a mutual HMAC challenge-response keyed by Options.Secret (at least MinSecretLen bytes;
// or, with Options.DeferSecret, set later through the device's SetSecret, SecretSetter);
// a connection that fails it is closed before any frame is read and counted (Rejections).
// Frames after the handshake are not encrypted: the network between hosts must be
// trusted not to tamper with established connections.
//
// Each connection has a reader goroutine that executes the peer's requests against this
// device's memory and completes this side's requests, and a writer goroutine for frames
// the socket could not take at once. A goroutine waiting in CQ.Wait on a CQ fed by one
// connection reads that connection itself. An idlewatch.Watcher, run by another process (golaunch),
// hands reading roles that a rank leaves idle back to its reader goroutines and wakes
// stranded readers; a device joins it through Options.IdleWatch. Beyond the verbs
// interfaces, a CQ offers HandBack and Progress (found by type assertion) for callers that
// block or spin elsewhere. design.md describes the wire protocol, the reading role, the
// idle watch, the wait modes and the failure rules.
//
// # Failure
//
// When a connection fails (the peer's process or host died, or it broke the protocol)
// the QP moves to Err: the oldest outstanding request completes with RetryExcErr, the
// others and all posted receives with WRFlushErr. A QP that enters Err itself keeps its
// connection and refuses the peer's later requests, so the peer's QP fails when, and only
// when, it asks for something. Remote accesses on registered memory are not instrumented
// in race builds, as DMA by hardware is not.
//
// # Concurrency and buffer ownership
//
// Every object is safe for concurrent use. The provider reads SendWR.Local until the
// request completes (a queued frame references it) and writes RecvWR.Local and a read's
// or atomic's Local from the reader goroutine until the completion is queued; it retains
// neither *SendWR nor *RecvWR. Goroutines and how each stops: the accept loop and the
// idle-watch sweeper stop in Device.Close. A handshake goroutine ends with its handshake
// (30 s deadline). A connection's reader stops when the connection fails or is closed
// (QP.Close, Device.Close, the peer), and stops its writer first. Device.Close waits for
// all of them before it releases the arena. Lock order is in LOCKING.md.
package tcp
