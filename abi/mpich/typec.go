//go:build cgo

package mpich

// The large-count datatype constructors take arrays of MPI_Count where the int forms
// take int: both build the same layout and record the same contents.

// doTypeIndexedC is MPI_Type_indexed_c.
func doTypeIndexedC(count int, blocklens, displs *int64, old Datatype, out *Datatype) error {
	return typeIndexed(count, blocklens, displs, old, out)
}

// doTypeCreateHindexedC is MPI_Type_create_hindexed_c.
func doTypeCreateHindexedC(count int, blocklens, displs *int64, old Datatype, out *Datatype) error {
	return typeCreateHindexed(count, blocklens, displs, old, out)
}

// doTypeCreateHindexedBlockC is MPI_Type_create_hindexed_block_c.
func doTypeCreateHindexedBlockC(count, blocklen int, displs *int64, old Datatype, out *Datatype) error {
	return doTypeCreateHindexedBlock(count, blocklen, displs, old, out)
}

// doTypeCreateIndexedBlockC is MPI_Type_create_indexed_block_c.
func doTypeCreateIndexedBlockC(count, blocklen int, displs *int64, old Datatype, out *Datatype) error {
	return typeCreateIndexedBlock(count, blocklen, displs, old, out)
}

// doTypeCreateStructC is MPI_Type_create_struct_c.
func doTypeCreateStructC(count int, blocklens, displs *int64, types *Datatype, out *Datatype) error {
	return typeCreateStruct(count, blocklens, displs, types, out)
}

// doTypeCreateSubarrayC is MPI_Type_create_subarray_c.
func doTypeCreateSubarrayC(ndims int, sizes, subsizes, starts *int64, order int, old Datatype, out *Datatype) error {
	return typeCreateSubarray(ndims, sizes, subsizes, starts, order, old, out)
}

// doTypeCreateDarrayC is MPI_Type_create_darray_c.
func doTypeCreateDarrayC(size, rank, ndims int, gsizes *int64, distribs, dargs, psizes *int32, order int, old Datatype, out *Datatype) error {
	return typeCreateDarray(size, rank, ndims, gsizes, distribs, dargs, psizes, order, old, out)
}
