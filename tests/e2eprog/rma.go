package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/window"
)

// winModel is a window and the model of every rank's memory in it. Rank t's memory is
// split into Size() lanes of lane(t) elements, lane o written only by origin o, then a
// counter area that every origin accumulates into with Sum.
type winModel struct {
	name  string
	win   *window.Win[int64]
	lens  []int
	model [][]int64
}

func (m *winModel) lane(t int) int  { return m.lens[t] / (len(m.lens) + 1) }
func (m *winModel) chunk(t int) int { return m.lane(t) / 4 }

// newModel makes the model of win, whose rank t holds lens[t] elements, and sets every
// rank's memory to a known pattern (published by the Fence the caller runs next).
func (e *env) newModel(name string, win *window.Win[int64], lens []int) *winModel {
	m := &winModel{name: name, win: win, lens: lens, model: make([][]int64, e.size)}
	for t := range e.size {
		m.model[t] = make([]int64, lens[t])
		for i := range m.model[t] {
			m.model[t][i] = e.val(-1, t, len(name), i)
		}
	}
	copy(win.Local(), m.model[e.rank])
	return m
}

// setup makes the long-lived windows (Allocate and Create) and the Allreduce Worlds.
func (e *env) setup() error {
	a, err := window.Allocate[int64](e.ctx, e.w, 2048)
	if err != nil {
		return fmt.Errorf("allocate: %w", err)
	}
	lens := make([]int, e.size)
	for t := range lens {
		lens[t] = 1024 + 96*t
	}
	c, err := window.Create(e.ctx, e.w, make([]int64, lens[e.rank]))
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	all := make([]int, e.size)
	for t := range all {
		all[t] = 2048
	}
	e.wins = []*winModel{e.newModel("allocate", a, all), e.newModel("create", c, lens)}
	for _, m := range e.wins {
		if err := m.win.Fence(e.ctx, window.NoSucceed); err != nil {
			return err
		}
	}
	return e.setupAlgs()
}

// teardown frees the windows.
func (e *env) teardown() error {
	for _, m := range e.wins {
		if err := m.win.Free(e.ctx); err != nil {
			return fmt.Errorf("free %s: %w", m.name, err)
		}
	}
	return nil
}

// rmaOp is one drawn operation of origin o on target t.
type rmaOp struct {
	kind    string // put, acc, getacc, cas, fop, cacc (counter accumulate), cfop
	o, t    int
	disp    int
	origin  []int64
	op      int     // index into accOps
	cmp     int64   // cas
	want    []int64 // expected fetched values (getacc, cas, fop)
	request bool    // passive epochs: the request-based form
	stack   bool    // passive epochs: origin on the stack, which grows before the flush
}

// accOps are the accumulate operators with their model.
var accOps = []struct {
	op    collectives.Op[int64]
	apply func(old, v int64) int64
}{
	{collectives.Sum[int64](), func(o, v int64) int64 { return o + v }},
	{collectives.Bxor[int64](), func(o, v int64) int64 { return o ^ v }},
	{collectives.Max[int64](), func(o, v int64) int64 { return max(o, v) }},
	{collectives.Replace[int64](), func(o, v int64) int64 { return v }},
	{collectives.NoOp[int64](), func(o, v int64) int64 { return o }},
}

// drawOps draws origin o's operations on target t (and applies them to the model): one
// or none in each chunk of o's lane, and some counter accumulates. passive allows the
// request-based and stack forms.
func (e *env) drawOps(m *winModel, o, t int, passive bool) []rmaOp {
	var ops []rmaOp
	mod := m.model[t]
	ch := m.chunk(t)
	for c := range 4 {
		if e.rng.IntN(3) == 0 {
			continue
		}
		start := o*m.lane(t) + c*ch
		off := e.rng.IntN(ch / 2)
		cnt := 1 + e.rng.IntN(ch-off)
		op := rmaOp{o: o, t: t, disp: start + off}
		vals := func(k int) []int64 {
			v := make([]int64, k)
			for i := range v {
				v[i] = e.val(o, t, 1000*c+op.disp, i) % 1000
			}
			return v
		}
		switch k := e.rng.IntN(6); k {
		case 0, 1:
			op.kind, op.origin = "put", vals(cnt)
			op.stack = passive && cnt <= 16 && e.rng.IntN(2) == 0
		case 2:
			op.kind, op.origin, op.op = "acc", vals(cnt), e.rng.IntN(4)
		case 3:
			op.kind, op.origin, op.op = "getacc", vals(cnt), e.rng.IntN(5)
		case 4:
			op.kind, op.origin = "cas", vals(1)
			op.cmp = mod[op.disp] + int64(e.rng.IntN(2)) // equal: swap; else: no swap
		case 5:
			op.kind, op.origin, op.op = "fop", vals(1), e.rng.IntN(5)
		}
		op.request = passive && (op.kind == "put" || op.kind == "acc" || op.kind == "getacc") && !op.stack && e.rng.IntN(3) == 0
		op.want = append([]int64(nil), mod[op.disp:op.disp+len(op.origin)]...)
		switch op.kind {
		case "put":
			copy(mod[op.disp:], op.origin)
		case "cas":
			if mod[op.disp] == op.cmp {
				mod[op.disp] = op.origin[0]
			}
		default:
			for i, v := range op.origin {
				mod[op.disp+i] = accOps[op.op].apply(mod[op.disp+i], v)
			}
		}
		ops = append(ops, op)
	}
	cbase := len(m.lens) * m.lane(t)
	for range e.rng.IntN(4) {
		cnt := 1 + e.rng.IntN(8)
		disp := cbase + e.rng.IntN(len(mod)-cbase-cnt)
		op := rmaOp{kind: "cacc", o: o, t: t, disp: disp, origin: make([]int64, cnt)}
		if e.rng.IntN(3) == 0 {
			op.kind, op.origin = "cfop", op.origin[:1]
		}
		for i := range op.origin {
			op.origin[i] = int64(1 + e.rng.IntN(100))
			mod[disp+i] += op.origin[i]
		}
		ops = append(ops, op)
	}
	return ops
}

// pending is an issued operation whose fetched result is checked after completion.
type pending struct {
	op  rmaOp
	res []int64
	req *window.Request
}

// issue starts op at this rank; flush is called by the stack form before it returns.
func (e *env) issue(m *winModel, op rmaOp, flush func() error) (pending, error) {
	w := m.win
	p := pending{op: op}
	var err error
	origin := append([]int64(nil), op.origin...) // dropped once issued: the window's
	switch op.kind {
	case "put":
		switch {
		case op.stack:
			err = putFromStack(w, origin, op.t, op.disp, flush)
		case op.request:
			p.req, err = w.Rput(origin, op.t, op.disp)
		default:
			err = w.Put(origin, op.t, op.disp)
		}
	case "acc", "cacc":
		a := accOps[op.op].op
		if op.kind == "cacc" {
			a = accOps[0].op
		}
		if op.request {
			p.req, err = w.Raccumulate(origin, op.t, op.disp, a)
		} else {
			err = w.Accumulate(origin, op.t, op.disp, a)
		}
	case "getacc":
		p.res = make([]int64, len(origin))
		if op.request {
			p.req, err = w.RgetAccumulate(origin, p.res, op.t, op.disp, accOps[op.op].op)
		} else {
			err = w.GetAccumulate(origin, p.res, op.t, op.disp, accOps[op.op].op)
		}
	case "cas":
		p.res = make([]int64, 1)
		err = w.CompareAndSwap(origin[0], op.cmp, &p.res[0], op.t, op.disp)
	case "fop", "cfop":
		p.res = make([]int64, 1)
		a := collectives.Sum[int64]()
		if op.kind == "fop" {
			a = accOps[op.op].op
		}
		err = w.FetchAndOp(origin[0], &p.res[0], op.t, op.disp, a)
	}
	if err != nil {
		return p, fmt.Errorf("%s %s to %d disp %d len %d: %w", m.name, op.kind, op.t, op.disp, len(op.origin), err)
	}
	e.maybeGC()
	return p, nil
}

// putFromStack puts vals from an array on this goroutine's stack, grows the stack (which
// moves it) and flushes, all before the array goes out of scope.
func putFromStack(w *window.Win[int64], vals []int64, t, disp int, flush func() error) error {
	var a [16]int64
	n := copy(a[:], vals)
	if err := w.Put(a[:n], t, disp); err != nil {
		return err
	}
	a[0]++ // the buffer is the window's until the flush: this would be a program error...
	a[0]-- // ...had it changed the value; it did not
	growStack(200)
	return flush()
}

//go:noinline
func growStack(depth int) int {
	var pad [256]byte
	pad[depth%256] = byte(depth)
	if depth == 0 {
		return int(pad[0])
	}
	return growStack(depth-1) + int(pad[depth%256])
}

// finish waits for the requests of ps and checks their fetched values.
func (e *env) finish(ctx context.Context, m *winModel, ps []pending) error {
	for _, p := range ps {
		if p.req != nil {
			if err := p.req.Wait(ctx); err != nil {
				return fmt.Errorf("%s %s request: %w", m.name, p.op.kind, err)
			}
		}
	}
	for _, p := range ps {
		switch p.op.kind {
		case "getacc", "cas", "fop":
			if err := check(e, fmt.Sprintf("%s %s fetched from %d disp %d", m.name, p.op.kind, p.op.t, p.op.disp), p.res, p.op.want); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkLocal compares this rank's window memory with the model.
func (e *env) checkLocal(m *winModel, when string) error {
	return check(e, fmt.Sprintf("%s local memory after %s", m.name, when), m.win.Local(), m.model[e.rank])
}

// draws is every origin's drawn operations, by origin and target.
type draws [][][]rmaOp

// drawAll draws the operations of every origin on the targets that access(o, t) allows.
func (e *env) drawAll(m *winModel, passive bool, access func(o, t int) bool) draws {
	d := make(draws, e.size)
	for o := range e.size {
		d[o] = make([][]rmaOp, e.size)
		for t := range e.size {
			if access(o, t) {
				d[o][t] = e.drawOps(m, o, t, passive)
			}
		}
	}
	return d
}

// readBack draws some ranges of every rank's memory for this rank to Get, and returns
// them with their expected contents.
func (e *env) readBack(m *winModel) (targets, disps []int, want [][]int64) {
	for range 1 + e.rng.IntN(3) {
		for o := range e.size {
			t := e.rng.IntN(e.size)
			cnt := 1 + e.rng.IntN(m.lens[t])
			disp := e.rng.IntN(m.lens[t] - cnt + 1)
			if o == e.rank {
				targets, disps = append(targets, t), append(disps, disp)
				want = append(want, append([]int64(nil), m.model[t][disp:disp+cnt]...))
			}
		}
	}
	return targets, disps, want
}

// pickWin draws which long-lived window a step uses.
func (e *env) pickWin() *winModel { return e.wins[e.rng.IntN(len(e.wins))] }
