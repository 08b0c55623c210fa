//go:build cgo

package mpich

// #include <stdlib.h>
// #include "zcalls.h"
import "C"

import (
	"fmt"
	"sync"
	"unsafe"
)

// A keyval is an attribute key of MPI_Comm_create_keyval: the C program's copy and
// delete callbacks (nil: none) and its extra state.
type keyval struct {
	copyFn, deleteFn, extra unsafe.Pointer
}

var keyvals = newTable[*keyval](kindKeyval)

// attrs are a communicator's attributes: keyval to value.
type attrs struct {
	mu   sync.Mutex
	vals map[int32]unsafe.Pointer
}

// doCommCreateKeyval is MPI_Comm_create_keyval.
func doCommCreateKeyval(copyFn, deleteFn unsafe.Pointer, key *int32, extra unsafe.Pointer) error {
	*key = keyvals.add(&keyval{copyFn: copyFn, deleteFn: deleteFn, extra: extra})
	return nil
}

// doCommFreeKeyval is MPI_Comm_free_keyval. Attributes set with the key stay until
// deleted.
func doCommFreeKeyval(key *int32) error {
	if _, ok := keyvals.get(*key); !ok {
		return errHandle("keyval", *key)
	}
	*key = mpi_KEYVAL_INVALID
	return nil
}

// userKey returns the keyval of key.
func userKey(key int) (*keyval, error) {
	k, ok := keyvals.get(int32(key))
	if !ok {
		return nil, errHandle("keyval", int32(key))
	}
	return k, nil
}

// doCommSetAttr is MPI_Comm_set_attr: a value already set is deleted first, through the
// key's delete callback.
func doCommSetAttr(c Comm, key int, val unsafe.Pointer) error {
	co, err := commOf(c)
	if err != nil {
		return err
	}
	k, err := userKey(key)
	if err != nil {
		return err
	}
	co.attrs.mu.Lock()
	old, had := co.attrs.vals[int32(key)]
	co.attrs.mu.Unlock()
	if had {
		if err := k.delete(c, key, old); err != nil {
			return err
		}
	}
	co.attrs.mu.Lock()
	defer co.attrs.mu.Unlock()
	if co.attrs.vals == nil {
		co.attrs.vals = map[int32]unsafe.Pointer{}
	}
	co.attrs.vals[int32(key)] = val
	return nil
}

// getUserAttr is MPI_Comm_get_attr for a user keyval.
func getUserAttr(co *comm, key int, val unsafe.Pointer, flag *int32) error {
	if _, err := userKey(key); err != nil {
		return err
	}
	co.attrs.mu.Lock()
	v, ok := co.attrs.vals[int32(key)]
	co.attrs.mu.Unlock()
	*flag = b2i(ok)
	if ok {
		*(*unsafe.Pointer)(val) = v
	}
	return nil
}

// doCommDeleteAttr is MPI_Comm_delete_attr.
func doCommDeleteAttr(c Comm, key int) error {
	co, err := commOf(c)
	if err != nil {
		return err
	}
	k, err := userKey(key)
	if err != nil {
		return err
	}
	co.attrs.mu.Lock()
	v, ok := co.attrs.vals[int32(key)]
	co.attrs.mu.Unlock()
	if !ok {
		return mpiErr(mpi_ERR_KEYVAL, fmt.Sprintf("keyval %#x has no value on this communicator", uint32(key)))
	}
	if err := k.delete(c, key, v); err != nil {
		return err
	}
	co.attrs.mu.Lock()
	delete(co.attrs.vals, int32(key))
	co.attrs.mu.Unlock()
	return nil
}

// delete calls k's delete callback for value v on c; a callback's error fails the call.
func (k *keyval) delete(c Comm, key int, v unsafe.Pointer) error {
	if k.deleteFn == nil {
		return nil
	}
	if rc := C.gorma_call_MPI_Comm_delete_attr_function(k.deleteFn, C.int(c), C.int(key), v, k.extra); rc != 0 {
		return mpiErr(int(rc)&classMask, fmt.Sprintf("the delete callback of keyval %#x returned %d", uint32(key), rc))
	}
	return nil
}

// copyAttrs gives the communicator to of MPI_Comm_dup the attributes of from whose copy
// callbacks say so.
func copyAttrs(from *comm, c Comm, to *comm) error {
	from.attrs.mu.Lock()
	vals := make(map[int32]unsafe.Pointer, len(from.attrs.vals))
	for k, v := range from.attrs.vals {
		vals[k] = v
	}
	from.attrs.mu.Unlock()
	for key, v := range vals {
		k, ok := keyvals.get(key)
		if !ok || k.copyFn == nil {
			continue
		}
		out := C.malloc(C.size_t(unsafe.Sizeof(uintptr(0))))
		flag := (*C.int)(C.malloc(C.size_t(unsafe.Sizeof(C.int(0)))))
		*flag = 0
		rc := C.gorma_call_MPI_Comm_copy_attr_function(k.copyFn, C.int(c), C.int(key), k.extra, v, out, unsafe.Pointer(flag))
		nv, set := *(*unsafe.Pointer)(out), *flag != 0
		C.free(out)
		C.free(unsafe.Pointer(flag))
		if rc != 0 {
			return mpiErr(int(rc)&classMask, fmt.Sprintf("the copy callback of keyval %#x returned %d", uint32(key), rc))
		}
		if set {
			if to.attrs.vals == nil {
				to.attrs.vals = map[int32]unsafe.Pointer{}
			}
			to.attrs.vals[key] = nv
		}
	}
	return nil
}

// deleteAttrs calls the delete callbacks of c's attributes, as MPI_Comm_free does.
func deleteAttrs(co *comm, c Comm) error {
	co.attrs.mu.Lock()
	vals := co.attrs.vals
	co.attrs.vals = nil
	co.attrs.mu.Unlock()
	for key, v := range vals {
		if k, ok := keyvals.get(key); ok {
			if err := k.delete(c, int(key), v); err != nil {
				return err
			}
		}
	}
	return nil
}
