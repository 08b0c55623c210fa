package runtime

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/gorma-hpc/gorma/internal/trace"
)

// Gathering observation at Finalize. Every rank hands its profile and its dump to the
// gatherer: the lowest rank of Init's World that has not failed. A rank walks the ranks
// from 0 up. It skips those it knows failed, and hands in to the first other one; when
// that one fails meanwhile, it walks on. A rank that meets itself is the gatherer. It
// receives from every rank above it, and names the ranks below it and those that fail
// before handing in as failed.
//
// A hand-in is a head, then the documents. The head holds the two documents' lengths and
// the dump's header (trace.HeaderLen bytes). The gatherer takes every rank's head first:
// the dumps' headers place each rank on the timeline's clock. Then it takes the
// documents rank by rank, and writes each dump to a file as it comes (timeline.add), so
// that it holds one dump at a time. It merges the files at the end of its Finalize, once
// the other ranks have passed the fence and may exit (timeline.merge).
//
// The messages travel on obsCtx, which no World has, by synchronous sends that complete
// only once the gatherer has matched them. So a revoked World, or one with a failed
// member, does not stop them, and a rank never hands in to a peer that died unseen: the
// send waits until the failure is known, then fails with it.

// obsCtx is the context of the gather, beside the control contexts above Split's blocks.
const obsCtx = ctlCtx - 3

// gatherTag is the tag of the gather's messages.
const gatherTag = MaxTag - 21

// maxDoc bounds a gathered document: a dump of the largest flight recorder, or a
// profile of the most ranks.
const maxDoc = 1 << 30

// headLen is the length of a hand-in's head: two lengths and a dump's header.
const headLen = 16 + trace.HeaderLen

// gathered is what the gatherer holds once every rank handed in or failed: the
// profiles by rank of Init's World (nil where none came). The dumps went to the
// timeline's files as they came.
type gathered struct {
	profs   [][]byte
	failed  []int  // ranks that failed before handing in, in order
	missing []int  // ranks that sent nothing for another reason, in order
	why     string // the first such reason
}

// handIn hands this rank's documents to the gatherer, and returns the job's profiles when
// this rank is the gatherer, else nil; the gatherer's tl (nil when the timeline is off)
// takes the dumps. A failure other than the gatherer's is returned: this rank's
// documents are then lost.
func (o *observer) handIn(ctx context.Context, w *World, profDoc, dump []byte, tl *timeline) (*gathered, error) {
	me := w.Rank()
	for c := range w.Size() {
		if c == me {
			return gather(ctx, w, profDoc, dump, tl), nil
		}
		if rankFailed(w, c) {
			continue
		}
		err := sendDocs(ctx, w, c, profDoc, dump)
		if err == nil {
			return nil, nil
		}
		if !rankFailed(w, c) {
			return nil, fmt.Errorf("handing its profile and timeline to rank %d: %w", c, err)
		}
	}
	return nil, errors.New("no rank to hand its profile and timeline to") // unreachable: me is a rank of w
}

// rankFailed reports whether rank r of w is known to have failed.
func rankFailed(w *World, r int) bool {
	e := w.e
	jr, ok := jobRank(w, r)
	if !ok {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if jr >= len(e.links.peers) {
		return false
	}
	p := e.links.peers[jr]
	return p != nil && p.failed != nil
}

// head returns the head of a hand-in of profDoc and dump.
func head(profDoc, dump []byte) []byte {
	h := make([]byte, headLen)
	binary.LittleEndian.PutUint64(h[:8], uint64(len(profDoc)))
	binary.LittleEndian.PutUint64(h[8:], uint64(len(dump)))
	copy(h[16:], dump[:min(len(dump), trace.HeaderLen)])
	return h
}

// sendDocs sends a rank's documents to rank to of w: the head, then each document that
// is not empty.
func sendDocs(ctx context.Context, w *World, to int, profDoc, dump []byte) error {
	e := w.e
	jr, _ := jobRank(w, to)
	for _, b := range [][]byte{head(profDoc, dump), profDoc, dump} {
		if len(b) == 0 {
			continue
		}
		if err := e.ssend(ctx, obsCtx, b, 1, jr, gatherTag); err != nil {
			return err
		}
	}
	return nil
}

// gather receives every other rank's documents at the gatherer, this rank: every head,
// then the documents, rank by rank. tl, when not nil, takes each dump as it comes.
func gather(ctx context.Context, w *World, profDoc, dump []byte, tl *timeline) *gathered {
	me, size := w.Rank(), w.Size()
	g := &gathered{profs: make([][]byte, size)}
	g.profs[me] = profDoc
	for r := range me {
		g.failed = append(g.failed, r) // handIn skipped it, or walked past it
	}
	lost := func(r int, err error) {
		switch {
		case rankFailed(w, r):
			g.failed = append(g.failed, r)
		default:
			g.missing = append(g.missing, r)
			if g.why == "" {
				g.why = err.Error()
			}
		}
	}
	heads := make([][]byte, size)
	heads[me] = head(profDoc, dump)
	for r := me + 1; r < size; r++ {
		var err error
		if heads[r], err = recvHead(ctx, w, r); err != nil {
			lost(r, err)
		}
	}
	tl.begin(heads)
	tl.add(dump)
	for r := me + 1; r < size; r++ {
		if heads[r] == nil {
			continue
		}
		var d []byte
		var err error
		g.profs[r], d, err = recvDocs(ctx, w, r, heads[r])
		if err != nil {
			lost(r, err)
			continue
		}
		tl.add(d)
	}
	return g
}

// recvHead receives the head of rank r of w's hand-in.
func recvHead(ctx context.Context, w *World, r int) ([]byte, error) {
	jr, _ := jobRank(w, r)
	h := make([]byte, headLen)
	if _, err := w.e.recv(ctx, obsCtx, h, 1, jr, gatherTag, false); err != nil {
		return nil, err
	}
	return h, nil
}

// recvDocs receives the documents of rank r of w that its head h announced.
func recvDocs(ctx context.Context, w *World, r int, h []byte) (profDoc, dump []byte, err error) {
	e := w.e
	jr, _ := jobRank(w, r)
	docs := [2][]byte{}
	for i := range docs {
		n := binary.LittleEndian.Uint64(h[8*i:])
		if n == 0 {
			continue
		}
		if n > maxDoc {
			return nil, nil, fmt.Errorf("rank %d sent a document of %d bytes", r, n)
		}
		docs[i] = make([]byte, n)
		if _, err := e.recv(ctx, obsCtx, docs[i], 1, jr, gatherTag, false); err != nil {
			return nil, nil, err
		}
	}
	return docs[0], docs[1], nil
}
