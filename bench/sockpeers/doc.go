// Command sockpeers runs apps/sockbench's tests (bench/connbench) over the peer
// transport shmipc-go (--transport shmipc: its Listen and a SessionManager's streams,
// its net.Conn face) besides unix and tcp, and adds the grpc test (a unary Echo round
// trip) for every transport. It is a module of its own, so that the root module
// depends on neither shmipc-go nor gRPC.
//
//	cd bench/sockpeers && go build -o ../../bin/sockpeers .
//	bin/sockpeers --transport shmipc --test pingpong,stream,connrate,http,grpc --json=FILE
//	bin/sockpeers --transport unix --test grpc
//
// The flags and the output are sockbench's (go doc ./apps/sockbench). shmipc-go's Dial
// opens a stream of one multiplexed link that its first Dial sets up, so its connrate
// counts stream opens without a round trip. gorma-shm and gorma-tcp come with bench/connbench.
// scripts/compare-sockets.sh builds and runs it.
package main
