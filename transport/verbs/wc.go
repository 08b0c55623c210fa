package verbs

// Status is the outcome of a work request, as in libibverbs' ibv_wc_status.
// Wire formats encode these values: the list is append-only.
type Status uint8

// Completion statuses.
const (
	Success        Status = iota
	LocLenErr             // local buffer too small (a receive shorter than the message)
	LocQPOpErr            // the QP could not run the request (bad opcode for its state)
	LocProtErr            // the local buffer is not within the MR named by LKey, or lacks rights
	WRFlushErr            // flushed: the QP was in Err, or moved there before the request ran
	LocAccessErr          // local access failed
	RemInvReqErr          // the remote side found the request invalid (misaligned atomic, ...)
	RemAccessErr          // remote key stale, forged, out of bounds or without the right
	RemOpErr              // the remote side could not complete the operation
	RetryExcErr           // the peer did not answer: dead, unreachable, or disconnected
	RNRRetryExcErr        // the peer had no receive posted for too long
	FatalErr              // the device failed
)

var statusNames = [...]string{"Success", "LocLenErr", "LocQPOpErr", "LocProtErr",
	"WRFlushErr", "LocAccessErr", "RemInvReqErr", "RemAccessErr", "RemOpErr", "RetryExcErr",
	"RNRRetryExcErr", "FatalErr"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "Status(?)"
}

// WCOpcode tells which kind of request a completion belongs to.
type WCOpcode uint8

// Completion opcodes.
const (
	WCSend WCOpcode = iota
	WCRDMAWrite
	WCRDMARead
	WCFetchAdd
	WCCmpSwap
	WCRecv            // a Send (or SendWithImm) arrived
	WCRecvRDMAWithImm // an RDMAWriteWithImm arrived (consumes a receive, carries Imm)
)

var wcOpNames = [...]string{"Send", "RDMAWrite", "RDMARead", "FetchAdd", "CmpSwap", "Recv",
	"RecvRDMAWithImm"}

func (o WCOpcode) String() string {
	if int(o) < len(wcOpNames) {
		return wcOpNames[o]
	}
	return "WCOpcode(?)"
}

// WCOpcodeOf returns the completion opcode of a send work request opcode.
func WCOpcodeOf(op Opcode) WCOpcode {
	switch op {
	case OpRDMAWrite, OpRDMAWriteWithImm:
		return WCRDMAWrite
	case OpRDMARead:
		return WCRDMARead
	case OpAtomicFetchAdd:
		return WCFetchAdd
	case OpAtomicCmpSwap:
		return WCCmpSwap
	}
	return WCSend
}

// WC is a work completion.
type WC struct {
	WRID    uint64   // the request's WRID
	Status  Status   // outcome
	Op      WCOpcode // kind of request
	QPN     uint32   // local QP number
	ByteLen uint32   // bytes received (receive completions) or transferred
	Imm     uint32   // immediate data, valid when HasImm
	HasImm  bool
}
