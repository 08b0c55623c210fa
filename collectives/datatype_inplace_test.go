package collectives

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gorma-hpc/gorma/datatype"
)

// TestGatherScatterTypeInPlace gathers every rank's row into a column of root's matrix
// (a strided vector type resized so that copies interleave), root's own column already in
// place (nil send), then scatters the columns back with root's in place (nil recv), from
// every root in turn: root's column is neither packed from send nor unpacked into recv.
// Then AllgatherType and AlltoallType in place (nil send) over the same column layout.
func TestGatherScatterTypeInPlace(t *testing.T) {
	forTypeJobs(t, func(e rankEnv) error {
		const rows = 5
		p, r := e.p, e.r
		flat, _ := datatype.Contiguous[int64](rows)
		colv, _ := datatype.Vector[int64](rows, 1, p)
		col, _ := colv.Resized(0, 8)
		mine := make([]int64, rows)
		for i := range mine {
			mine[i] = int64(r*100 + i)
		}
		want := make([]int64, rows*p)
		for i := range rows {
			for q := range p {
				want[i*p+q] = int64(q*100 + i)
			}
		}
		for root := range p {
			m := make([]int64, rows*p)
			send := mine
			if r == root {
				send = nil
				for i := range rows {
					m[i*p+root] = mine[i] // root's column, in place
				}
			}
			if err := GatherType(e.ctx, e.w, send, 1, flat, m, 1, col, root); err != nil {
				return fmt.Errorf("root %d: %w", root, err)
			}
			if r == root && !slices.Equal(m, want) {
				return fmt.Errorf("gather in place at root %d: %v, want %v", root, m, want)
			}
			back := make([]int64, rows)
			recv := back
			if r == root {
				recv = nil
				for i := range rows {
					m[i*p+q0(root, p)] += 1000 // another rank's column, changed before the scatter
				}
			}
			if err := ScatterType(e.ctx, e.w, m, 1, col, recv, 1, flat, root); err != nil {
				return fmt.Errorf("root %d: %w", root, err)
			}
			switch {
			case r == root:
				if !slices.Equal(back, make([]int64, rows)) {
					return fmt.Errorf("scatter in place at root %d wrote into an unused buffer: %v", root, back)
				}
			case r == q0(root, p):
				for i, v := range back {
					if v != mine[i]+1000 {
						return fmt.Errorf("rank %d: scatter from %d gave %v, want %v + 1000", r, root, back, mine)
					}
				}
			case !slices.Equal(back, mine):
				return fmt.Errorf("rank %d: scatter from %d gave %v, want %v", r, root, back, mine)
			}
		}
		// Allgather in place: every rank's column already in its matrix.
		m := make([]int64, rows*p)
		for i := range rows {
			m[i*p+r] = mine[i]
		}
		if err := AllgatherType[int64](e.ctx, e.w, nil, 0, datatype.Type{}, m, 1, col); err != nil {
			return err
		}
		if !slices.Equal(m, want) {
			return fmt.Errorf("rank %d: allgather in place %v, want %v", r, m, want)
		}
		// Alltoall in place: column q of rank r's matrix goes to rank q, which puts it
		// in its column r: the transpose of the blocks.
		for i := range rows {
			for q := range p {
				m[i*p+q] = int64(r*1000 + i*p + q)
			}
		}
		if err := AlltoallType[int64](e.ctx, e.w, nil, 0, datatype.Type{}, m, 1, col); err != nil {
			return err
		}
		for i := range rows {
			for q := range p {
				if got, want := m[i*p+q], int64(q*1000+i*p+r); got != want {
					return fmt.Errorf("rank %d: alltoall in place [%d,%d] = %d, want %d", r, i, q, got, want)
				}
			}
		}
		return nil
	})
}

// q0 is the rank after root, whose column the scatter test changes.
func q0(root, p int) int { return (root + 1) % p }
