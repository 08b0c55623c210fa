// Package sockets provides net.Conn and net.Listener over shared memory for any two
// processes of one host (network "shm"), and TCP that upgrades to it by itself (network
// "tcp"), so that a program written against net (net/http, gRPC, net/rpc) changes only
// its listener and dialer:
//
//	l, err := sockets.Listen("tcp", ":8080")  // TCP clients as usual, shm for sockets' dialers here
//	go http.Serve(l, handler)
//	tr := &http.Transport{DialContext: (&sockets.Dialer{}).DialContext}
//
//	l, err := sockets.Listen("shm", "myservice")       // or by name, for any two processes
//	c, err := sockets.Dial("shm", "myservice")
//
// "tcp" (tcp4, tcp6): the listener binds its TCP address and, beside it, an shm listener
// on the abstract socket named after that address. A Dialer given an address of this
// host tries the shm listener first and falls back to TCP when there is none, when it
// refuses, or for a remote address (Dialer.NoUpgrade: always TCP). Accept returns a
// *net.TCPConn for a TCP client and a *Conn for an upgraded one (tcp.go).
//
// A name is 1 to 100 bytes of [A-Za-z0-9._:/@-] and is bound as the abstract Unix
// socket "\x00gorma/shm/"+name, so it lives in the caller's network namespace and
// disappears with the listener: there is no file to clean up. Only processes of the
// listener's uid may connect, plus the users in ListenConfig.AllowUIDs (checked with
// SO_PEERCRED). A dialer connects only to a listener run by its own uid or root (a
// "tcp" dialer then falls back to TCP), so a name that another user binds first leaks
// nothing. Listen("shm") then fails with a *NameHeldError naming the holder's uid;
// Listen("tcp") serves plain TCP and logs why to ListenConfig.ErrorLog.
//
// # What it owns
//
// A listener owns its rendezvous socket and one goroutine that accepts from it; each
// incoming connection is handshaken in its own goroutine, bounded in time, so a stalled
// or hostile client holds up nobody, and Accept returns only good connections. Every
// socket is accepted at once: one silent for a second is shed, and so, when 64 are
// pending, is the one that has waited longest for the client's next handshake message
// (its hello, or its ready after the reply). An "shm" Dialer then dials again within its
// deadline (10 s when its context has none). So a flood of silent clients, or of clients
// that send a hello and stall, delays dialers; it does not fail them. Each Conn
// owns one memfd mapping (a header page and a ring per direction, ListenConfig.RingSize
// bytes each, 1 MiB by default), the rendezvous socket, which stays open as the liveness
// channel, and one goroutine blocked on it (in the netpoller, not on an OS thread). No
// file is ever created in /dev/shm: nothing is left behind when a process crashes.
//
// Data moves with copies into and out of the rings and no system call while both sides are
// busy. A side with nothing to do spins briefly, sleeps on a shared futex that the other side
// wakes, and past a millisecond parks its goroutine (no OS thread held). Read returns what is
// available (at least one byte); Write returns once every byte is in the ring, blocking while
// the ring is full. ReadFrom and WriteTo (used by io.Copy) and WriteBuffers copy straight
// between the ring and the other end.
//
// # Semantics
//
// A Conn behaves as a TCP connection. Deadlines return os.ErrDeadlineExceeded (Timeout()
// true), and a deadline changed while a Read or Write is blocked takes effect at once.
// After CloseWrite the peer reads io.EOF after the bytes written before it; CloseRead is
// supported too. After Close, blocked Reads and Writes on this side return
// net.ErrClosed, and the peer reads io.EOF then gets a broken pipe on Write. If the peer
// process dies, a blocked Read returns an error matching syscall.ECONNRESET ("peer
// process gone") and a Write one matching it too. Every error is a *net.OpError with Net
// "shm"; the inner error says what went wrong and how to fix it.
//
// # Concurrency
//
// One goroutine may read (Read, WriteTo) while another writes (Write, ReadFrom,
// WriteBuffers); further concurrent readers or writers are serialized. Close, CloseRead,
// CloseWrite, the deadline setters and the address getters may be called from any
// goroutine at any time. A listener's methods are safe for concurrent use. A Conn that
// is never closed keeps its mapping and goroutine until the peer closes its end.
//
// The segment layout, the handshake bytes and the invariants are in design.md.
package sockets
