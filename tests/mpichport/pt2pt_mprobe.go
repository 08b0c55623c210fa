package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/runtime"
)

func init() {
	register("pt2pt-mprobe", "pt2pt/mprobe.c", 2, ptMprobe)
}

// ptMprobe: rank 0 sends rank 1 two int32s with tag 5 four times, which rank 1 takes
// with Mprobe or Improbe (polled until found) and receives with Mrecv or Imrecv (waited
// for). Each probe's status names source 0, tag 5 and 2 elements, each receive the data.
// Mprobe and Improbe from ProcNull find a message of nothing (source ProcNull, tag
// AnyTag) whose Mrecv, or Imrecv completing at the first Test, leaves the buffer alone.
// Then an Ssend, a 512x512 int32 Send, a vector (2 blocks of 1, stride 4) and a
// 512-block vector (511 of each row of 512), each Mprobed and Mrecvd. gorma has no Mrecv
// with a datatype: the vector messages are Mrecvd as packed bytes and unpacked with
// datatype.Unpack, which is what MPI_Mrecv with the type does.
func ptMprobe(ctx context.Context, w *runtime.World) error {
	const dim = 512
	const large = dim * dim
	a, b := int32(-559038737), int32(-17958194) // 0xdeadbeef, 0xfeedface
	rank := w.Rank()
	if rank >= 2 {
		return nil
	}
	probeCheck := func(what string, st runtime.Status, src, tag, bytes int) error {
		if st.Source != src || st.Tag != tag || st.Bytes != bytes {
			return fmt.Errorf("%s: status source %d tag %d bytes %d; want %d %d %d", what, st.Source, st.Tag, st.Bytes, src, tag, bytes)
		}
		return nil
	}
	// take probes one message from src with Mprobe or Improbe.
	take := func(what string, src int, improbe bool) (*runtime.Message, runtime.Status, error) {
		if !improbe {
			return runtime.Mprobe(ctx, w, src, 5)
		}
		for {
			m, ok, st, err := runtime.Improbe(w, src, 5)
			if err != nil || ok {
				return m, st, err
			}
			if m != nil {
				return nil, st, fmt.Errorf("%s: improbe found nothing but returned a message", what)
			}
		}
	}
	// recv receives m into buf with Mrecv or Imrecv; testOnce: Imrecv must complete at
	// its first Test.
	recv := func(what string, m *runtime.Message, buf []int32, imrecv, testOnce bool) (runtime.Status, error) {
		if !imrecv {
			return runtime.Mrecv(ctx, m, buf)
		}
		r, err := runtime.Imrecv(m, buf)
		if err != nil {
			return runtime.Status{}, err
		}
		if r == nil {
			return runtime.Status{}, fmt.Errorf("%s: imrecv gave no request", what)
		}
		if testOnce {
			ok, st, err := r.Test()
			if err == nil && !ok {
				err = fmt.Errorf("%s: imrecv of a message from ProcNull not complete at its first test", what)
			}
			return st, err
		}
		return r.Wait(ctx)
	}
	recvbuf := make([]int32, large)
	for i, mode := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
		what := fmt.Sprintf("round %d (improbe %v, imrecv %v)", i, mode[0], mode[1])
		if rank == 0 {
			if err := runtime.Send(ctx, w, []int32{a, b}, 1, 5); err != nil {
				return err
			}
			continue
		}
		m, st, err := take(what, 0, mode[0])
		if err != nil {
			return err
		}
		if err := probeCheck(what+": probe", st, 0, 5, 8); err != nil {
			return err
		}
		recvbuf[0], recvbuf[1] = 0x01234567, -1985229329
		if st, err = recv(what, m, recvbuf[:runtime.CountOf[int32](st)], mode[1], false); err != nil {
			return err
		}
		if err := first(probeCheck(what+": receive", st, 0, 5, 8), same(what, recvbuf[:2], []int32{a, b})); err != nil {
			return err
		}
	}
	for i, mode := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
		what := fmt.Sprintf("ProcNull round %d (improbe %v, imrecv %v)", i, mode[0], mode[1])
		m, st, err := take(what, runtime.ProcNull, mode[0])
		if err != nil {
			return err
		}
		if err := probeCheck(what+": probe", st, runtime.ProcNull, runtime.AnyTag, 0); err != nil {
			return err
		}
		recvbuf[0], recvbuf[1] = 0x01234567, -1985229329
		if st, err = recv(what, m, recvbuf[:0], mode[1], true); err != nil {
			return err
		}
		if err := first(probeCheck(what+": receive", st, runtime.ProcNull, runtime.AnyTag, 0),
			same(what+": buffer", recvbuf[:2], []int32{0x01234567, -1985229329})); err != nil {
			return err
		}
	}
	// One message Mprobed and Mrecvd: check the status and the bytes received.
	one := func(what string, bytes int, into []int32) error {
		m, st, err := runtime.Mprobe(ctx, w, 0, 5)
		if err != nil {
			return err
		}
		if err := probeCheck(what+": probe", st, 0, 5, bytes); err != nil {
			return err
		}
		if st, err = runtime.Mrecv(ctx, m, into); err != nil {
			return err
		}
		return probeCheck(what+": receive", st, 0, 5, bytes)
	}
	if rank == 0 {
		if err := runtime.Ssend(ctx, w, []int32{a, b}, 1, 5); err != nil {
			return err
		}
	} else {
		if err := first(one("ssend", 8, recvbuf[:2]), same("ssend", recvbuf[:2], []int32{a, b})); err != nil {
			return err
		}
	}
	iota := seq(large, func(i int) int32 { return int32(i) })
	if rank == 0 {
		if err := runtime.Send(ctx, w, iota, 1, 5); err != nil {
			return err
		}
	} else {
		copy(recvbuf, fill(large, int32(-1)))
		if err := first(one("large", 4*large, recvbuf), same("large", recvbuf, iota)); err != nil {
			return err
		}
	}
	for _, v := range []struct {
		name                    string
		count, blocklen, stride int
		src, want               []int32
	}{
		{"vector of 2", 2, 1, 4, []int32{a, 0, 0, 0, b, 0, 0, 0}, []int32{a, 0, 0, 0, b, 0, 0, 0}},
		{"vector of 512 rows", dim, dim - 1, dim, iota, seq(large, func(i int) int32 { return int32(i) * int32(b2i(i%dim != dim-1)) })},
	} {
		vt, err := datatype.Vector[int32](v.count, v.blocklen, v.stride)
		if err != nil {
			return err
		}
		if rank == 0 {
			if err := runtime.SendType(ctx, w, v.src, 1, vt, 1, 5); err != nil {
				return err
			}
			continue
		}
		packed := make([]byte, vt.Size())
		m, st, err := runtime.Mprobe(ctx, w, 0, 5)
		if err != nil {
			return err
		}
		if err := probeCheck(v.name+": probe", st, 0, 5, vt.Size()); err != nil {
			return err
		}
		if st, err = runtime.Mrecv(ctx, m, packed); err != nil {
			return err
		}
		out := make([]int32, len(v.want))
		if _, err := datatype.Unpack(out, packed, 1, vt); err != nil {
			return err
		}
		if err := first(probeCheck(v.name+": receive", st, 0, 5, vt.Size()), same(v.name, out, v.want)); err != nil {
			return err
		}
	}
	return nil
}
