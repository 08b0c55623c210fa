package runtime

// persistent is what Start starts again: the operation a SendInit or RecvInit call
// described.
type persistent struct {
	w     *World
	kind  reqKind // reqSend or reqRecv
	mode  sendMode
	buf   []byte
	esize int
	peer  int // a job rank, AnySource or ProcNull
	tag   int
}

// sendMode is how a send completes: standard, synchronous, buffered.
type sendMode uint8

const (
	modeStandard sendMode = iota
	modeSync
	modeBuffered
)
