package main

import (
	"errors"
	"fmt"
	"sync"

	gorma "github.com/gorma-hpc/gorma/runtime"
)

// msgPlan is one message of a p2p step.
type msgPlan struct{ n, tag int }

// p2p exchanges 1-4 int64 messages each way between every pair of ranks (and with
// itself), all outstanding at once.
func (e *env) p2p() error { return p2pStep(e, func(v int64) int64 { return v }, 8) }

// p2pBytes is p2p with byte messages of odd lengths.
func (e *env) p2pBytes() error { return p2pStep(e, func(v int64) uint8 { return uint8(v) }, 1) }

// p2pStep: every rank sends plan[s][d] messages from s to d, receives posted before or
// after the sends, from one goroutine or one per peer, with exact tags or AnyTag.
func p2pStep[T gorma.Elem](e *env, conv func(int64) T, esize int) error {
	n := e.size
	plan := make([][][]msgPlan, n)
	anyTag := make([][]bool, n)
	for s := range n {
		plan[s] = make([][]msgPlan, n)
		anyTag[s] = make([]bool, n)
		for d := range n {
			for range 1 + e.rng.IntN(4) {
				plan[s][d] = append(plan[s][d], msgPlan{e.msgLen(esize), e.rng.IntN(3)})
			}
			anyTag[s][d] = e.rng.IntN(4) == 0
		}
	}
	recvFirst := e.rng.IntN(2) == 0
	threaded := e.rng.IntN(2) == 0
	payload := func(s, d, k int) []T {
		b := make([]T, plan[s][d][k].n)
		for i := range b {
			b[i] = conv(e.val(s, d, k, i))
		}
		return b
	}
	// exchange runs this rank's part with peer p.
	exchange := func(p int) error {
		var sends, recvs []*gorma.Request
		var bufs [][]T
		postRecvs := func() error {
			for k, m := range plan[p][e.rank] {
				tag := m.tag
				if anyTag[p][e.rank] {
					tag = gorma.AnyTag
				}
				b := make([]T, m.n)
				r, err := gorma.Irecv(e.w, b, p, tag)
				if err != nil {
					return fmt.Errorf("irecv %d from %d: %w", k, p, err)
				}
				recvs, bufs = append(recvs, r), append(bufs, b)
			}
			return nil
		}
		postSends := func() error {
			for k, m := range plan[e.rank][p] {
				r, err := gorma.Isend(e.w, payload(e.rank, p, k), p, m.tag)
				if err != nil {
					return fmt.Errorf("isend %d to %d: %w", k, p, err)
				}
				sends = append(sends, r)
			}
			return nil
		}
		first, second := postSends, postRecvs
		if recvFirst {
			first, second = postRecvs, postSends
		}
		if err := first(); err != nil {
			return err
		}
		if err := second(); err != nil {
			return err
		}
		for k, r := range recvs {
			st, err := r.Wait(e.ctx)
			if err != nil {
				return fmt.Errorf("recv %d from %d: %w", k, p, err)
			}
			m := plan[p][e.rank][k]
			if st.Source != p || st.Tag != m.tag || st.Count != m.n {
				return e.errorf("recv %d from %d: status %+v, want source %d tag %d count %d", k, p, st, p, m.tag, m.n)
			}
			if err := check(e, fmt.Sprintf("msg %d from %d", k, p), bufs[k], payload(p, e.rank, k)); err != nil {
				return err
			}
		}
		for k, r := range sends {
			if _, err := r.Wait(e.ctx); err != nil {
				return fmt.Errorf("send %d to %d: %w", k, p, err)
			}
		}
		return nil
	}
	if !threaded {
		return e.sequential(exchange)
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for p := range n {
		wg.Go(func() { errs[p] = exchange(p) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// sequential runs exchange for every peer from this goroutine, in a round-robin schedule
// (in round k, rank r pairs with k-r mod n) so that the two ends of a pair meet in the
// same round. An exchange waits for the peer's messages.
func (e *env) sequential(exchange func(p int) error) error {
	n := e.size
	for round := range n {
		p := (round - e.rank + n) % n // pairs (r, p) with r+p = round mod n
		if err := exchange(p); err != nil {
			return err
		}
	}
	return nil
}

// anySource sends one message from every rank to every other; each receives them from
// AnySource (sometimes after Probe) and tells them apart by Status.Source.
func (e *env) anySource() error {
	n := e.size
	lens := make([][]int, n)
	for s := range n {
		lens[s] = make([]int, n)
		for d := range n {
			lens[s][d] = e.msgLen(8)
		}
	}
	probe := e.rng.IntN(2) == 0
	tag := 100 + e.rng.IntN(100)
	var sends []*gorma.Request
	for d := range n {
		if d == e.rank {
			continue
		}
		b := make([]int64, lens[e.rank][d])
		for i := range b {
			b[i] = e.val(e.rank, d, 0, i)
		}
		r, err := gorma.Isend(e.w, b, d, tag)
		if err != nil {
			return err
		}
		sends = append(sends, r)
	}
	maxLen := 0
	for s := range n {
		maxLen = max(maxLen, lens[s][e.rank])
	}
	seen := make([]bool, n)
	for range n - 1 {
		buf := make([]int64, maxLen)
		if probe {
			st, err := gorma.Probe(e.ctx, e.w, gorma.AnySource, tag)
			if err != nil {
				return fmt.Errorf("probe: %w", err)
			}
			if st.Source < 0 || st.Source >= n || st.Bytes != 8*lens[st.Source][e.rank] {
				return e.errorf("probe status %+v", st)
			}
			buf = buf[:gorma.CountOf[int64](st)]
		}
		st, err := gorma.Recv(e.ctx, e.w, buf, gorma.AnySource, tag)
		if err != nil {
			return fmt.Errorf("recv any: %w", err)
		}
		s := st.Source
		if s < 0 || s >= n || s == e.rank || seen[s] || st.Tag != tag || st.Count != lens[s][e.rank] {
			return e.errorf("anysource status %+v (seen %v)", st, seen)
		}
		seen[s] = true
		want := make([]int64, lens[s][e.rank])
		for i := range want {
			want[i] = e.val(s, e.rank, 0, i)
		}
		if err := check(e, fmt.Sprintf("anysource from %d", s), buf[:st.Count], want); err != nil {
			return err
		}
	}
	for _, r := range sends {
		if _, err := r.Wait(e.ctx); err != nil {
			return err
		}
	}
	return nil
}

// check compares got with want element by element.
func check[T comparable](e *env, what string, got, want []T) error {
	if len(got) != len(want) {
		return e.errorf("%s: %d elements, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			return e.errorf("%s: element %d of %d is %v, want %v", what, i, len(got), got[i], want[i])
		}
	}
	e.checked.Add(int64(len(got)))
	return nil
}
