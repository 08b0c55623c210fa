//go:build cgo

package mpich

// #include <stdlib.h>
// #include "zcalls.h"
// int gorma_attr_copy_proxy(void *proxy, void *fn, int handle, int keyval, void *extra, int type, void *cell, void *out, void *flag);
// int gorma_attr_delete_proxy(void *proxy, void *fn, int handle, int keyval, int type, void *cell, void *extra);
import "C"

import (
	"fmt"
	"sync"
	"unsafe"
)

// Attributes of communicators, datatypes and windows (MPI_Comm_set_attr,
// MPI_Type_set_attr, MPI_Win_set_attr and MPI-1's MPI_Attr_put). Each object kind has
// its own keyvals; a value is a C pointer, or an integer that Fortran stored by value
// (MPII_Comm_set_attr and its kin, fortattr.go). The C program's callbacks run with no
// lock held, so that they may call the library, on the same object too.

// objKind is the kind of object a keyval serves.
type objKind uint8

const (
	objComm objKind = iota
	objType
	objWin
)

func (k objKind) String() string {
	return [...]string{"communicators", "datatypes", "windows"}[k]
}

// MPICH's MPIR_Attr_type: how an attribute's value was given. Bit 0 set means an
// integer stored by value.
const (
	attrPtr  = 0 // a C void *
	attrAint = 1 // a Fortran INTEGER(KIND=MPI_ADDRESS_KIND)
	attrInt  = 3 // a Fortran INTEGER
)

// A keyval is an attribute key: the C program's copy and delete callbacks (nil: none)
// and its extra state. A Fortran keyval also has MPICH's proxies (MPII_Keyval_set_proxy),
// C functions of libmpichfort that call the Fortran callbacks.
type keyval struct {
	kind                   objKind
	handle                 int32
	copyFn, deleteFn       unsafe.Pointer
	extra                  unsafe.Pointer
	copyProxy, deleteProxy unsafe.Pointer // guarded by keyMu

	// refs counts the attributes set with the key; a freed key leaves the table when
	// its last attribute goes. Both fields are guarded by keyMu.
	refs  int
	freed bool
}

var (
	keyvals = newTable[*keyval](kindKeyval)
	// keyMu guards the keyvals' mutable fields. It nests the lock of the keyvals
	// table, never the reverse; no other lock of this file is held with it.
	keyMu sync.Mutex
)

// predefinedKey reports whether key is one of mpi.h's predefined keyvals (MPI_TAG_UB,
// MPI_WIN_BASE, ...), whose handles are MPICH's built-in kind (bits 30-31 = 1).
func predefinedKey(key int) bool { return uint32(key)>>30 == 1 }

// newKeyval registers a keyval of kind.
func newKeyval(kind objKind, copyFn, deleteFn unsafe.Pointer, key *int32, extra unsafe.Pointer) error {
	if key == nil {
		return mpiErr(mpi_ERR_ARG, "the keyval argument is NULL")
	}
	k := &keyval{kind: kind, copyFn: copyFn, deleteFn: deleteFn, extra: extra}
	k.handle = keyvals.add(k)
	*key = k.handle
	return nil
}

// freeKeyval frees *key, a keyval of kind. Attributes set with it stay until deleted,
// and their delete callback still runs then.
func freeKeyval(kind objKind, key *int32) error {
	if key == nil {
		return mpiErr(mpi_ERR_ARG, "the keyval argument is NULL")
	}
	if predefinedKey(int(*key)) {
		return mpiErr(mpi_ERR_KEYVAL, fmt.Sprintf("keyval %#x is predefined and cannot be freed", uint32(*key)))
	}
	k, err := userKey(int(*key), kind)
	if err != nil {
		return err
	}
	keyMu.Lock()
	k.freed = true
	if k.refs == 0 {
		keyvals.del(k.handle)
	}
	keyMu.Unlock()
	*key = mpi_KEYVAL_INVALID
	return nil
}

// userKey returns the keyval of key, which must serve kind and not be freed.
func userKey(key int, kind objKind) (*keyval, error) {
	if predefinedKey(key) {
		return nil, mpiErr(mpi_ERR_KEYVAL, fmt.Sprintf("keyval %#x is a predefined attribute, which cannot be set or deleted", uint32(key)))
	}
	k, ok := keyvals.get(int32(key))
	keyMu.Lock()
	freed := ok && k.freed
	keyMu.Unlock()
	switch {
	case !ok || freed:
		return nil, mpiErr(mpi_ERR_KEYVAL, fmt.Sprintf("invalid keyval %#x: make one with MPI_Comm_create_keyval, MPI_Type_create_keyval or MPI_Win_create_keyval", uint32(key)))
	case k.kind != kind:
		return nil, mpiErr(mpi_ERR_KEYVAL, fmt.Sprintf("keyval %#x was made for %v, not %v", uint32(key), k.kind, kind))
	}
	return k, nil
}

// proxies returns k's copy and delete proxies (nil: the callbacks are C's).
func (k *keyval) proxies() (copyProxy, deleteProxy unsafe.Pointer) {
	keyMu.Lock()
	defer keyMu.Unlock()
	return k.copyProxy, k.deleteProxy
}

// release drops an attribute's reference to k.
func (k *keyval) release() {
	keyMu.Lock()
	k.refs--
	if k.refs == 0 && k.freed {
		keyvals.del(k.handle)
	}
	keyMu.Unlock()
}

// An attr is one attribute: its key and its value, in C memory (cell) so that C code
// may hold a pointer to a value stored by value.
type attr struct {
	kv   *keyval
	typ  int
	cell unsafe.Pointer // 8 bytes: the C pointer or the integer
}

func newAttr(k *keyval, val unsafe.Pointer, typ int) *attr {
	cell := C.malloc(8)
	*(*unsafe.Pointer)(cell) = val
	return &attr{kv: k, typ: typ, cell: cell}
}

// ptr is the value as C's get gives it: the pointer set, or the address of an integer.
func (a *attr) ptr() unsafe.Pointer {
	if a.typ&1 != 0 {
		return a.cell
	}
	return *(*unsafe.Pointer)(a.cell)
}

// word is the value's 8 bytes, as Fortran's get gives them.
func (a *attr) word() uintptr { return *(*uintptr)(a.cell) }

func (a *attr) free() {
	C.free(a.cell)
	a.kv.release()
}

// attrs are one object's attributes, in the order they were first set. MPICH keeps the
// newest first, and its copy and delete callbacks run in that order: so do these.
type attrs struct {
	mu   sync.Mutex
	list []*attr
}

// find returns the index of key's attribute, or -1. a.mu is held.
func (a *attrs) find(k *keyval) int {
	for i, at := range a.list {
		if at.kv == k {
			return i
		}
	}
	return -1
}

// set sets key's attribute of object h to val: a value already set is deleted first,
// through the key's delete callback, whose failure fails the call.
func (a *attrs) set(kind objKind, h int32, key int, val unsafe.Pointer, typ int) error {
	k, err := userKey(key, kind)
	if err != nil {
		return err
	}
	a.mu.Lock()
	i := a.find(k)
	var old *attr
	if i >= 0 {
		old = a.list[i]
	}
	a.mu.Unlock()
	if old != nil {
		if err := k.delete(h, old); err != nil {
			return err
		}
	}
	keyMu.Lock()
	k.refs++
	keyMu.Unlock()
	at := newAttr(k, val, typ)
	a.mu.Lock()
	if i = a.find(k); i >= 0 {
		old = a.list[i]
		a.list[i] = at
	} else {
		old = nil
		a.list = append(a.list, at)
	}
	a.mu.Unlock()
	if old != nil {
		old.free()
	}
	return nil
}

// get gives key's attribute to C (out attrPtr: the pointer, or the address of a
// Fortran integer) or to Fortran (the value's word).
func (a *attrs) get(kind objKind, key int, val unsafe.Pointer, flag *int32, out int) error {
	k, err := userKey(key, kind)
	if err != nil {
		return err
	}
	if val == nil || flag == nil {
		return mpiErr(mpi_ERR_ARG, "attribute_val or flag is NULL")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	i := a.find(k)
	*flag = b2i(i >= 0)
	if i < 0 {
		return nil
	}
	if out == attrPtr {
		*(*unsafe.Pointer)(val) = a.list[i].ptr()
	} else {
		*(*uintptr)(val) = a.list[i].word()
	}
	return nil
}

// del deletes key's attribute of object h, if it has one (MPICH: no error if not).
func (a *attrs) del(kind objKind, h int32, key int) error {
	k, err := userKey(key, kind)
	if err != nil {
		return err
	}
	a.mu.Lock()
	i := a.find(k)
	var at *attr
	if i >= 0 {
		at = a.list[i]
	}
	a.mu.Unlock()
	if at == nil {
		return nil
	}
	if err := k.delete(h, at); err != nil {
		return err
	}
	a.mu.Lock()
	if i = a.find(k); i >= 0 && a.list[i] == at {
		a.list = append(a.list[:i], a.list[i+1:]...)
	}
	a.mu.Unlock()
	at.free()
	return nil
}

// copyTo gives the object to (handle h's duplicate) the attributes of a whose copy
// callbacks say so. h is the handle of the object copied, as the callbacks get it.
func (a *attrs) copyTo(h int32, to *attrs) error {
	a.mu.Lock()
	list := append([]*attr(nil), a.list...)
	a.mu.Unlock()
	var added []*attr
	for i := len(list) - 1; i >= 0; i-- {
		at := list[i]
		v, ok, err := at.kv.copy(h, at)
		if err != nil {
			for _, n := range added {
				n.free()
			}
			return err
		}
		if ok {
			keyMu.Lock()
			at.kv.refs++
			keyMu.Unlock()
			added = append(added, newAttr(at.kv, v, at.typ))
		}
	}
	to.mu.Lock()
	for i := len(added) - 1; i >= 0; i-- {
		to.list = append(to.list, added[i])
	}
	to.mu.Unlock()
	return nil
}

// clear deletes every attribute of object h, newest first, as its free does. A failed
// delete callback fails the call; the attributes are gone all the same, as in MPICH.
func (a *attrs) clear(h int32) error {
	a.mu.Lock()
	list := a.list
	a.list = nil
	a.mu.Unlock()
	var first error
	for i := len(list) - 1; i >= 0; i-- {
		if err := list[i].kv.delete(h, list[i]); err != nil && first == nil {
			first = err
		}
		list[i].free()
	}
	return first
}

// delete calls k's delete callback for attribute at of object h; a callback's error
// fails the call.
func (k *keyval) delete(h int32, at *attr) error {
	if k.deleteFn == nil {
		return nil
	}
	_, proxy := k.proxies()
	var rc C.int
	switch {
	case proxy != nil:
		rc = C.gorma_attr_delete_proxy(proxy, k.deleteFn, C.int(h), C.int(k.handle), C.int(at.typ), at.cell, k.extra)
	case k.kind == objType:
		rc = C.gorma_call_MPI_Type_delete_attr_function(k.deleteFn, C.int(h), C.int(k.handle), at.ptr(), k.extra)
	case k.kind == objWin:
		rc = C.gorma_call_MPI_Win_delete_attr_function(k.deleteFn, C.int(h), C.int(k.handle), at.ptr(), k.extra)
	default:
		rc = C.gorma_call_MPI_Comm_delete_attr_function(k.deleteFn, C.int(h), C.int(k.handle), at.ptr(), k.extra)
	}
	if rc != 0 {
		return mpiErr(callbackClass(int(rc)), fmt.Sprintf("the delete callback of keyval %#x returned %d", uint32(k.handle), rc))
	}
	return nil
}

// copy calls k's copy callback for attribute at of object h: the new value, and
// whether the duplicate gets it.
func (k *keyval) copy(h int32, at *attr) (unsafe.Pointer, bool, error) {
	if k.copyFn == nil {
		return nil, false, nil
	}
	out := C.malloc(C.size_t(unsafe.Sizeof(uintptr(0))))
	flag := (*C.int)(C.malloc(C.size_t(unsafe.Sizeof(C.int(0)))))
	defer C.free(out)
	defer C.free(unsafe.Pointer(flag))
	*(*unsafe.Pointer)(out), *flag = nil, 0
	proxy, _ := k.proxies()
	var rc C.int
	switch {
	case proxy != nil:
		rc = C.gorma_attr_copy_proxy(proxy, k.copyFn, C.int(h), C.int(k.handle), k.extra, C.int(at.typ), at.cell, out, unsafe.Pointer(flag))
	case k.kind == objType:
		rc = C.gorma_call_MPI_Type_copy_attr_function(k.copyFn, C.int(h), C.int(k.handle), k.extra, at.ptr(), out, unsafe.Pointer(flag))
	case k.kind == objWin:
		rc = C.gorma_call_MPI_Win_copy_attr_function(k.copyFn, C.int(h), C.int(k.handle), k.extra, at.ptr(), out, unsafe.Pointer(flag))
	default:
		rc = C.gorma_call_MPI_Comm_copy_attr_function(k.copyFn, C.int(h), C.int(k.handle), k.extra, at.ptr(), out, unsafe.Pointer(flag))
	}
	if rc != 0 {
		return nil, false, mpiErr(callbackClass(int(rc)), fmt.Sprintf("the copy callback of keyval %#x returned %d", uint32(k.handle), rc))
	}
	return *(*unsafe.Pointer)(out), *flag != 0, nil
}

// Communicators.

// doCommCreateKeyval is MPI_Comm_create_keyval.
func doCommCreateKeyval(copyFn, deleteFn unsafe.Pointer, key *int32, extra unsafe.Pointer) error {
	return newKeyval(objComm, copyFn, deleteFn, key, extra)
}

// doCommFreeKeyval is MPI_Comm_free_keyval.
func doCommFreeKeyval(key *int32) error { return freeKeyval(objComm, key) }

// doKeyvalCreate is MPI-1's MPI_Keyval_create: a communicator keyval.
func doKeyvalCreate(copyFn, deleteFn unsafe.Pointer, key *int32, extra unsafe.Pointer) error {
	return newKeyval(objComm, copyFn, deleteFn, key, extra)
}

// doKeyvalFree is MPI-1's MPI_Keyval_free.
func doKeyvalFree(key *int32) error { return freeKeyval(objComm, key) }

// doCommSetAttr is MPI_Comm_set_attr.
func doCommSetAttr(c Comm, key int, val unsafe.Pointer) error {
	return setCommAttr(c, key, val, attrPtr)
}

// doAttrPut is MPI-1's MPI_Attr_put.
func doAttrPut(c Comm, key int, val unsafe.Pointer) error {
	return setCommAttr(c, key, val, attrPtr)
}

func setCommAttr(c Comm, key int, val unsafe.Pointer, typ int) error {
	co, err := commOf(c)
	if err != nil {
		return err
	}
	return co.attrs.set(objComm, int32(c), key, val, typ)
}

// doAttrGet is MPI-1's MPI_Attr_get.
func doAttrGet(c Comm, key int, val unsafe.Pointer, flag *int32) error {
	return doCommGetAttr(c, key, val, flag)
}

// getUserAttr is MPI_Comm_get_attr for a user keyval.
func getUserAttr(co *comm, key int, val unsafe.Pointer, flag *int32) error {
	return co.attrs.get(objComm, key, val, flag, attrPtr)
}

// doCommDeleteAttr is MPI_Comm_delete_attr.
func doCommDeleteAttr(c Comm, key int) error {
	co, err := commOf(c)
	if err != nil {
		return err
	}
	return co.attrs.del(objComm, int32(c), key)
}

// doAttrDelete is MPI-1's MPI_Attr_delete.
func doAttrDelete(c Comm, key int) error { return doCommDeleteAttr(c, key) }

// copyAttrs gives the communicator to of MPI_Comm_dup the attributes of from (handle c)
// whose copy callbacks say so.
func copyAttrs(from *comm, c Comm, to *comm) error {
	return from.attrs.copyTo(int32(c), &to.attrs)
}

// deleteAttrs calls the delete callbacks of c's attributes, as MPI_Comm_free does.
func deleteAttrs(co *comm, c Comm) error { return co.attrs.clear(int32(c)) }

// Datatypes. A datatype's attributes live here, by handle; predefined datatypes may
// have attributes too.

var typeAttrs struct {
	mu sync.Mutex
	m  map[Datatype]*attrs
}

// typeAttrsOf returns the attributes of d, made on first use when make is set (nil
// otherwise if d has none).
func typeAttrsOf(d Datatype, make bool) *attrs {
	typeAttrs.mu.Lock()
	defer typeAttrs.mu.Unlock()
	a := typeAttrs.m[d]
	if a == nil && make {
		if typeAttrs.m == nil {
			typeAttrs.m = map[Datatype]*attrs{}
		}
		a = &attrs{}
		typeAttrs.m[d] = a
	}
	return a
}

// doTypeCreateKeyval is MPI_Type_create_keyval.
func doTypeCreateKeyval(copyFn, deleteFn unsafe.Pointer, key *int32, extra unsafe.Pointer) error {
	return newKeyval(objType, copyFn, deleteFn, key, extra)
}

// doTypeFreeKeyval is MPI_Type_free_keyval.
func doTypeFreeKeyval(key *int32) error { return freeKeyval(objType, key) }

// doTypeSetAttr is MPI_Type_set_attr.
func doTypeSetAttr(d Datatype, key int, val unsafe.Pointer) error {
	return setTypeAttr(d, key, val, attrPtr)
}

func setTypeAttr(d Datatype, key int, val unsafe.Pointer, typ int) error {
	if _, err := anyTypeOf(d); err != nil {
		return err
	}
	return typeAttrsOf(d, true).set(objType, int32(d), key, val, typ)
}

// doTypeGetAttr is MPI_Type_get_attr.
func doTypeGetAttr(d Datatype, key int, val unsafe.Pointer, flag *int32) error {
	return getTypeAttr(d, key, val, flag, attrPtr)
}

func getTypeAttr(d Datatype, key int, val unsafe.Pointer, flag *int32, out int) error {
	if _, err := anyTypeOf(d); err != nil {
		return err
	}
	return typeAttrsOf(d, true).get(objType, key, val, flag, out)
}

// doTypeDeleteAttr is MPI_Type_delete_attr.
func doTypeDeleteAttr(d Datatype, key int) error {
	if _, err := anyTypeOf(d); err != nil {
		return err
	}
	return typeAttrsOf(d, true).del(objType, int32(d), key)
}

// copyTypeAttrs gives the datatype dup, made by MPI_Type_dup from old, the attributes
// of old whose copy callbacks say so.
func copyTypeAttrs(old, dup Datatype) error {
	a := typeAttrsOf(old, false)
	if a == nil {
		return nil
	}
	return a.copyTo(int32(old), typeAttrsOf(dup, true))
}

// deleteTypeAttrs calls the delete callbacks of d's attributes and forgets them, as
// MPI_Type_free does.
func deleteTypeAttrs(d Datatype) error {
	typeAttrs.mu.Lock()
	a := typeAttrs.m[d]
	delete(typeAttrs.m, d)
	typeAttrs.mu.Unlock()
	if a == nil {
		return nil
	}
	return a.clear(int32(d))
}

// Windows. A window's user attributes live here, by handle; its predefined ones in
// winAttrs (more.go).

var winUserAttrs struct {
	mu sync.Mutex
	m  map[Win]*attrs
}

func winAttrsOf(w Win, make bool) *attrs {
	winUserAttrs.mu.Lock()
	defer winUserAttrs.mu.Unlock()
	a := winUserAttrs.m[w]
	if a == nil && make {
		if winUserAttrs.m == nil {
			winUserAttrs.m = map[Win]*attrs{}
		}
		a = &attrs{}
		winUserAttrs.m[w] = a
	}
	return a
}

// doWinCreateKeyval is MPI_Win_create_keyval. A window is never duplicated, so the
// copy callback is never called.
func doWinCreateKeyval(copyFn, deleteFn unsafe.Pointer, key *int32, extra unsafe.Pointer) error {
	return newKeyval(objWin, copyFn, deleteFn, key, extra)
}

// doWinFreeKeyval is MPI_Win_free_keyval.
func doWinFreeKeyval(key *int32) error { return freeKeyval(objWin, key) }

// doWinSetAttr is MPI_Win_set_attr.
func doWinSetAttr(h Win, key int, val unsafe.Pointer) error {
	return setWinAttr(h, key, val, attrPtr)
}

func setWinAttr(h Win, key int, val unsafe.Pointer, typ int) error {
	if _, err := winOf(h); err != nil {
		return err
	}
	return winAttrsOf(h, true).set(objWin, int32(h), key, val, typ)
}

// doWinDeleteAttr is MPI_Win_delete_attr.
func doWinDeleteAttr(h Win, key int) error {
	if _, err := winOf(h); err != nil {
		return err
	}
	return winAttrsOf(h, true).del(objWin, int32(h), key)
}

// getWinUserAttr is MPI_Win_get_attr for a user keyval.
func getWinUserAttr(h Win, key int, val unsafe.Pointer, flag *int32, out int) error {
	return winAttrsOf(h, true).get(objWin, key, val, flag, out)
}

// deleteWinAttrs calls the delete callbacks of h's attributes and forgets them, as
// MPI_Win_free does.
func deleteWinAttrs(h Win) error {
	winUserAttrs.mu.Lock()
	a := winUserAttrs.m[h]
	delete(winUserAttrs.m, h)
	winUserAttrs.mu.Unlock()
	if a == nil {
		return nil
	}
	return a.clear(int32(h))
}
