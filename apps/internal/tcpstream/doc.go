// Command tcpstream measures raw TCP stream bandwidth between two hosts (or network
// namespaces), without gorma: the floor that scripts/netns-allreduce.sh sets the
// cross-host Allreduce against.
//
//	tcpstream sink --listen 10.231.7.2:9000                  # on the receiving host, until killed
//	tcpstream send --to 10.231.7.2:9000 --duration 3s [--start-at UNIXNANO] [--msg 1M] [--notsent-lowat 32K] [--congestion cubic]
//
// The sink accepts any number of connections and reads each into one reused buffer until
// the sender closes it. The sender waits until --start-at (wall-clock nanoseconds since
// the epoch, shared by every namespace of a machine; default: now). It then writes --msg
// bytes at a time from one buffer for --duration. It reports the bandwidth of the middle
// of that time: bytes written in that window over its length, in GB/s (10^9 bytes per
// second). The first and last sixth are left out, so that several senders started
// together are measured while all of them run, and connection start-up and the socket
// buffers' filling do not count. In steady state the bytes written and the bytes
// delivered differ only by what the socket buffers hold, which stays constant. The socket
// options are those of gorma's tcp provider (TCP_NODELAY). --notsent-lowat sets
// TCP_NOTSENT_LOWAT as the provider does on a connection that carries traffic both ways.
// With it the kernel keeps only that much unsent data queued, which on links that are CPU
// time (veths on one machine) also changes what a byte costs. --congestion sets
// TCP_CONGESTION, as the provider does (cubic unless GORMA_TCP_CONGESTION says
// otherwise); without it the kernel's default applies.
//
// Output: one line, "tcpstream FROM -> TO: X.XXX GB/s (N bytes in Ts window, M bytes in all)".
package main
