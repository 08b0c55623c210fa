package window

import (
	"github.com/gorma-hpc/gorma/internal/attrset"
	"github.com/gorma-hpc/gorma/runtime"
)

// Names and attributes of windows (MPI_Win_set_name, MPI_Win_create_keyval and
// MPI_Win_set_attr), and the accessors that answer MPI's predefined window attributes.
// Attributes are this rank's alone: nothing is communicated. A window is never
// duplicated, so a window's Keyval has no copy function.

// Keyval is the key of one kind of window attribute, whose values have type V
// (MPI_Win_create_keyval). Make it with NewKeyval and share it among the goroutines and
// windows that use it; a Keyval is safe for concurrent use.
type Keyval[V any] struct{ k keyval }

type keyval struct {
	del func(v any) // nil: nothing runs when a value leaves a window
	attrset.Key
}

// NewKeyval returns a Keyval for window attributes of type V. del runs when a value
// leaves a window: at DeleteAttr, when SetAttr replaces it, and at the window's Free; nil
// runs nothing (MPI_WIN_NULL_DELETE_FN). It runs with no lock held, on the goroutine of
// that call, and may call this package's attribute functions, on that window too.
func NewKeyval[V any](del func(v V)) *Keyval[V] {
	kv := new(Keyval[V])
	if del != nil {
		kv.k.del = func(v any) { del(v.(V)) }
	}
	return kv
}

// Free retires k (MPI_Win_free_keyval): a later SetAttr with it fails with ErrInvalid.
// The values set with it stay on their windows, where GetAttr reads them and DeleteAttr
// removes them, and its delete function still runs on them at DeleteAttr and Free. A
// second Free fails with ErrInvalid.
func (k *Keyval[V]) Free() error {
	if k == nil {
		return werrf("keyval free", -1, -1, ErrInvalid, "nil Keyval (make one with NewKeyval)")
	}
	if !k.k.Free() {
		return werrf("keyval free", -1, -1, ErrInvalid, "the Keyval was freed already")
	}
	return nil
}

// attrSet holds a window's name and attributes.
type attrSet struct{ attrset.Set[*keyval] }

// attrsFor checks a call with k and returns the set of the window; set marks the calls
// that add, which fail with a freed Keyval or on a freed window (whose attributes are
// gone).
func attrsFor[T runtime.Elem](w *Win[T], op string, k *keyval, set bool) (*attrSet, error) {
	switch {
	case w == nil:
		return nil, werrf(op, -1, -1, ErrInvalid, "nil window")
	case k == nil:
		return nil, werrf(op, -1, -1, ErrInvalid, "nil Keyval (make one with NewKeyval)")
	case set && k.Freed():
		return nil, werrf(op, -1, -1, ErrInvalid, "the Keyval was freed (Keyval.Free); make another with NewKeyval")
	case set && w.freed.Load():
		return nil, w.freedErr(op, -1, -1)
	}
	return &w.attrs, nil
}

// keyOf is k's untyped key, nil for a nil Keyval.
func keyOf[V any](k *Keyval[V]) *keyval {
	if k == nil {
		return nil
	}
	return &k.k
}

// SetAttr sets w's attribute of k to v (MPI_Win_set_attr). A value it replaces leaves w:
// k's delete function runs on it before SetAttr returns. It fails with ErrInvalid for a
// nil window or Keyval or a freed Keyval, and with ErrFreed on a freed window.
func SetAttr[T runtime.Elem, V any](w *Win[T], k *Keyval[V], v V) error {
	a, err := attrsFor(w, "setattr", keyOf(k), true)
	if err != nil {
		return err
	}
	old, replaced, err := a.Put(&k.k, v)
	if err != nil {
		return w.freedErr("setattr", -1, -1)
	}
	if replaced && k.k.del != nil {
		k.k.del(old)
	}
	return nil
}

// GetAttr returns w's attribute of k and true, or V's zero value and false if w has none
// (MPI_Win_get_attr); a freed window has none. It fails with ErrInvalid for a nil window
// or Keyval.
func GetAttr[T runtime.Elem, V any](w *Win[T], k *Keyval[V]) (V, bool, error) {
	var zero V
	a, err := attrsFor(w, "getattr", keyOf(k), false)
	if err != nil {
		return zero, false, err
	}
	if v, ok := a.Get(&k.k); ok {
		return v.(V), true, nil
	}
	return zero, false, nil
}

// DeleteAttr removes w's attribute of k, running k's delete function on its value
// before it returns (MPI_Win_delete_attr); without one it does nothing. It fails as
// GetAttr does.
func DeleteAttr[T runtime.Elem, V any](w *Win[T], k *Keyval[V]) error {
	a, err := attrsFor(w, "deleteattr", keyOf(k), false)
	if err != nil {
		return err
	}
	if old, ok := a.Take(&k.k); ok && k.k.del != nil {
		k.k.del(old)
	}
	return nil
}

// deleteAll removes every attribute, running their delete functions in the reverse of
// the order their keys were set, with no lock held. Free calls it; after it SetAttr
// fails.
func (a *attrSet) deleteAll() {
	for _, at := range a.TakeAll() {
		if at.Key.del != nil {
			at.Key.del(at.Value)
		}
	}
}

// SetName names the window (MPI_Win_set_name), for the program's own messages; the
// runtime does not use the name (hang reports name windows by their creation call). It
// fails with ErrFreed on a freed window.
func (w *Win[T]) SetName(name string) error {
	if w.freed.Load() {
		return w.freedErr("setname", -1, -1)
	}
	w.attrs.SetName(name)
	return nil
}

// Name returns the name SetName gave the window, "" before (MPI_Win_get_name).
func (w *Win[T]) Name() string {
	name, _ := w.attrs.Name()
	return name
}

// DispUnit is the size in bytes of the unit of displacements (MPI_WIN_DISP_UNIT): one
// element of T, the same at every rank.
func (w *Win[T]) DispUnit() int { return w.esize }

// MemoryModel is how a window's memory relates to its public copy (MPI_WIN_MODEL).
type MemoryModel uint8

// Memory models (MPI_WIN_SEPARATE, MPI_WIN_UNIFIED).
const (
	// Separate: remote operations update a public copy that the owner's loads see only
	// after synchronization with it. No gorma window has it; it names MPI's other model.
	Separate MemoryModel = iota + 1
	// Unified: the window's memory is its public copy. A completed Put or Accumulate of
	// a peer is in the owner's Local() memory; every gorma window has it.
	Unified
)

func (m MemoryModel) String() string {
	switch m {
	case Separate:
		return "separate"
	case Unified:
		return "unified"
	}
	return "MemoryModel(?)"
}

// Model returns the window's memory model (MPI_WIN_MODEL): Unified for every flavor.
// Peers' Puts and accumulates write the owner's memory itself, by a copy into its
// mapping on one host and by the target-side transport over tcp, and the page cache
// keeps copies at origins only. The owner's loads of Local() see a peer's write once the
// call that completes it has returned at the peer (Fence, Unlock, Flush, Complete) and
// the owner has synchronized with that (the same Fence, Wait, or a message or Barrier
// after the peer's Unlock).
func (w *Win[T]) Model() MemoryModel { return Unified }
