package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
)

func init() {
	// attrordercomm.c, baseattrcomm.c and fkeyvalcomm.c are attrorder.c, baseattr2.c and
	// fkeyval.c with the MPI-2 names of the attribute calls (MPI_Comm_set_attr for
	// MPI_Attr_put, ...), which gorma has once: the same checks run.
	register("attr-attrordercomm", "attr/attrordercomm.c", 1, attrAttrorder)
	register("attr-baseattrcomm", "attr/baseattrcomm.c", 1, attrBaseattr2)
	register("attr-fkeyvalcomm", "attr/fkeyvalcomm.c", 1, attrFkeyval)
	register("attr-keyval_double_free_comm", "attr/keyval_double_free_comm.c", 1, attrKeyvalDoubleFreeComm)
	register("attr-attric", "attr/attric.c", 4, attrAttric)
	register("attr-attrdelete", "attr/attrdelete.c", 1, attrAttrdelete)
	register("attr-attrerr", "attr/attrerr.c", 1, attrAttrerr)
	register("attr-attrerrcomm", "attr/attrerrcomm.c", 1, attrAttrerr)
}

// attrKeyvalDoubleFreeComm: a Keyval whose delete function frees it, set on a one-rank
// World (MPI_COMM_SELF) and on a Dup of it: the Dup's Free runs the delete function,
// whose Free of the Keyval succeeds. The two Frees after it (MPICH's second and third,
// through the handle and a copy of it) fail with ErrInvalid. The attribute on the
// one-rank World stays, readable, its delete function running at that World's Free
// (MPICH's runs at Finalize) with a Free that fails with ErrInvalid too. MPICH accepts
// the later frees, the attribute still holding a reference to the keyval; MPI makes them
// erroneous, and gorma reports them.
func attrKeyvalDoubleFreeComm(ctx context.Context, w *runtime.World) error {
	self, err := selfWorld(ctx, w)
	if err != nil {
		return err
	}
	duped, err := self.Dup()
	if err != nil {
		return err
	}
	var key *runtime.Keyval[*int]
	var frees []error // the delete function's Free results, in order
	key = runtime.NewKeyval(nil, func(_ *runtime.World, _ *int) { frees = append(frees, key.Free()) })
	keyCopy := key
	if err := first(runtime.SetAttr(self, key, nil), runtime.SetAttr(duped, key, nil), duped.Free()); err != nil {
		return err
	}
	if len(frees) != 1 || frees[0] != nil {
		return fmt.Errorf("the Dup's Free: delete function's Frees of the Keyval %v, want one, succeeding", frees)
	}
	if err := key.Free(); !errors.Is(err, runtime.ErrInvalid) {
		return fmt.Errorf("second Free of the Keyval: %v, want ErrInvalid", err)
	}
	if err := keyCopy.Free(); !errors.Is(err, runtime.ErrInvalid) {
		return fmt.Errorf("third Free of the Keyval (its copy): %v, want ErrInvalid", err)
	}
	if _, ok, err := runtime.GetAttr(self, key); !ok || err != nil {
		return fmt.Errorf("the one-rank World's attribute after the Keyval's Frees: set %v, %v; want set", ok, err)
	}
	if err := self.Free(); err != nil {
		return err
	}
	if len(frees) != 2 || !errors.Is(frees[1], runtime.ErrInvalid) {
		return fmt.Errorf("the one-rank World's Free: delete function's Frees of the Keyval %v, want a second, failing with ErrInvalid", frees)
	}
	return nil
}

// attrAttric: on each intercommunicator of eachIntercomm (two ranks at least), an
// attribute whose copy function keeps it (the World rank) and one with no copy
// function: the intercommunicator's Dup has the first with the same value and not the
// second. Both Keyvals are freed with the attributes set; the delete function sees the
// World rank at each Free, of the intercommunicator and of its Dup (MPICH aborts if not;
// this port also counts that it ran twice per intercommunicator). The walk frees the
// intercommunicator after its Dup, where MPICH frees it first.
func attrAttric(ctx context.Context, w *runtime.World) error {
	wrank := w.Rank()
	var bad []error
	deletes, cases := 0, 0
	err := eachIntercomm(ctx, w, 2, func(ic *runtime.World, _ bool) error {
		cases++
		key1 := runtime.NewKeyval(runtime.CopyOnDup[int], func(_ *runtime.World, v int) {
			deletes++
			if v != wrank {
				bad = append(bad, fmt.Errorf("delete function got %d, want the World rank %d", v, wrank))
			}
		})
		key3 := runtime.NewKeyval[int](nil, nil)
		if err := first(runtime.SetAttr(ic, key1, wrank), runtime.SetAttr(ic, key3, 0)); err != nil {
			return err
		}
		dup, err := ic.Dup()
		if err != nil {
			return err
		}
		if v, ok, err := runtime.GetAttr(dup, key1); !ok || err != nil || v != wrank {
			return fmt.Errorf("dup key_1: %d, set %v, %v; want %d", v, ok, err, wrank)
		}
		if _, ok, err := runtime.GetAttr(dup, key3); ok || err != nil {
			return fmt.Errorf("dup key_3 found (%v)", err)
		}
		return first(key1.Free(), key3.Free(), dup.Free())
	})
	if err != nil {
		return err
	}
	if cases == 0 {
		return errors.New("no intercommunicator of two ranks or more was made")
	}
	if deletes != 2*cases {
		bad = append(bad, fmt.Errorf("the delete function ran %d times over %d intercommunicators, want %d", deletes, cases, 2*cases))
	}
	return errors.Join(bad...)
}

// attrAttrdelete: the delete function of key2 deletes the attributes of key1 and key3 on
// the World it is given. DeleteAttr of key2 on the World (attributes rank, rank+100 and
// rank+200) runs it, which leaves the World with none of the three (MPICH checks only
// that the calls succeed), and the three Keyvals are freed.
func attrAttrdelete(ctx context.Context, w *runtime.World) error {
	rank := w.Rank()
	key1, key3 := runtime.NewKeyval[int](nil, nil), runtime.NewKeyval[int](nil, nil)
	var inDelete []error
	key2 := runtime.NewKeyval(nil, func(c *runtime.World, _ int) {
		inDelete = append(inDelete, runtime.DeleteAttr(c, key1), runtime.DeleteAttr(c, key3))
	})
	if err := first(runtime.SetAttr(w, key1, rank), runtime.SetAttr(w, key2, rank+100), runtime.SetAttr(w, key3, rank+200)); err != nil {
		return err
	}
	if err := runtime.DeleteAttr(w, key2); err != nil {
		return err
	}
	if len(inDelete) != 2 {
		return fmt.Errorf("key2's delete function ran %d times, want once", len(inDelete)/2)
	}
	if err := first(inDelete...); err != nil {
		return fmt.Errorf("DeleteAttr in key2's delete function: %w", err)
	}
	for i, k := range []*runtime.Keyval[int]{key1, key2, key3} {
		if v, ok, err := runtime.GetAttr(w, k); ok || err != nil {
			return fmt.Errorf("key%d still set (%d, %v) after key2's delete", i+1, v, err)
		}
	}
	return first(key1.Free(), key2.Free(), key3.Free())
}

// attrAttrerr (attrerr.c and attrerrcomm.c, which differ in the names of the calls and
// in attrerrcomm.c's check that Dup's error is of class MPI_ERR_OTHER): on a Dup of the
// World, after a Barrier, the first SetAttr of a Keyval with copy and delete functions
// succeeds. Left out: every other check, each of an error that a copy or delete function
// returns (MPI_ERR_OTHER) reaching the caller: SetAttr replacing the value and
// DeleteAttr failing and leaving the attribute in place, Dup failing (of class
// MPI_ERR_OTHER) with MPI_COMM_NULL. gorma's callbacks return no error: a copy
// function's false means the Dup does not get the attribute (MPI's flag 0), and a delete
// function returns nothing. Instead, in the same sequence, what gorma does is checked:
// the replacing SetAttr and DeleteAttr run the delete function on the values they remove
// (the rank, then twice the rank) and succeed. The Dup after them gets no attribute, the
// copy function not running. The Frees succeed.
func attrAttrerr(ctx context.Context, w *runtime.World) error {
	rank := w.Rank()
	dw, err := w.Dup()
	if err != nil {
		return err
	}
	if err := runtime.Barrier(ctx, dw); err != nil {
		return err
	}
	var deleted []int
	copies := 0
	key := runtime.NewKeyval(func(_ *runtime.World, v int) (int, bool) { copies++; return v, true },
		func(_ *runtime.World, v int) { deleted = append(deleted, v) })
	if err := runtime.SetAttr(dw, key, rank); err != nil {
		return fmt.Errorf("first SetAttr: %w", err)
	}
	if err := runtime.SetAttr(dw, key, 2*rank); err != nil {
		return fmt.Errorf("replacing SetAttr: %w", err)
	}
	if err := runtime.DeleteAttr(dw, key); err != nil {
		return fmt.Errorf("DeleteAttr: %w", err)
	}
	if err := same("values given to the delete function", deleted, []int{rank, 2 * rank}); err != nil {
		return err
	}
	d2, err := dw.Dup()
	if err != nil {
		return err
	}
	if _, ok, err := runtime.GetAttr(d2, key); ok || err != nil || copies != 0 {
		return fmt.Errorf("the Dup after DeleteAttr: attribute set %v (%v), copy function ran %d times; want unset, not run", ok, err, copies)
	}
	return first(d2.Free(), dw.Free(), key.Free())
}
