package trace

import (
	"strconv"
	"time"
)

// Pointer returns the line a hang report adds for rank to lead its reader into the
// merged trace: the index of the rank's last recorded event, which the trace shows as
// the "seq" argument of that event, and the time since that event ended.
//
//	trace: rank 3 last event seq=1234, 31.2s ago
//	trace: rank 3 recorded no event
func Pointer(rank int, d Dump, now int64) string {
	if len(d.Events) == 0 {
		return PointerAt(rank, 0, 0, false, now)
	}
	last := len(d.Events) - 1
	return PointerAt(rank, d.Seqs[last], d.Events[last].End, true, now)
}

// PointerAt is Pointer for a rank whose last event has index seq and ended at end
// (Recorder.Last); ok is false when the rank recorded none.
func PointerAt(rank int, seq uint64, end int64, ok bool, now int64) string {
	s := "trace: rank " + strconv.Itoa(rank)
	if !ok {
		return s + " recorded no event"
	}
	ago := time.Duration(now - end)
	return s + " last event seq=" + strconv.FormatUint(seq, 10) + ", " +
		strconv.FormatFloat(ago.Seconds(), 'f', 1, 64) + "s ago"
}

// DumpPath names the dump of rank's flight recorder that a hang report writes beside
// the timeline's file: "<file>.<rank>.gtrc". The launcher merges those of a hang.
func DumpPath(file string, rank int) string { return file + "." + strconv.Itoa(rank) + ".gtrc" }
