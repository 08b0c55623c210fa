package collectives

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/gorma-hpc/gorma/runtime"
)

// TestInterReduceType: ReduceType to a root in each group and AllreduceType on an
// intercommunicator, over a vector of 3 int32s with stride 2, with a sum: each side
// receives the other group's sum, and the holes keep their values.
func TestInterReduceType(t *testing.T) {
	forInterLayouts(t, func(ctx context.Context, w, ic *runtime.World, low bool, remote []int) error {
		vec, sum, err := vecSum()
		if err != nil {
			return err
		}
		me := w.Rank()
		in := make([]int32, 10)
		for k := range in {
			in[k] = int32(me*100 + k)
		}
		// want is element k of the remote group's sum over 2 copies (holes -1).
		want := func(k int) int32 {
			if k%5 == 1 || k%5 == 3 {
				return -1
			}
			s := int32(0)
			for _, r := range remote {
				s += int32(r*100 + k)
			}
			return s
		}
		check := func(what string, out []int32) error {
			for k, v := range out {
				if v != want(k) {
					return fmt.Errorf("%s: [%d] = %d, want %d", what, k, v, want(k))
				}
			}
			return nil
		}
		for _, rootLow := range []bool{true, false} {
			arg, atRoot := 0, false
			if low == rootLow {
				arg = runtime.ProcNull
				if ic.Rank() == 0 {
					arg, atRoot = runtime.Root, true
				}
			}
			var send, recv []int32
			if low != rootLow {
				send = in
			}
			if atRoot {
				recv = slices.Repeat([]int32{-1}, 10)
			}
			if err := ReduceType(ctx, ic, send, recv, 2, vec, sum, arg); err != nil {
				return fmt.Errorf("ReduceType to the %v group's rank 0: %w", rootLow, err)
			}
			if atRoot {
				if err := check("ReduceType", recv); err != nil {
					return err
				}
			}
		}
		out := slices.Repeat([]int32{-1}, 10)
		if err := AllreduceType(ctx, ic, in, out, 2, vec, sum); err != nil {
			return err
		}
		if err := check("AllreduceType", out); err != nil {
			return err
		}
		r := IallreduceType(ctx, ic, in, out, 2, vec, sum)
		if err := r.Wait(ctx); err != nil {
			return err
		}
		return check("IallreduceType", out)
	})
}
