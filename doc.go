// Package gorma is the root of a pure-Go, MPI-style parallel runtime.
//
// The root package holds no code of its own: it documents the module and carries the
// architecture tests (deps_test.go enforces the layer list of ARCHITECTURE.md, and
// pkgdoc_test.go requires a doc.go in every package). The runtime lives in the
// sub-packages:
//
//   - transport/verbs: the transport API, modelled on InfiniBand verbs, with the providers
//     shm (same host) and tcp (across hosts) and the pre-registered arena.
//   - runtime: World, point-to-point messages, the progress engine.
//   - window: one-sided RMA windows; window/coherence: the DSM invalidation protocol.
//   - collectives: Allreduce and friends.
//   - launcher: golaunch and its per-host agents.
//   - apps: rank programs and benchmarks, such as apps/verbsperf.
//
// The README shows how to build, run and test; docs/ holds the design notes and
// benchmark method.
package gorma
