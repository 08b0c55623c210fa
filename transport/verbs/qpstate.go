package verbs

// QPState is the state of a queue pair, as in libibverbs.
type QPState uint8

// Queue pair states. A QP goes Reset → Init → RTR → RTS; any state may go to Err.
const (
	Reset QPState = iota
	Init
	RTR
	RTS
	Err
)

var qpStateNames = [...]string{"Reset", "Init", "RTR", "RTS", "Err"}

func (s QPState) String() string {
	if int(s) < len(qpStateNames) {
		return qpStateNames[s]
	}
	return "QPState(?)"
}

// CanTransition reports whether a QP may move from s to next.
func (s QPState) CanTransition(next QPState) bool {
	if next == Err {
		return true
	}
	switch s {
	case Reset:
		return next == Init
	case Init:
		return next == RTR
	case RTR:
		return next == RTS
	}
	return false
}

// CanPostSend reports whether send work may be posted in s.
func (s QPState) CanPostSend() bool { return s == RTS }

// CanPostRecv reports whether receives may be posted in s.
func (s QPState) CanPostRecv() bool { return s == Init || s == RTR || s == RTS }
