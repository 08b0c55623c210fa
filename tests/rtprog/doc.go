// Command rtprog is a tiny rank program for golaunch's real-process failure and security
// tests. Unlike pmiprog it uses the real runtime (runtime.Init, Barrier, Recv), so the
// tests exercise golaunch, the agent and the runtime's failure detection together. The
// first argument picks a behaviour; see main.go.
package main
