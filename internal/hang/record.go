package hang

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Peer values that name no single rank.
const (
	AnyRank = -1 // any source
	NoRank  = -2 // the call names no peer
)

// Record is one call a rank's goroutine is blocked in.
type Record struct {
	Call    string        // "Recv", "Send", "Barrier", "Allreduce", "window.Fence", "Finalize", ...
	API     string        // the name the program called, where it is not Call ("MPI_Recv" from C); "" otherwise
	Comm    string        // the communicator: "World" or the runtime's name of a derived one ("World.dup1")
	Members []int         // world ranks of Comm in Comm-rank order; nil: every rank of the job (World)
	Seq     uint64        // the collective call's number on Comm, from 1 (0: not a collective)
	Peer    int           // world rank of the source or destination; AnyRank; NoRank when the call names none
	Tag     int           // tag; -1 any; meaningful only when Peer != NoRank
	Root    int           // root (Comm rank) of a rooted collective, or -1
	Count   int           // elements, -1 unknown
	Type    string        // element type ("float64", ...), "" unknown
	Op      string        // reduction operator name ("sum", ...), "" none
	Win     string        // window ("win2"), "" none
	Since   time.Duration // how long it has been blocked
}

// collective reports whether r is a collective call (it has a number on its communicator).
func (r Record) collective() bool { return r.Seq > 0 }

// jobWide reports whether r's call always spans the whole job, so its communicator goes
// without saying.
func (r Record) jobWide() bool { return r.Call == "Finalize" || r.Call == "Init" }

// name is the call's name in the lines people read: API where set, else Call.
func (r Record) name() string {
	if r.API != "" {
		return r.API
	}
	return r.Call
}

// String returns the call as one line: "Recv(src=1, tag=0, World)",
// "Allreduce #2 (8 float64, sum, World)", "window.Fence #3 (win2, World)", "Finalize",
// or with API set, "MPI_Recv(src=1, tag=0, World)".
// A point-to-point call's peer is "src" for receives and probes, "dst" for sends and
// "peer" otherwise; Finalize and Init leave out their communicator.
func (r Record) String() string {
	parts := r.details(true)
	switch {
	case r.collective() && len(parts) > 0:
		return r.name() + " #" + strconv.FormatUint(r.Seq, 10) + " (" + strings.Join(parts, ", ") + ")"
	case r.collective():
		return r.name() + " #" + strconv.FormatUint(r.Seq, 10)
	case len(parts) > 0:
		return r.name() + "(" + strings.Join(parts, ", ") + ")"
	}
	return r.name()
}

// details returns the parenthesized parts of String, with the communicator if withComm.
func (r Record) details(withComm bool) []string {
	var parts []string
	if r.Peer != NoRank && !r.collective() {
		parts = append(parts, peerKey(r.Call)+"="+rankName(r.Peer))
		if r.Tag == -1 {
			parts = append(parts, "tag=any")
		} else {
			parts = append(parts, "tag="+strconv.Itoa(r.Tag))
		}
	}
	switch {
	case r.Count >= 0 && r.Type != "":
		parts = append(parts, strconv.Itoa(r.Count)+" "+r.Type)
	case r.Count >= 0:
		parts = append(parts, "count="+strconv.Itoa(r.Count))
	case r.Type != "":
		parts = append(parts, r.Type)
	}
	if r.Op != "" {
		parts = append(parts, r.Op)
	}
	if r.Root >= 0 && r.collective() {
		parts = append(parts, "root="+strconv.Itoa(r.Root))
	}
	if r.Win != "" {
		parts = append(parts, r.Win)
	}
	if withComm && r.Comm != "" && !r.jobWide() {
		parts = append(parts, r.Comm)
	}
	return parts
}

// short names r's call in the cause lines: "Recv", "Recv from any source", "Allreduce #2",
// "Barrier #1 on World.split3".
func (r Record) short() string {
	s := r.name()
	if r.collective() {
		s += " #" + strconv.FormatUint(r.Seq, 10)
	}
	if !r.collective() && r.Peer == AnyRank {
		s += " from any source"
	}
	if r.Comm != "" && r.Comm != "World" && !r.jobWide() {
		s += " on " + r.Comm
	}
	return s
}

// direction is which way a point-to-point call moves data.
type direction uint8

const (
	sends    direction          = 1 << iota // Send, Isend, Ssend, Bsend, Rsend
	receives                                // Recv, Irecv, Probe, Iprobe, Mprobe, Mrecv
	both     = sends | receives             // Sendrecv, Wait and any call whose direction the name does not tell
)

// directionOf returns the direction of the point-to-point call named call.
func directionOf(call string) direction {
	switch {
	case strings.HasSuffix(call, "Sendrecv") || strings.HasSuffix(call, "Sendrecv_replace"):
		return both
	case strings.HasSuffix(call, "send") || strings.HasSuffix(call, "Send"):
		return sends
	case strings.HasSuffix(call, "recv") || strings.HasSuffix(call, "Recv") || strings.HasSuffix(call, "probe") ||
		strings.HasSuffix(call, "Probe"):
		return receives
	}
	return both
}

// peerKey returns the name String gives the peer of a point-to-point call.
func peerKey(call string) string {
	switch directionOf(call) {
	case sends:
		return "dst"
	case receives:
		return "src"
	}
	return "peer"
}

// rankName spells a Peer value: a rank number, "any" or "none".
func rankName(p int) string {
	switch p {
	case AnyRank:
		return "any"
	case NoRank:
		return "none"
	}
	return strconv.Itoa(p)
}

// seconds spells d as seconds with one decimal: "31.2s".
func seconds(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }
