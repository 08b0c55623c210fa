//go:build cgo

/* The helpers that Debian's libmpichfort.so.12 imports from MPICH's library for
 * attributes and generalized requests (MPICH's src/mpi/attr/attrutil.c and
 * src/mpi/request/mpir_request.c). They are not in mpi_proto.h. Each checks for a
 * child of fork, as the PMPI_ functions do, and enters Go (fortattr.go). The
 * MPIR_Attr_type arguments are C enums: ints. */

#include "_cgo_export.h"
#include "abi.h"

/* MPICH's MPII_Attr_copy_proxy and MPII_Attr_delete_proxy: the functions of
 * libmpichfort that call a Fortran keyval's callbacks. */
typedef int (*gorma_copy_proxy)(void *fn, int handle, int keyval, void *extra, int type,
	void *val, void **out, int *flag);
typedef int (*gorma_delete_proxy)(void *fn, int handle, int keyval, int type, void *val,
	void *extra);

/* gorma_attr_copy_proxy calls a copy proxy with the value held in cell. */
int gorma_attr_copy_proxy(void *proxy, void *fn, int handle, int keyval, void *extra, int type,
	void *cell, void *out, void *flag)
{
	return ((gorma_copy_proxy)proxy)(fn, handle, keyval, extra, type, *(void **)cell,
		(void **)out, (int *)flag);
}

/* gorma_attr_delete_proxy calls a delete proxy with the value held in cell. */
int gorma_attr_delete_proxy(void *proxy, void *fn, int handle, int keyval, int type, void *cell,
	void *extra)
{
	return ((gorma_delete_proxy)proxy)(fn, handle, keyval, type, *(void **)cell, extra);
}

#define GORMA_FORK_CHECK(name) \
	if (__builtin_expect(gorma_forked, 0)) \
		return gorma_forked_call(name)

int MPII_Comm_set_attr(int comm, int keyval, void *val, int type)
{
	GORMA_FORK_CHECK("MPII_Comm_set_attr");
	return gorma_MPII_Comm_set_attr(comm, keyval, val, type);
}

int MPII_Type_set_attr(int datatype, int keyval, void *val, int type)
{
	GORMA_FORK_CHECK("MPII_Type_set_attr");
	return gorma_MPII_Type_set_attr(datatype, keyval, val, type);
}

int MPII_Win_set_attr(int win, int keyval, void *val, int type)
{
	GORMA_FORK_CHECK("MPII_Win_set_attr");
	return gorma_MPII_Win_set_attr(win, keyval, val, type);
}

int MPII_Comm_get_attr(int comm, int keyval, void *val, int *flag, int type)
{
	GORMA_FORK_CHECK("MPII_Comm_get_attr");
	return gorma_MPII_Comm_get_attr(comm, keyval, val, flag, type);
}

int MPII_Type_get_attr(int datatype, int keyval, void *val, int *flag, int type)
{
	GORMA_FORK_CHECK("MPII_Type_get_attr");
	return gorma_MPII_Type_get_attr(datatype, keyval, val, flag, type);
}

int MPII_Win_get_attr(int win, int keyval, void *val, int *flag, int type)
{
	GORMA_FORK_CHECK("MPII_Win_get_attr");
	return gorma_MPII_Win_get_attr(win, keyval, val, flag, type);
}

void MPII_Keyval_set_proxy(int keyval, void *copy_proxy, void *delete_proxy)
{
	if (__builtin_expect(gorma_forked, 0)) {
		gorma_forked_call("MPII_Keyval_set_proxy");
		return;
	}
	gorma_MPII_Keyval_set_proxy(keyval, copy_proxy, delete_proxy);
}

void MPII_Grequest_set_lang_f77(int greq)
{
	if (__builtin_expect(gorma_forked, 0)) {
		gorma_forked_call("MPII_Grequest_set_lang_f77");
		return;
	}
	gorma_MPII_Grequest_set_lang_f77(greq);
}
