package runtime

// opCall names the user's call that started a Request. Hang reports and the timeline's
// wait events name a blocking wait on the Request by it (waitName), so that a report says
// Ssend where the program called Ssend, and Issend where it waits for an Issend's Request.
// The engine's own Requests (Barrier's messages, Finalize's fence) have callNone and are
// named by their kind.
type opCall uint8

const (
	callNone opCall = iota
	callSend
	callRsend
	callSsend
	callIsend
	callIrsend
	callIssend
	callBsend
	callIbsend
	callSendInit
	callRsendInit
	callSsendInit
	callBsendInit
	callRecv
	callIrecv
	callRecvInit
	callSendrecv
	callSendrecvReplace
	callIsendrecv
	callIsendrecvReplace
	callMprobe
	callMrecv
	callImrecv
	callWaitSome
	nCalls
)

var opCallNames = [nCalls]string{"", "Send", "Rsend", "Ssend", "Isend", "Irsend", "Issend", "Bsend", "Ibsend",
	"SendInit", "RsendInit", "SsendInit", "BsendInit", "Recv", "Irecv", "RecvInit",
	"Sendrecv", "SendrecvReplace", "Isendrecv", "IsendrecvReplace", "Mprobe", "Mrecv", "Imrecv", "WaitSome"}

// String returns the call's name in the API ("Ssend"), "" for callNone.
func (c opCall) String() string {
	if c >= nCalls {
		return ""
	}
	return opCallNames[c]
}

// synchronous reports whether a send started by c completes only once matched (Ssend's
// rule).
func (c opCall) synchronous() bool { return c == callSsend || c == callIssend || c == callSsendInit }
