// Package accept owns the accept loop of gorma's listeners: a loop that a full descriptor
// table or any other failing Accept cannot end, and that bounds the connections still in
// their handshake, so that strangers cannot wedge a listener.
//
// [Serve] accepts until its listener is closed (or its context ends, when it closes the
// listener itself). An Accept error other than [net.ErrClosed] (EMFILE, ENFILE, ENOBUFS,
// ENOMEM, ...) is reported to [Config.Retry] and retried after a back-off that starts at
// [MinBackoff] and doubles up to [MaxBackoff]; a successful Accept resets it. Each
// accepted connection goes to the [Handler] with a release function. A connection counts
// as pending from its Accept until release is called, and one accepted while
// [Config.MaxPending] are pending is handed to [Config.Shed] (which may tell the peer to
// come back later) and closed at once.
//
//	go accept.Serve(ctx, ln, accept.Config{MaxPending: 64}, func(c net.Conn, release func()) {
//		go func() {
//			defer c.Close()
//			c.SetDeadline(time.Now().Add(5 * time.Second))
//			ok := handshake(c)
//			release() // authenticated or refused: no longer pending
//			if ok {
//				c.SetDeadline(time.Time{})
//				serve(c)
//			}
//		}()
//	})
//
// Concurrency: Serve runs on the caller's goroutine and calls the Handler, Retry and Shed
// there, one at a time; they must not block (a Handler starts the connection's own
// goroutine). release may be called from any goroutine, any number of times. Serve starts
// no goroutine of its own.
package accept
