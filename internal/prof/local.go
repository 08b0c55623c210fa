package prof

import "time"

// Local holds counts that one owner adds to with plain adds rather than atomic ones: a
// rank's engine, under its lock, counts its point-to-point messages and calls there.
// Counters.Fold adds them into the Counters. A Local must be used by one goroutine at a
// time; a nil *Local records nothing.
type Local struct {
	c     *Counters // the counters it folds into, which sized it
	bytes []uint64  // point-to-point, per peer
	msgs  []uint64
	hist  []uint64 // size*HistBins
	calls [NumCalls]struct {
		calls, bytes uint64
		nanos        int64
	}
}

// NewLocal returns a Local for c's job, nil when c is nil.
func (c *Counters) NewLocal() *Local {
	if c == nil {
		return nil
	}
	return &Local{c: c, bytes: make([]uint64, c.size), msgs: make([]uint64, c.size),
		hist: make([]uint64, c.size*HistBins)}
}

// Send is Counters.Send.
func (l *Local) Send(peer, n int) {
	if l == nil {
		return
	}
	l.bytes[peer] += uint64(n)
	l.msgs[peer]++
	l.hist[peer*HistBins+Bin(uint64(n))]++
}

// Begin is Counters.Begin.
func (l *Local) Begin(k CallKind) int64 {
	if l == nil {
		return 0
	}
	s := &l.calls[k]
	s.calls++
	return weight(s.calls)
}

// End is Counters.End.
func (l *Local) End(k CallKind, n int, d time.Duration, weight int64) {
	if l == nil {
		return
	}
	s := &l.calls[k]
	s.bytes += uint64(n)
	s.nanos += int64(d) * weight
}

// Fold adds l's counts into the counters it was made for and zeroes l. The caller
// holds what guards l.
func (c *Counters) Fold(l *Local) {
	if c == nil || l == nil || l.c != c {
		return
	}
	for p := range l.bytes {
		if l.msgs[p] != 0 {
			k := &c.links[P2P][p]
			k.bytes.Add(l.bytes[p])
			k.msgs.Add(l.msgs[p])
			l.bytes[p], l.msgs[p] = 0, 0
		}
	}
	for i, v := range l.hist {
		if v != 0 {
			c.hist[i].Add(v)
			l.hist[i] = 0
		}
	}
	for k := range l.calls {
		s, d := &l.calls[k], &c.calls[k]
		if s.calls != 0 || s.bytes != 0 {
			d.calls.Add(s.calls)
			d.bytes.Add(s.bytes)
			d.nanos.Add(s.nanos)
			*s = struct {
				calls, bytes uint64
				nanos        int64
			}{}
		}
	}
}
