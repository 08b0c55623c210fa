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

// Calls of each kind are timed exactly up to ExactCalls; after that, one call in
// SampleEvery is timed and its time counts SampleEvery times. The sample is the calls
// whose number n has n·2⁶⁴/φ (mod 2⁶⁴) in the lowest SampleEvery-th of its range: a Weyl
// sequence, which no periodic pattern of calls aligns with. A rank thus reads the clock
// for few of its short calls, and the time of a kind with many calls is an estimate
// whose error falls as the square root of its calls. `go test -bench Observe8B
// ./runtime` measures what timing costs.
const (
	ExactCalls  = 1024
	SampleEvery = 16
)

// weight returns the weight of the time of the n-th call of a kind (Begin).
func weight(n uint64) int64 {
	switch {
	case n <= ExactCalls:
		return 1
	case n*0x9E3779B97F4A7C15 < (1<<64-1)/SampleEvery:
		return SampleEvery
	}
	return 0
}

// Begin counts one call of kind k and returns the weight of its time: 1 while the kind
// is timed exactly, SampleEvery for a sampled call, 0 for a call not timed. The caller
// times the call when the weight is not 0 and gives both to End.
func (c *Counters) Begin(k CallKind) int64 {
	if c == nil {
		return 0
	}
	return weight(c.calls[k].calls.Add(1))
}

// End adds n bytes to a call of kind k that Begin counted, and weight times d to the
// kind's time.
func (c *Counters) End(k CallKind, n int, d time.Duration, weight int64) {
	if c == nil {
		return
	}
	s := &c.calls[k]
	s.bytes.Add(uint64(n))
	if weight != 0 {
		s.nanos.Add(int64(d) * weight)
	}
}

// Call counts one call of kind k that moved n bytes and took d, timed exactly.
func (c *Counters) Call(k CallKind, n int, d time.Duration) {
	if c == nil {
		return
	}
	s := &c.calls[k]
	s.calls.Add(1)
	s.bytes.Add(uint64(n))
	s.nanos.Add(int64(d))
}

// Timer measures one call: Start counts it and reads the clock when the call is timed
// (Begin), Stop adds its bytes and time. A Timer is a value; it holds no resources.
type Timer struct {
	c      *Counters
	k      CallKind
	weight int64
	start  time.Time
}

// Start begins a call of kind k. On nil Counters, or for a call not timed, it reads no
// clock.
func (c *Counters) Start(k CallKind) Timer {
	if c == nil {
		return Timer{}
	}
	t := Timer{c: c, k: k, weight: c.Begin(k)}
	if t.weight != 0 {
		t.start = time.Now()
	}
	return t
}

// Stop ends the call with n bytes, and its time since Start when it is timed.
func (t Timer) Stop(n int) {
	if t.c == nil {
		return
	}
	var d time.Duration
	if t.weight != 0 {
		d = time.Since(t.start)
	}
	t.c.End(t.k, n, d, t.weight)
}
