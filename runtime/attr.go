package runtime

import "github.com/gorma-hpc/gorma/internal/attrset"

// Names and attributes of Worlds (MPI_Comm_set_name, MPI_Comm_create_keyval and
// MPI_Comm_set_attr): values a library caches on a World under a Keyval of its own, with
// the copy function that decides what a Dup inherits and the delete function that runs
// when the value leaves the World. They are this rank's alone: nothing is communicated.

// InitName is the name of Init's World until SetName changes it (MPI_COMM_WORLD's).
const InitName = "WORLD"

// Keyval is the key of one kind of attribute, whose values have type V
// (MPI_Comm_create_keyval). Make it with NewKeyval, once, and share it among the
// goroutines that use it; a Keyval is safe for concurrent use.
type Keyval[V any] struct{ k keyval }

// keyval is a Keyval without its type, as a World's attributes hold it.
type keyval struct {
	copy func(w *World, v any) (any, bool) // nil: a Dup does not get the attribute
	del  func(w *World, v any)             // nil: nothing runs when the value leaves
	attrset.Key
}

// NewKeyval returns a Keyval for attributes of type V. copy runs at Dup for each World that
// has the attribute, and returns the Dup's value and whether the Dup gets one; nil copies
// nothing, CopyOnDup copies the value. del runs when a value leaves a World (DeleteAttr,
// SetAttr, Free, or Finalize for Init's World); nil runs nothing. Both run with no lock held
// and may call this package's functions.
func NewKeyval[V any](copy func(w *World, v V) (V, bool), del func(w *World, v V)) *Keyval[V] {
	kv := new(Keyval[V])
	if copy != nil {
		kv.k.copy = func(w *World, v any) (any, bool) { return copy(w, v.(V)) }
	}
	if del != nil {
		kv.k.del = func(w *World, v any) { del(w, v.(V)) }
	}
	return kv
}

// CopyOnDup is the copy function that gives a Dup the World's value (MPI_COMM_DUP_FN):
// NewKeyval(runtime.CopyOnDup[V], del).
func CopyOnDup[V any](_ *World, v V) (V, bool) { return v, true }

// Free retires k (MPI_Comm_free_keyval): a later SetAttr with it fails with ErrInvalid.
// Values already set stay, and their copy and delete functions still run. A second Free
// fails with ErrInvalid.
func (k *Keyval[V]) Free() error {
	if k == nil {
		return withOp("keyval free", invalidf("nil Keyval (make one with NewKeyval)"))
	}
	if !k.k.Free() {
		return withOp("keyval free", invalidf("the Keyval was freed already"))
	}
	return nil
}

// attrSet holds a World's name and attributes.
type attrSet struct{ attrset.Set[*keyval] }

// attrsFor returns w's attribute set, or an ErrInvalid error naming op. A freed World
// or Keyval fails only calls that set (set): reading or deleting what is there stays
// possible (a freed World has nothing left, as a delete function running at Free finds).
func attrsFor(w *World, op string, k *keyval, set bool) (*attrSet, error) {
	switch {
	case w == nil:
		return nil, withOp(op, errNilWorld)
	case w.sibling:
		return nil, withOp(op, invalidf("a sibling World has no attributes or name of its own (set them on its World)"))
	case set && k != nil && k.Freed():
		return nil, withOp(op, invalidf("the Keyval was freed (Keyval.Free); make another with NewKeyval"))
	}
	if err := w.live(); err != nil && set {
		return nil, withOp(op, err)
	}
	return &w.attrs, nil
}

func errNilKeyval(op string) error {
	return withOp(op, invalidf("nil Keyval (make one with NewKeyval)"))
}

// SetAttr sets w's attribute of k to v (MPI_Comm_set_attr), running k's delete function on
// a value it replaces. It fails with ErrInvalid for a nil, sibling or freed World, and a nil
// or freed Keyval.
func SetAttr[V any](w *World, k *Keyval[V], v V) error {
	const op = "setattr"
	if k == nil {
		return errNilKeyval(op)
	}
	a, err := attrsFor(w, op, &k.k, true)
	if err != nil {
		return err
	}
	old, replaced, err := a.Put(&k.k, v)
	if err != nil {
		return withOp(op, errFreed)
	}
	if replaced && k.k.del != nil {
		k.k.del(w, old)
	}
	return nil
}

// GetAttr returns w's attribute of k and true, or the zero V and false if w has none
// (MPI_Comm_get_attr). It fails with ErrInvalid for a nil World or Keyval, and a sibling.
func GetAttr[V any](w *World, k *Keyval[V]) (V, bool, error) {
	const op = "getattr"
	var zero V
	if k == nil {
		return zero, false, errNilKeyval(op)
	}
	a, err := attrsFor(w, op, &k.k, false)
	if err != nil {
		return zero, false, err
	}
	if v, ok := a.Get(&k.k); ok {
		return v.(V), true, nil
	}
	return zero, false, nil
}

// DeleteAttr removes w's attribute of k, running k's delete function on its value
// (MPI_Comm_delete_attr). It fails as GetAttr does.
func DeleteAttr[V any](w *World, k *Keyval[V]) error {
	const op = "deleteattr"
	if k == nil {
		return errNilKeyval(op)
	}
	a, err := attrsFor(w, op, &k.k, false)
	if err != nil {
		return err
	}
	if old, ok := a.Take(&k.k); ok && k.k.del != nil {
		k.k.del(w, old)
	}
	return nil
}

// dupAttrs gives the World that Dup made (*d, when *err is nil) the attributes whose
// copy functions keep them. Dup defers it, so that it runs after the engine's lock is
// released: the copy functions may call the runtime.
func dupAttrs(w *World, d **World, err *error) {
	if *err != nil || *d == nil || w.sibling {
		return
	}
	w.attrs.CopyTo(&(*d).attrs.Set, func(k *keyval, v any) (any, bool) {
		if k.copy == nil {
			return nil, false
		}
		return k.copy(w, v)
	})
}

// deleteAttrs removes every attribute of w, running their delete functions in the
// reverse of the order their keys were set, with no lock held. Free calls it; after it
// SetAttr on w fails.
func deleteAttrs(w *World) {
	for _, at := range w.attrs.TakeAll() {
		if at.Key.del != nil {
			at.Key.del(w, at.Value)
		}
	}
}

// SetName names w (MPI_Comm_set_name), for the program's own messages; the runtime does
// not use the name. It fails with ErrInvalid for a nil, freed or sibling World.
func (w *World) SetName(name string) error {
	a, err := attrsFor(w, "setname", nil, true)
	if err != nil {
		return err
	}
	a.SetName(name)
	return nil
}

// Name returns the name SetName gave w (MPI_Comm_get_name): InitName for Init's World
// until then, "" for any other World (a Dup does not inherit it, as in MPI) and for a nil
// World or a sibling.
func (w *World) Name() string {
	if w == nil || w.sibling {
		return ""
	}
	name, named := w.attrs.Name()
	if !named && w.life == nil {
		return InitName
	}
	return name
}

// WtimeIsGlobal reports whether the ranks of w read one clock (MPI_WTIME_IS_GLOBAL): true
// when they all run on this rank's host.
func (w *World) WtimeIsGlobal() bool {
	return w != nil && w.LocalSize() == w.Size()
}

// AppNum returns the number of this rank's program among those its process manager started
// (MPI_APPNUM): its place on golaunch's MPMD command line, or what a foreign PMI server says.
// It is 0 for one program and in a world of one, and false when a server does not say.
func (w *World) AppNum() (int, bool) {
	if w == nil {
		return 0, false
	}
	if f, ok := w.e.pm.(interface{ AppNum() int }); ok {
		n := f.AppNum()
		return n, n >= 0
	}
	return 0, true
}
