package prof

import "time"

// Local holds counts that one owner adds to with plain adds rather than atomic ones: a
// rank's engine under its lock, a World's collectives while a call holds its state.
// Counters.Fold adds them into the Counters. A Local must be used by one goroutine at a
// time; a nil *Local records nothing. Its arrays are made at the first count of their
// kind, so that an owner that counts little costs little.
type Local struct {
	c     *Counters // the counters it folds into, which sized it
	links [NumTraffic]struct{ bytes, msgs []uint64 }
	hist  []uint64 // size*HistBins, point-to-point only
	calls [NumCalls]localCall
}

// localCall is one call kind's counts in a Local.
type localCall struct {
	calls, bytes uint64
	nanos        int64
}

// NewLocal returns a Local for c's job, nil when c is nil.
func (c *Counters) NewLocal() *Local {
	if c == nil {
		return nil
	}
	return &Local{c: c}
}

// Send is Counters.Send.
func (l *Local) Send(peer, n int) {
	if l == nil {
		return
	}
	l.add(P2P, peer, n)
	if l.hist == nil {
		l.hist = make([]uint64, l.c.size*HistBins)
	}
	l.hist[peer*HistBins+Bin(uint64(n))]++
}

// Coll is Counters.Coll.
func (l *Local) Coll(peer, n int) {
	if l != nil {
		l.add(Coll, peer, n)
	}
}

func (l *Local) add(t Traffic, peer, n int) {
	k := &l.links[t]
	if k.bytes == nil {
		k.bytes, k.msgs = make([]uint64, l.c.size), make([]uint64, l.c.size)
	}
	k.bytes[peer] += uint64(n)
	k.msgs[peer]++
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

// Fold adds l's counts into the counters it was made for and zeroes them. The caller
// holds what guards l.
func (c *Counters) Fold(l *Local) {
	if c == nil || l == nil || l.c != c {
		return
	}
	for t := range l.links {
		k := &l.links[t]
		for p := range k.bytes {
			if k.msgs[p] != 0 || k.bytes[p] != 0 {
				d := &c.links[t][p]
				d.bytes.Add(k.bytes[p])
				d.msgs.Add(k.msgs[p])
				k.bytes[p], k.msgs[p] = 0, 0
			}
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
		if *s != (localCall{}) {
			d.calls.Add(s.calls)
			d.bytes.Add(s.bytes)
			d.nanos.Add(s.nanos)
			*s = localCall{}
		}
	}
}
