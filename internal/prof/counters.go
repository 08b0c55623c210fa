package prof

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// HistBins is the number of message-size bins per peer, as in Open MPI's monitoring:
// bin 0 counts empty messages and bin k counts sizes in [2^(k-1), 2^k).
const HistBins = 66

// Traffic is what one rank sent to each peer by one kind of communication.
type Traffic int

// The kinds of traffic a rank counts per peer. The order is that of the .prof file.
const (
	P2P  Traffic = iota // point-to-point messages sent (Open MPI's E lines)
	Coll                // collectives' data to each member (C lines)
	Put                 // RMA data the origin sends to the target: Put, Accumulate (S lines)
	Get                 // RMA data the origin receives from the target: Get (R lines)
	NumTraffic
)

var trafficNames = [NumTraffic]string{"p2p", "coll", "put", "get"}

// String returns the kind's name in the JSON document: p2p, coll, put or get.
func (t Traffic) String() string {
	if t < 0 || t >= NumTraffic {
		return "traffic?"
	}
	return trafficNames[t]
}

// link is one peer's count of one traffic kind. The counts are atomic so that
// several goroutines of a rank add to them without a lock.
type link struct {
	bytes atomic.Uint64
	msgs  atomic.Uint64
}

// callStat is one call kind's count: calls, bytes and nanoseconds inside the call.
type callStat struct {
	calls atomic.Uint64
	bytes atomic.Uint64
	nanos atomic.Int64
}

// Counters is one rank's communication profile: per peer and traffic kind the
// bytes and messages sent, a size histogram of the point-to-point messages, and
// per call kind the calls, bytes and time spent.
//
// Every method may be called from any goroutine at once. The recording methods
// (Send, Coll, PutTo, GetFrom, Call, Start, Timer.Stop) add to arrays allocated by
// New with atomic adds: they take no lock and allocate nothing. A nil *Counters
// records nothing, so that a caller holds a nil pointer when profiling is off.
type Counters struct {
	rank, size int
	links      [NumTraffic][]link
	hist       []atomic.Uint64 // size*HistBins, point-to-point only
	calls      [NumCalls]callStat
}

// New returns the counters of rank rank in a job of size ranks. It panics unless
// 0 <= rank < size.
func New(rank, size int) *Counters {
	if size <= 0 || rank < 0 || rank >= size {
		panic("prof.New: rank out of range")
	}
	c := &Counters{rank: rank, size: size, hist: make([]atomic.Uint64, size*HistBins)}
	for t := range c.links {
		c.links[t] = make([]link, size)
	}
	return c
}

// Rank returns the rank the counters belong to.
func (c *Counters) Rank() int { return c.rank }

// Size returns the number of ranks of the job.
func (c *Counters) Size() int { return c.size }

// Bin returns the histogram bin of a message of n bytes. It equals Open MPI's
// (int)(log10(n)/log10(2))+1 for every n below 2^48.
func Bin(n uint64) int {
	if n == 0 {
		return 0
	}
	return min(bits.Len64(n), HistBins-1)
}

// Send counts one point-to-point message of n bytes to peer (a rank of the job).
func (c *Counters) Send(peer, n int) {
	if c == nil {
		return
	}
	c.add(P2P, peer, n)
	c.hist[peer*HistBins+Bin(uint64(n))].Add(1)
}

// Coll counts n bytes of one collective call's data for member peer. Open MPI
// counts, for each call, the data the call's arguments name for each other
// member, one message per call; a caller that does the same gets the same C lines.
func (c *Counters) Coll(peer, n int) {
	if c != nil {
		c.add(Coll, peer, n)
	}
}

// PutTo counts one RMA operation that sends n bytes from this origin to target peer.
func (c *Counters) PutTo(peer, n int) {
	if c != nil {
		c.add(Put, peer, n)
	}
}

// GetFrom counts one RMA operation that brings n bytes from target peer to this origin.
func (c *Counters) GetFrom(peer, n int) {
	if c != nil {
		c.add(Get, peer, n)
	}
}

func (c *Counters) add(t Traffic, peer, n int) {
	l := &c.links[t][peer]
	l.bytes.Add(uint64(n))
	l.msgs.Add(1)
}

// Call counts one call of kind k that moved n bytes and took d.
func (c *Counters) Call(k CallKind, n int, d time.Duration) {
	if c == nil {
		return
	}
	s := &c.calls[k]
	s.calls.Add(1)
	s.bytes.Add(uint64(n))
	s.nanos.Add(int64(d))
}

// Timer measures one call: Start reads the clock, Stop counts the call.
// A Timer is a value; it holds no resources.
type Timer struct {
	c     *Counters
	k     CallKind
	start time.Time
}

// Start begins timing a call of kind k. On nil Counters it reads no clock.
func (c *Counters) Start(k CallKind) Timer {
	if c == nil {
		return Timer{}
	}
	return Timer{c: c, k: k, start: time.Now()}
}

// Stop counts the call with n bytes and the time since Start (the monotonic clock).
func (t Timer) Stop(n int) {
	if t.c != nil {
		t.c.Call(t.k, n, time.Since(t.start))
	}
}
