//go:build cgo

package mpich

// extern void *MPI_F08_STATUS_IGNORE;
// extern void *MPI_F08_STATUSES_IGNORE;
import "C"

import (
	"fmt"
	"unsafe"
)

// MPICH's Fortran status (MPI_Fint[MPI_F_STATUS_SIZE]) and its Fortran 2008 status
// (MPI_F08_status) are five MPI_Fint in MPI_Status's order: count_lo,
// count_hi_and_cancelled, MPI_SOURCE, MPI_TAG, MPI_ERROR. A conversion copies the five.
// A status that is an ignore marker (MPI_STATUS_IGNORE, MPI_F_STATUS_IGNORE,
// MPI_F08_STATUS_IGNORE and their STATUSES forms) fails with MPI_ERR_OTHER, as in
// MPICH. MPI_F_STATUS_IGNORE is NULL in this library (support.c), so NULL does too.

const fStatusSize = 5

// fStatus is the Fortran status at p as five MPI_Fint.
func fStatus(p unsafe.Pointer, what string) (*[fStatusSize]int32, error) {
	if p == nil {
		return nil, errIgnored(what, "MPI_F_STATUS_IGNORE, MPI_F_STATUSES_IGNORE or NULL")
	}
	return (*[fStatusSize]int32)(p), nil
}

// f08Status is the Fortran 2008 status at p as five MPI_Fint.
func f08Status(p unsafe.Pointer, what string) (*[fStatusSize]int32, error) {
	if p == C.MPI_F08_STATUS_IGNORE || p == C.MPI_F08_STATUSES_IGNORE {
		return nil, errIgnored(what, "MPI_F08_STATUS_IGNORE or MPI_F08_STATUSES_IGNORE")
	}
	return fStatus(p, what)
}

// cStatus is the C status at p as five MPI_Fint; the generated call passes nil for
// MPI_STATUS_IGNORE.
func cStatus(p unsafe.Pointer, what string) (*[fStatusSize]int32, error) {
	if p == nil {
		return nil, errIgnored(what, "MPI_STATUS_IGNORE, MPI_STATUSES_IGNORE or NULL")
	}
	return (*[fStatusSize]int32)(p), nil
}

func errIgnored(what, marker string) error {
	return mpiErr(mpi_ERR_OTHER, fmt.Sprintf("%s is %s: a conversion takes a status", what, marker))
}

// copyStatus copies status from (converted by src) to to (converted by dst).
func copyStatus(from, to unsafe.Pointer, src, dst func(unsafe.Pointer, string) (*[fStatusSize]int32, error)) error {
	in, err := src(from, "the input status")
	if err != nil {
		return err
	}
	out, err := dst(to, "the output status")
	if err != nil {
		return err
	}
	*out = *in
	return nil
}

// doStatusC2f is MPI_Status_c2f.
func doStatusC2f(c *Status, f *int32) error {
	return copyStatus(unsafe.Pointer(c), unsafe.Pointer(f), cStatus, fStatus)
}

// doStatusF2c is MPI_Status_f2c.
func doStatusF2c(f *int32, c *Status) error {
	return copyStatus(unsafe.Pointer(f), unsafe.Pointer(c), fStatus, cStatus)
}

// doStatusF082c is MPI_Status_f082c.
func doStatusF082c(f08 unsafe.Pointer, c *Status) error {
	return copyStatus(f08, unsafe.Pointer(c), f08Status, cStatus)
}

// doStatusC2f08 is MPI_Status_c2f08.
func doStatusC2f08(c *Status, f08 unsafe.Pointer) error {
	return copyStatus(unsafe.Pointer(c), f08, cStatus, f08Status)
}

// doStatusF082f is MPI_Status_f082f.
func doStatusF082f(f08 unsafe.Pointer, f *int32) error {
	return copyStatus(f08, unsafe.Pointer(f), f08Status, fStatus)
}

// doStatusF2f08 is MPI_Status_f2f08.
func doStatusF2f08(f *int32, f08 unsafe.Pointer) error {
	return copyStatus(unsafe.Pointer(f), f08, fStatus, f08Status)
}
