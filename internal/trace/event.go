package trace

import "strconv"

// Kind is what an Event records. The values are part of the dump format: append only.
type Kind uint8

const (
	Call       Kind = iota + 1 // any call the other kinds do not name (Init, Probe, a communicator call)
	Send                       // a send call; Peer is the destination, Flow the message's number to it (a flow starts here)
	Recv                       // a receive call; Peer is the source when known; a Flow ends at its end (HeldMatch)
	Match                      // a message matched to a receive, at that moment; Peer is the source, Flow the message's number (a flow ends here)
	Collective                 // a collective call; Label names it and its algorithm
	Epoch                      // a window epoch (Fence to Fence, Lock to Unlock, Start to Complete)
	RMA                        // one RMA operation; Peer is the target
	Wait                       // a wait on requests
	Region                     // a span the user names (Label)
	maxKind
)

var kindNames = [...]string{Call: "call", Send: "send", Recv: "recv", Match: "match", Collective: "coll",
	Epoch: "epoch", RMA: "rma", Wait: "wait", Region: "region"}

// String returns the kind's name, which the merged trace uses as the event's category.
func (k Kind) String() string {
	if k > 0 && k < maxKind {
		return kindNames[k]
	}
	return "kind" + strconv.Itoa(int(k))
}

// MatchName names a Match of the runtime's; a name with the suffix Internal is one of
// its own traffic (a collective's, a layer's). A Recv event with a Flow holds the Match
// of its message at its end: the merge writes that Match as a slice of heldMatchLen
// nanoseconds named MatchName (MatchName+Internal when the Recv's name ends with
// Internal), and the Recv without the flow. A receive then records one event, not two.
const (
	MatchName = "message in"
	Internal  = " (internal)"
)

// heldMatchLen is the length of the Match slice that a Recv with a flow holds: long
// enough for its flow to bind inside (design.md, "flows").
const heldMatchLen = 2

// NoPeer is Event.Peer when the event names no peer.
const NoPeer = -1

// Event is one fixed-size record of the timeline. Times are nanoseconds of the
// recorder's clock (Recorder.Now). An Event holds no pointer, so recording one copies
// 48 bytes and allocates nothing.
type Event struct {
	Start int64  // when the call began
	End   int64  // when it returned (End >= Start)
	Bytes int64  // bytes moved, or -1 when not applicable
	Flow  uint64 // Send and Match: the message's number on its (sender, receiver) pair, from 1; 0: no flow
	Peer  int32  // world rank of the peer, or NoPeer
	Tag   int32  // tag of a point-to-point call, or -1
	Label uint16 // index into the recorder's labels: the call's name ("Send", "Allreduce ring")
	Kind  Kind
}

// flowOut reports whether e starts a flow, flowIn whether it ends one.
func (e Event) flowOut() bool { return e.Kind == Send && e.Flow != 0 }
func (e Event) flowIn() bool  { return e.Kind == Match && e.Flow != 0 }
