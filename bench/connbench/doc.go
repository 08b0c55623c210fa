// Package connbench is the net.Conn benchmark of apps/sockbench and
// bench/sockpeers: a round trip at several sizes (pingpong), one-way throughput
// (stream), connections per second (connrate) and net/http requests per second
// (http), between two processes of the same program over a selectable Transport.
//
// A program registers its transports (Register) and any further tests (RegisterTest,
// such as bench/sockpeers' grpc) from init, parses its flags with ParseFlags and calls
// Run. The client re-executes the program as the server (--role server, listening at an
// address the transport picks in a fresh directory) unless --addr names a running one,
// and prints an OSU-style table per test; --json=FILE writes them as one document.
//
// Every connection but connrate's opens with a 16-byte header: echo a size a number of
// times, sink a number of bytes and answer with one byte, or hand the connection to a
// test's server (the http and grpc tests, whose servers see a plain net.Listener).
//
// Registration must finish before ParseFlags; Run may be called once per process.
// Everything else is owned by the goroutine that calls Run.
package connbench
