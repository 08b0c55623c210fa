package arena

import "sync/atomic"

// Remote is a peer's mapping of another process's arena. It stays mapped until Close, so
// the owner's lazily unmapped memory stays faulted in here too.
type Remote struct {
	seg *Segment
	hdr *header
	tab *Table
}

// Attach maps the arena described by d and checks its header.
func Attach(d SegmentDesc) (*Remote, error) {
	seg, err := MapSegment(d)
	if err != nil {
		return nil, err
	}
	hdr, err := readHeader(seg.Bytes())
	if err != nil {
		seg.Close()
		return nil, err
	}
	return &Remote{seg: seg, hdr: hdr, tab: hdr.table()}, nil
}

// Table is the remote arena's key table.
func (r *Remote) Table() *Table { return r.tab }

// Bytes is the remote arena's whole mapping.
func (r *Remote) Bytes() []byte { return r.seg.Bytes() }

// Desc is the description the remote arena was attached with.
func (r *Remote) Desc() SegmentDesc { return r.seg.Desc() }

// Doorbell returns the remote arena's doorbell words.
func (r *Remote) Doorbell() (seq, waiters *atomic.Uint32) { return r.hdr.seq, r.hdr.waiters }

// Close unmaps the remote arena.
func (r *Remote) Close() error { return r.seg.Close() }
