//go:build cgo

package mpich

import "C"

import (
	"fmt"
	"sync"
	"unsafe"
)

// The Go side of fortattr.c: MPICH's helpers that libmpichfort's Fortran bindings call
// for attributes (MPII_Comm_set_attr and its kin, with an MPIR_Attr_type) and for
// generalized requests. A Fortran attribute is an integer stored by value; C reading it
// gets the address of that integer, and Fortran reading a C pointer gets its bits.

// fortranKey maps a predefined keyval as Fortran names it (C's plus one: MPICH's
// MPII_ATTR_C_TO_FORTRAN) to C's.
func fortranKey(key int) int {
	if predefinedKey(key) && key&1 == 0 {
		return key - 1
	}
	return key
}

// checkAttrType checks an MPIR_Attr_type argument.
func checkAttrType(typ int) error {
	switch typ {
	case attrPtr, attrAint, attrInt:
		return nil
	}
	return mpiErr(mpi_ERR_ARG, fmt.Sprintf("attribute type %d is not MPIR_ATTR_PTR, MPIR_ATTR_AINT or MPIR_ATTR_INT", typ))
}

// predefinedAs gives a predefined attribute's value p, the pointer C's get returns, as
// out asks: the pointer for C, the value (an address for MPI_WIN_BASE, an MPI_Aint for
// MPI_WIN_SIZE, else an int) for Fortran.
func predefinedAs(key int, p, val unsafe.Pointer, out int) {
	switch {
	case out == attrPtr:
		*(*unsafe.Pointer)(val) = p
	case key == mpi_WIN_BASE:
		*(*uintptr)(val) = uintptr(p)
	case key == mpi_WIN_SIZE:
		*(*int64)(val) = *(*int64)(p)
	default:
		*(*int64)(val) = int64(*(*int32)(p))
	}
}

// commGetAttrAs is MPI_Comm_get_attr with the value given as out asks.
func commGetAttrAs(c Comm, key int, val unsafe.Pointer, flag *int32, out int) error {
	if err := checkAttrType(out); err != nil {
		return err
	}
	if val == nil || flag == nil {
		return mpiErr(mpi_ERR_ARG, "attribute_val or flag is NULL")
	}
	if predefinedKey(key) {
		key = fortranKey(key)
		var p unsafe.Pointer
		if err := doCommGetAttr(c, key, unsafe.Pointer(&p), flag); err != nil {
			return err
		}
		if *flag != 0 {
			predefinedAs(key, p, val, out)
		}
		return nil
	}
	co, err := commOf(c)
	if err != nil {
		return err
	}
	return co.attrs.get(objComm, key, val, flag, out)
}

// winGetAttrAs is MPI_Win_get_attr with the value given as out asks.
func winGetAttrAs(h Win, key int, val unsafe.Pointer, flag *int32, out int) error {
	if err := checkAttrType(out); err != nil {
		return err
	}
	if val == nil || flag == nil {
		return mpiErr(mpi_ERR_ARG, "attribute_val or flag is NULL")
	}
	if predefinedKey(key) {
		key = fortranKey(key)
		var p unsafe.Pointer
		if err := doWinGetAttr(h, key, unsafe.Pointer(&p), flag); err != nil {
			return err
		}
		if *flag != 0 {
			predefinedAs(key, p, val, out)
		}
		return nil
	}
	if _, err := winOf(h); err != nil {
		return err
	}
	return getWinUserAttr(h, key, val, flag, out)
}

//export gorma_MPII_Comm_set_attr
func gorma_MPII_Comm_set_attr(c, key C.int, val unsafe.Pointer, typ C.int) (rc C.int) {
	defer catch(fnCommSetAttr, &rc)
	err := checkAttrType(int(typ))
	if err == nil {
		err = setCommAttr(Comm(c), int(key), val, int(typ))
	}
	if err != nil {
		return C.int(failComm(fnCommSetAttr, Comm(c), err))
	}
	return 0
}

//export gorma_MPII_Type_set_attr
func gorma_MPII_Type_set_attr(d, key C.int, val unsafe.Pointer, typ C.int) (rc C.int) {
	defer catch(fnTypeSetAttr, &rc)
	err := checkAttrType(int(typ))
	if err == nil {
		err = setTypeAttr(Datatype(d), int(key), val, int(typ))
	}
	if err != nil {
		return C.int(failComm(fnTypeSetAttr, mpi_COMM_WORLD, err))
	}
	return 0
}

//export gorma_MPII_Win_set_attr
func gorma_MPII_Win_set_attr(w, key C.int, val unsafe.Pointer, typ C.int) (rc C.int) {
	defer catch(fnWinSetAttr, &rc)
	err := checkAttrType(int(typ))
	if err == nil {
		err = setWinAttr(Win(w), int(key), val, int(typ))
	}
	if err != nil {
		return C.int(failWin(fnWinSetAttr, Win(w), err))
	}
	return 0
}

//export gorma_MPII_Comm_get_attr
func gorma_MPII_Comm_get_attr(c, key C.int, val unsafe.Pointer, flag *C.int, typ C.int) (rc C.int) {
	defer catch(fnCommGetAttr, &rc)
	if err := commGetAttrAs(Comm(c), int(key), val, (*int32)(unsafe.Pointer(flag)), int(typ)); err != nil {
		return C.int(failComm(fnCommGetAttr, Comm(c), err))
	}
	return 0
}

//export gorma_MPII_Type_get_attr
func gorma_MPII_Type_get_attr(d, key C.int, val unsafe.Pointer, flag *C.int, typ C.int) (rc C.int) {
	defer catch(fnTypeGetAttr, &rc)
	err := checkAttrType(int(typ))
	if err == nil {
		err = getTypeAttr(Datatype(d), int(key), val, (*int32)(unsafe.Pointer(flag)), int(typ))
	}
	if err != nil {
		return C.int(failComm(fnTypeGetAttr, mpi_COMM_WORLD, err))
	}
	return 0
}

//export gorma_MPII_Win_get_attr
func gorma_MPII_Win_get_attr(w, key C.int, val unsafe.Pointer, flag *C.int, typ C.int) (rc C.int) {
	defer catch(fnWinGetAttr, &rc)
	if err := winGetAttrAs(Win(w), int(key), val, (*int32)(unsafe.Pointer(flag)), int(typ)); err != nil {
		return C.int(failWin(fnWinGetAttr, Win(w), err))
	}
	return 0
}

// gorma_MPII_Keyval_set_proxy is MPII_Keyval_set_proxy: keyval's callbacks are
// Fortran's, called through libmpichfort's proxies. MPICH's returns nothing and
// ignores an invalid keyval; so does this.
//
//export gorma_MPII_Keyval_set_proxy
func gorma_MPII_Keyval_set_proxy(key C.int, copyProxy, deleteProxy unsafe.Pointer) {
	var rc C.int
	defer catch(fnCommCreateKeyval, &rc)
	k, ok := keyvals.get(int32(key))
	if !ok {
		return
	}
	keyMu.Lock()
	k.copyProxy, k.deleteProxy = copyProxy, deleteProxy
	keyMu.Unlock()
}

// fortranGreqs marks the generalized requests whose callbacks are Fortran subroutines
// (MPII_Grequest_set_lang_f77), for the code that calls a generalized request's
// callbacks: a marked request's query, free and cancel functions take every argument by
// reference and return the error in a last INTEGER argument (query(extra_state, status,
// ierr), free(extra_state, ierr), cancel(extra_state, complete, ierr)), extra_state an
// INTEGER(KIND=MPI_ADDRESS_KIND). The request's free drops its mark.
var fortranGreqs struct {
	mu sync.Mutex
	m  map[Request]bool
}

// gorma_MPII_Grequest_set_lang_f77 is MPII_Grequest_set_lang_f77: libmpichfort's
// MPI_GREQUEST_START marks its request as Fortran's.
//
//export gorma_MPII_Grequest_set_lang_f77
func gorma_MPII_Grequest_set_lang_f77(r C.int) {
	fortranGreqs.mu.Lock()
	defer fortranGreqs.mu.Unlock()
	if fortranGreqs.m == nil {
		fortranGreqs.m = map[Request]bool{}
	}
	fortranGreqs.m[Request(r)] = true
}
