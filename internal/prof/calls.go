package prof

// CallKind names the gorma call a Timer or Counters.Call counts. Each call of the API
// has its own kind (Gatherv is not Gather); the reductions' Loc and Type forms count as
// their reductions, as MPI counts MPI_Allreduce whatever its datatype. The list is
// append-only: the JSON document names kinds by String, never by number.
type CallKind int

// The call kinds.
const (
	CallSend CallKind = iota
	CallRecv
	CallSendrecv
	CallProbe
	CallWait
	CallBarrier
	CallBcast
	CallReduce
	CallAllreduce
	CallGather
	CallAllgather
	CallScatter
	CallAlltoall
	CallAlltoallv
	CallReduceScatter
	CallScan
	CallPut
	CallGet
	CallAccumulate
	CallGetAccumulate
	CallFetchAndOp
	CallCompareAndSwap
	CallFence
	CallLock
	CallUnlock
	CallFlush
	CallPost
	CallStart
	CallComplete
	CallWaitEpoch
	CallNeighborAllgather // package topo's NeighborAllgather
	CallNeighborAlltoall  // package topo's NeighborAlltoall
	CallGatherv
	CallAllgatherv
	CallScatterv
	CallAlltoallw
	CallReduceScatterV
	CallExscan
	CallNeighborAllgatherv
	CallNeighborAlltoallv
	CallNeighborAlltoallw
	NumCalls
)

var callNames = [NumCalls]string{
	"Send", "Recv", "Sendrecv", "Probe", "Wait",
	"Barrier", "Bcast", "Reduce", "Allreduce", "Gather", "Allgather", "Scatter",
	"Alltoall", "Alltoallv", "ReduceScatter", "Scan",
	"Put", "Get", "Accumulate", "GetAccumulate", "FetchAndOp", "CompareAndSwap",
	"Fence", "Lock", "Unlock", "Flush", "Post", "Start", "Complete", "WaitEpoch",
	"NeighborAllgather", "NeighborAlltoall",
	"Gatherv", "Allgatherv", "Scatterv", "Alltoallw", "ReduceScatterV", "Exscan",
	"NeighborAllgatherv", "NeighborAlltoallv", "NeighborAlltoallw",
}

// String returns the call's MPI-style name, such as "Allreduce".
func (k CallKind) String() string {
	if k < 0 || k >= NumCalls {
		return "Call?"
	}
	return callNames[k]
}

// ParseCallKind returns the kind whose String is name.
func ParseCallKind(name string) (CallKind, bool) {
	for k, n := range callNames {
		if n == name {
			return CallKind(k), true
		}
	}
	return 0, false
}
