// Command sockbench measures net.Conn between two processes over gorma's sockets
// (transport/sockets: gorma-shm, gorma-tcp) and over the kernel's Unix and TCP sockets.
// It measures the round trip at 64 B, 4 KiB, 64 KiB and 1 MiB (pingpong: median and
// percentiles of many round trips). It measures one-way throughput in writes of 64 KiB,
// 4 KiB and 1 MiB (stream) and connections per second (connrate: dial + close). It
// measures net/http requests per second with 16 keep-alive clients and 1 KiB responses
// (http).
//
// Usage:
//
//	sockbench [--transport unix|tcp|gorma-shm|gorma-tcp] [--test all|pingpong,stream,connrate,http]
//	          [--sizes 64,4K,64K,1M] [--iters 20000] [--stream-sizes 64K,4K,1M] [--stream-bytes 256M]
//	          [--reps 5] [--duration 1s] [--clients 16] [--response 1K] [--json[=FILE]]
//	sockbench --role server --transport T --addr ADDR    # serve a client started with --addr ADDR
//
// Without --addr the program starts itself as the server (no launcher) and stops it at
// the end. Each test prints an OSU-style table ("# " header lines, then one row per
// size); --json=FILE writes every table as one document, and --json alone prints it
// instead of the text. The same tests over shmipc-go, and a gRPC unary round trip over
// every transport, are bench/sockpeers' (a module of its own). scripts/compare-sockets.sh
// runs every transport in turn and sets the ratios against their targets.
//
// The test code is bench/connbench's; this command adds gorma's transports to it.
package main
