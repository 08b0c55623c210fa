package hostgroup

import "strings"

// A call's kind in the meta word of its first shared-memory step (meta), so that a
// member at another kind of call is told, and named, even when the call numbers and byte
// counts agree (a Bcast of 32 bytes and an Allreduce of 32 bytes, say). The id is the
// same at every rank: a base kind's place in kinds, plus kindStride for the
// nonblocking form (Iallreduce) and twice that for the persistent one (AllreduceInit).
// A name outside the table hashes into the ids above the three forms'.

// kinds are the base kinds, by the names hang reports give them (trackName), and the
// call of package window that makes SetupDup's step (a window's creation, of any flavor:
// MPI lets the ranks create one window with different calls).
var kinds = [...]string{"", "Allgather", "Allgatherv", "Allreduce", "Alltoall", "Alltoallv", "Alltoallw",
	"Barrier", "Bcast", "Exscan", "Gather", "Gatherv", "Reduce", "ReduceScatter", "ReduceScatterV", "Scan",
	"Scatter", "Scatterv", "AllreduceLoc", "ReduceLoc", "ReduceType", "AllreduceType", "SetupDup",
	"window creation"}

const (
	kindStride = 32 // ids of one form
	KindBits   = 7  // bits of an id
)

// Kind returns the id of the call a hang report names name.
func Kind(name string) uint8 {
	form := 0
	base := name
	switch {
	case strings.HasSuffix(name, "Init"):
		form, base = 2, strings.TrimSuffix(name, "Init")
	case len(name) > 1 && name[0] == 'I' && name[1] >= 'a' && name[1] <= 'z':
		form, base = 1, strings.ToUpper(name[1:2])+name[2:]
	}
	for i, k := range kinds {
		if i > 0 && strings.EqualFold(k, base) {
			return uint8(form*kindStride + i)
		}
	}
	h := uint32(2166136261)
	for i := range len(name) {
		h = (h ^ uint32(name[i])) * 16777619
	}
	return uint8(3*kindStride + int(h%kindStride))
}

// kindName names the call of kind id k: its base kind, with the nonblocking or
// persistent form's mark, or "another collective" for an id outside the table.
func kindName(k uint8) string {
	form, i := int(k)/kindStride, int(k)%kindStride
	if form > 2 || i == 0 || i >= len(kinds) {
		return "another collective"
	}
	switch form {
	case 1:
		return "I" + strings.ToLower(kinds[i][:1]) + kinds[i][1:]
	case 2:
		return kinds[i] + "Init"
	}
	return kinds[i]
}
