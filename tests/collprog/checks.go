package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

// tester runs the checks of one rank. Every rank makes the same calls in the same order,
// so the sequence numbers (seq) agree across ranks.
type tester struct {
	ctx   context.Context
	w     *runtime.World
	me, p int
	seq   int
}

// next returns the sequence number of a new call.
func (t *tester) next() int { t.seq++; return t.seq }

// reductions checks Allreduce, Reduce (root rotating) and ReduceScatter with k's operator
// on n elements (per rank; per block for ReduceScatter).
func reductions[T runtime.Elem](t *tester, k kind[T], n int, inPlace bool) error {
	if err := allreduce(t, k, n, inPlace); err != nil {
		return err
	}
	if err := reduce(t, k, n, inPlace); err != nil {
		return err
	}
	if err := reduceScatter(t, k, n, inPlace); err != nil {
		return err
	}
	if err := scan(t, k, n, false); err != nil {
		return err
	}
	return scan(t, k, n, true)
}

// scan checks Scan (Exscan when exclusive): rank r gets x0 ∘ ... ∘ xr (x(r-1) for
// Exscan, whose rank 0 keeps its recv as it was).
func scan[T runtime.Elem](t *tester, k kind[T], n int, exclusive bool) error {
	seq := t.next()
	name, f := "Scan", collectives.Scan[T]
	if exclusive {
		name, f = "Exscan", collectives.Exscan[T]
	}
	what := describe(name, k.name, n, false, seq)
	send, recv := inputs(k, t.me, 0, n, seq), make([]T, n)
	poison(k, recv)
	if err := f(t.ctx, t.w, send, recv, k.op); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := unchanged(what, k, send, t.me, 0, seq); err != nil {
		return err
	}
	upto := t.me + 1
	if exclusive {
		upto = t.me
	}
	if upto == 0 {
		return check(what, recv, func(int) T { return k.poison() })
	}
	return check(what, recv, func(i int) T { return k.reduced(upto, i, seq) })
}

// movements checks Bcast (root rotating), Allgather and Alltoall on n elements (per rank
// or per block) of k's type.
func movements[T runtime.Elem](t *tester, k kind[T], n int, inPlace bool) error {
	if err := bcast(t, k, n, inPlace); err != nil {
		return err
	}
	if err := allgather(t, k, n, inPlace); err != nil {
		return err
	}
	if err := gather(t, k, n, inPlace); err != nil {
		return err
	}
	if err := scatter(t, k, n, inPlace); err != nil {
		return err
	}
	return alltoall(t, k, n, inPlace)
}

// gather: root's recv holds every rank's n elements in rank order (root rotating).
func gather[T runtime.Elem](t *tester, k kind[T], n int, inPlace bool) error {
	seq := t.next()
	root := seq % t.p
	what := describe(fmt.Sprintf("Gather to %d", root), k.name, n, inPlace, seq)
	send := inputs(k, t.me, 0, n, seq)
	var recv []T
	var err error
	switch {
	case t.me != root:
		err = collectives.Gather(t.ctx, t.w, send, nil, root)
	case inPlace:
		recv = make([]T, t.p*n)
		poison(k, recv)
		copy(recv[root*n:], send)
		err = collectives.Gather(t.ctx, t.w, nil, recv, root)
	default:
		recv = make([]T, t.p*n)
		poison(k, recv)
		err = collectives.Gather(t.ctx, t.w, send, recv, root)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := unchanged(what, k, send, t.me, 0, seq); err != nil {
		return err
	}
	if t.me != root {
		return nil
	}
	n1 := max(n, 1)
	return check(what, recv, func(i int) T { return k.input(i/n1, i%n1, seq) })
}

// scatter: rank r gets block r of root's p*n elements (root rotating; root's send holds
// its own values).
func scatter[T runtime.Elem](t *tester, k kind[T], n int, inPlace bool) error {
	seq := t.next()
	root := (seq + 1) % t.p
	what := describe(fmt.Sprintf("Scatter from %d", root), k.name, n, inPlace, seq)
	var send, recv []T
	if t.me == root {
		send = inputs(k, root, 0, t.p*n, seq)
	}
	var err error
	if t.me == root && inPlace {
		err = collectives.Scatter(t.ctx, t.w, send, nil, root)
		recv = send[root*n : (root+1)*n]
	} else {
		recv = make([]T, n)
		poison(k, recv)
		err = collectives.Scatter(t.ctx, t.w, send, recv, root)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if t.me == root {
		if err := unchanged(what, k, send, root, 0, seq); err != nil {
			return err
		}
	}
	return check(what, recv, func(i int) T { return k.input(root, t.me*n+i, seq) })
}

func allreduce[T runtime.Elem](t *tester, k kind[T], n int, inPlace bool) error {
	seq := t.next()
	what := describe("Allreduce", k.name, n, inPlace, seq)
	send, recv := inputs(k, t.me, 0, n, seq), make([]T, n)
	var err error
	if inPlace {
		copy(recv, send)
		err = collectives.Allreduce(t.ctx, t.w, nil, recv, k.op)
	} else {
		poison(k, recv)
		err = collectives.Allreduce(t.ctx, t.w, send, recv, k.op)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := unchanged(what, k, send, t.me, 0, seq); err != nil {
		return err
	}
	return check(what, recv, func(i int) T { return k.reduced(t.p, i, seq) })
}

func reduce[T runtime.Elem](t *tester, k kind[T], n int, inPlace bool) error {
	seq := t.next()
	root := seq % t.p
	what := describe(fmt.Sprintf("Reduce to %d", root), k.name, n, inPlace, seq)
	send := inputs(k, t.me, 0, n, seq)
	var recv []T
	var err error
	switch {
	case t.me != root:
		err = collectives.Reduce(t.ctx, t.w, send, nil, k.op, root)
	case inPlace:
		recv = append([]T{}, send...)
		err = collectives.Reduce(t.ctx, t.w, nil, recv, k.op, root)
	default:
		recv = make([]T, n)
		poison(k, recv)
		err = collectives.Reduce(t.ctx, t.w, send, recv, k.op, root)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := unchanged(what, k, send, t.me, 0, seq); err != nil {
		return err
	}
	if t.me != root {
		return nil
	}
	return check(what, recv, func(i int) T { return k.reduced(t.p, i, seq) })
}

// reduceScatter: every rank contributes p*n elements; rank r gets block r of the result.
func reduceScatter[T runtime.Elem](t *tester, k kind[T], n int, inPlace bool) error {
	seq := t.next()
	what := describe("ReduceScatter", k.name, n, inPlace, seq)
	send := inputs(k, t.me, 0, t.p*n, seq)
	var recv []T
	var err error
	if inPlace {
		recv = append([]T{}, send...)
		err = collectives.ReduceScatter(t.ctx, t.w, nil, recv, k.op)
		recv = recv[:n]
	} else {
		recv = make([]T, n)
		poison(k, recv)
		err = collectives.ReduceScatter(t.ctx, t.w, send, recv, k.op)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := unchanged(what, k, send, t.me, 0, seq); err != nil {
		return err
	}
	return check(what, recv, func(i int) T { return k.reduced(t.p, t.me*n+i, seq) })
}

// bcast has no in-place variant (the buffer is always both): both rounds of a count run
// the same check, from different roots (the root follows the sequence number).
func bcast[T runtime.Elem](t *tester, k kind[T], n int, _ bool) error {
	seq := t.next()
	root := seq % t.p
	what := fmt.Sprintf("Bcast from %d %s, %d elements (call %d)", root, k.name, n, seq)
	buf := make([]T, n)
	if t.me == root {
		buf = inputs(k, root, 0, n, seq)
	} else {
		poison(k, buf)
	}
	if err := collectives.Bcast(t.ctx, t.w, buf, root); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return check(what, buf, func(i int) T { return k.input(root, i, seq) })
}

// allgather: rank r's block of recv is rank r's n elements.
func allgather[T runtime.Elem](t *tester, k kind[T], n int, inPlace bool) error {
	seq := t.next()
	what := describe("Allgather", k.name, n, inPlace, seq)
	send, recv := inputs(k, t.me, 0, n, seq), make([]T, t.p*n)
	poison(k, recv)
	var err error
	if inPlace {
		copy(recv[t.me*n:], send)
		err = collectives.Allgather(t.ctx, t.w, nil, recv)
	} else {
		err = collectives.Allgather(t.ctx, t.w, send, recv)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := unchanged(what, k, send, t.me, 0, seq); err != nil {
		return err
	}
	return check(what, recv, func(i int) T { return k.input(i/max(n, 1), i%max(n, 1), seq) })
}

// alltoall: rank s's element d*n+i goes to rank d's element s*n+i.
func alltoall[T runtime.Elem](t *tester, k kind[T], n int, inPlace bool) error {
	seq := t.next()
	what := describe("Alltoall", k.name, n, inPlace, seq)
	send := inputs(k, t.me, 0, t.p*n, seq)
	var recv []T
	var err error
	if inPlace {
		recv = append([]T{}, send...)
		err = collectives.Alltoall(t.ctx, t.w, nil, recv)
	} else {
		recv = make([]T, t.p*n)
		poison(k, recv)
		err = collectives.Alltoall(t.ctx, t.w, send, recv)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := unchanged(what, k, send, t.me, 0, seq); err != nil {
		return err
	}
	n1 := max(n, 1)
	return check(what, recv, func(j int) T { return k.input(j/n1, t.me*n+j%n1, seq) })
}

// inputs returns rank's elements [from, from+n) of call seq.
func inputs[T runtime.Elem](k kind[T], rank, from, n, seq int) []T {
	v := make([]T, n)
	for i := range v {
		v[i] = k.input(rank, from+i, seq)
	}
	return v
}

func poison[T runtime.Elem](k kind[T], v []T) {
	for i := range v {
		v[i] = k.poison()
	}
}

// unchanged checks that a call only read its send buffer.
func unchanged[T runtime.Elem](what string, k kind[T], send []T, rank, from, seq int) error {
	return check(what+": send buffer", send, func(i int) T { return k.input(rank, from+i, seq) })
}

// check compares got with want element by element and names the first difference.
func check[T runtime.Elem](what string, got []T, want func(i int) T) error {
	for i, g := range got {
		if w := want(i); g != w {
			return fmt.Errorf("%s: element %d of %d is %v, want %v", what, i, len(got), g, w)
		}
	}
	return nil
}

func describe(coll, kind string, n int, inPlace bool, seq int) string {
	v := "not in place"
	if inPlace {
		v = "in place"
	}
	return fmt.Sprintf("%s %s, %d elements, %s (call %d)", coll, kind, n, v, seq)
}
