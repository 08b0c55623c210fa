package verbs

// Opcode is the operation of a send work request.
type Opcode uint8

// Send work request opcodes. Wire formats encode these values: the list is append-only.
const (
	OpSend Opcode = iota
	OpRDMAWrite
	OpRDMAWriteWithImm
	OpRDMARead
	OpAtomicFetchAdd
	OpAtomicCmpSwap
	OpSendWithImm
)

var opNames = [...]string{"Send", "RDMAWrite", "RDMAWriteWithImm", "RDMARead",
	"AtomicFetchAdd", "AtomicCmpSwap", "SendWithImm"}

func (o Opcode) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return "Opcode(?)"
}

// IsAtomic reports whether o is AtomicFetchAdd or AtomicCmpSwap.
func (o Opcode) IsAtomic() bool { return o == OpAtomicFetchAdd || o == OpAtomicCmpSwap }

// SendFlags modify a send work request.
type SendFlags uint8

const (
	// Signaled asks for a completion. Unsignaled requests complete silently, but still
	// hold their send queue slot until a later signaled completion on the QP is polled.
	Signaled SendFlags = 1 << iota
	// Fence makes the request wait until earlier RDMARead and atomic requests on the QP
	// have completed.
	Fence
)

// RemoteAddr names remote memory: an MR's remote key and a byte offset within that MR.
type RemoteAddr struct {
	RKey   uint64
	Offset uint64
}

// SendWR is a send work request. The provider copies what it needs during PostSend; see
// the package doc for who owns Local and until when.
type SendWR struct {
	WRID  uint64    // returned in the completion
	Op    Opcode    // operation
	Flags SendFlags // Signaled, Fence
	// Local is the gather buffer (Send, RDMAWrite) or the scatter buffer (RDMARead, and the
	// 8-byte result of an atomic, which receives the remote value before the operation).
	Local []byte
	// LKey is the key of the MR that holds Local. Zero means Local is unregistered Go
	// memory, which providers accept for RDMA reads, writes and atomics (they may copy
	// through a bounce buffer); Sends require a registered Local unless it is empty.
	LKey   uint64
	Remote RemoteAddr // target of RDMA and atomics
	Imm    uint32     // immediate data of RDMAWriteWithImm and SendWithImm
	// CompareAdd is the value added by AtomicFetchAdd, or compared by AtomicCmpSwap.
	CompareAdd uint64
	// Swap is the value written by AtomicCmpSwap when the comparison holds.
	Swap uint64
}

// RecvWR is a receive work request: the buffer the next inbound Send lands in.
type RecvWR struct {
	WRID  uint64
	Local []byte // receive buffer, within the MR named by LKey
	LKey  uint64
}
