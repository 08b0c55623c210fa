package launcher

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// The job's spec on the wire (fJob, fTreeSpec). Its roster and control addresses grow
// with the job's hosts, and every agent decodes them, so they travel in binary; the rest
// of the spec is JSON:
//
//	spec   = jsonLen json roster addrs
//	roster = size hostCount (nameLen name)... runCount (host ranks)...
//	addrs  = addrCount (addrLen addr)...
//
// every integer an unsigned LEB128 varint. json is the spec without its roster and its
// addresses; the runs are the roster's ranks in order, as runs of ranks on one host
// (rosterWire's). No addresses (addrCount 0) decode to nil.

// MarshalBinary encodes s as the spec frames carry it.
func (s jobSpec) MarshalBinary() ([]byte, error) {
	roster, addrs := s.Roster, s.Addrs
	s.Roster, s.Addrs = Roster{}, nil
	js, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	p := binary.AppendUvarint(nil, uint64(len(js)))
	p = append(p, js...)
	p = binary.AppendUvarint(p, uint64(roster.Size))
	p = appendStrings(p, roster.Hosts)
	runs := roster.runs()
	p = binary.AppendUvarint(p, uint64(len(runs)/2))
	for _, v := range runs {
		p = binary.AppendUvarint(p, uint64(v))
	}
	return appendStrings(p, addrs), nil
}

// UnmarshalBinary decodes a spec frame's body into s. jobSpec.check still applies.
func (s *jobSpec) UnmarshalBinary(p []byte) error {
	d := specDecoder{p: p}
	js := d.bytes(maxFrame, "spec's JSON")
	if d.err != nil {
		return d.err
	}
	var out jobSpec
	if err := json.Unmarshal(js, &out); err != nil {
		return fmt.Errorf("job spec: %w", err)
	}
	size := int(d.uint(maxWireRanks, "rank count"))
	hosts := d.strings(maxWireRanks, "host names")
	nruns := d.uint(maxWireRanks, "run count")
	var runs []int
	if d.err == nil && nruns <= uint64(len(d.p)/2) { // a run takes at least two bytes
		runs = make([]int, 0, 2*nruns)
		for range nruns {
			runs = append(runs, int(d.uint(maxWireRanks, "run's host")), int(d.uint(maxWireRanks, "run's length")))
		}
	} else if d.err == nil {
		d.err = fmt.Errorf("job spec: %d runs in %d bytes", nruns, len(d.p))
	}
	addrs := d.strings(maxWireRanks, "addresses")
	if d.err != nil {
		return d.err
	}
	if len(d.p) != 0 {
		return fmt.Errorf("job spec: %d bytes after its addresses", len(d.p))
	}
	r, err := rosterFromRuns(size, hosts, runs)
	if err != nil {
		return err
	}
	out.Roster, out.Addrs = r, addrs
	*s = out
	return nil
}

// appendStrings appends the count of ss and each one, its length first.
func appendStrings(p []byte, ss []string) []byte {
	p = binary.AppendUvarint(p, uint64(len(ss)))
	for _, s := range ss {
		p = binary.AppendUvarint(p, uint64(len(s)))
		p = append(p, s...)
	}
	return p
}

// specDecoder reads a spec frame's varints and strings; the first error sticks.
type specDecoder struct {
	p   []byte
	err error
}

// uint reads a varint of at most max; what names it in an error.
func (d *specDecoder) uint(max uint64, what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.p)
	if n <= 0 || v > max {
		d.err = fmt.Errorf("job spec: bad %s", what)
		return 0
	}
	d.p = d.p[n:]
	return v
}

// bytes reads a length of at most max and that many bytes.
func (d *specDecoder) bytes(max uint64, what string) []byte {
	n := d.uint(max, what)
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.p)) {
		d.err = fmt.Errorf("job spec: a %s of %d bytes in %d", what, n, len(d.p))
		return nil
	}
	b := d.p[:n]
	d.p = d.p[n:]
	return b
}

// strings reads a count of at most max and that many strings; a count of 0 is nil.
// The strings share one allocation.
func (d *specDecoder) strings(max uint64, what string) []string {
	n := d.uint(max, what)
	if d.err != nil || n == 0 {
		return nil
	}
	if n > uint64(len(d.p)) { // a string takes at least a byte
		d.err = fmt.Errorf("job spec: %d of %s in %d bytes", n, what, len(d.p))
		return nil
	}
	start := d.p
	ends := make([][2]int, 0, n) // each string's offsets in start
	for range n {
		b := d.bytes(maxFrame, what)
		if d.err != nil {
			return nil
		}
		off := len(start) - len(d.p) - len(b)
		ends = append(ends, [2]int{off, off + len(b)})
	}
	all := string(start[:len(start)-len(d.p)])
	out := make([]string, len(ends))
	for i, e := range ends {
		out[i] = all[e[0]:e[1]]
	}
	return out
}
