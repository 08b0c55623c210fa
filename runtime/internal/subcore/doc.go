// Package subcore holds the types of the one-sided substrate that package runtime/substrate
// shows to the layers above the runtime: Region, Remote, Counter, Track, CallSig, Reach.
// Their state that needs the runtime's engine stays in package runtime, behind the small
// interfaces here (RegionOps, RemoteOps, CounterOps, TrackOps, World), which the runtime
// implements with unexported types. What the fast paths read (a Remote's mapping and
// liveness, a Track's call) lives in these structs, so that those reads need no call into
// the runtime.
//
// Only packages under runtime/ import it: runtime implements it, runtime/substrate
// re-exports it. Its package functions (NewRemote, Unlive, TrackRecord, ...) are for the
// runtime alone; the layers above see the types through runtime/substrate's aliases.
package subcore
