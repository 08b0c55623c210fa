/* attrwincheck: attributes of communicators, datatypes and windows (with MPICH's
 * helpers for Fortran), window names, groups, hints, PSCW's MPI_Win_test, shared and
 * dynamic windows, MPI_Rget_accumulate, info objects, user error classes and codes,
 * and the calls that invoke error handlers. Run at 2 ranks on one host; with the
 * argument "rget", MPI_Rget_accumulate alone. Each check aborts with a
 * message on a wrong value; the lines printed are the same on every MPI library. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* MPICH's helpers for its Fortran bindings (mpir_attr_generic.h), exported by
 * libmpich.so.12 but in no installed header. */
enum { ATTR_PTR = 0, ATTR_AINT = 1, ATTR_INT = 3 };
typedef int (copy_proxy)(MPI_Comm_copy_attr_function *, int, int, void *, int, void *,
			 void **, int *);
typedef int (delete_proxy)(MPI_Comm_delete_attr_function *, int, int, int, void *, void *);
int MPII_Comm_set_attr(MPI_Comm, int, void *, int);
int MPII_Comm_get_attr(MPI_Comm, int, void *, int *, int);
int MPII_Type_set_attr(MPI_Datatype, int, void *, int);
int MPII_Type_get_attr(MPI_Datatype, int, void *, int *, int);
int MPII_Win_set_attr(MPI_Win, int, void *, int);
int MPII_Win_get_attr(MPI_Win, int, void *, int *, int);
void MPII_Keyval_set_proxy(int, copy_proxy *, delete_proxy *);

static int rank, size;

#define CHECK(cond, ...)                                                        \
	do {                                                                    \
		if (!(cond)) {                                                  \
			fprintf(stderr, "rank %d: line %d: ", rank, __LINE__);  \
			fprintf(stderr, __VA_ARGS__);                           \
			fprintf(stderr, "\n");                                  \
			MPI_Abort(MPI_COMM_WORLD, 1);                           \
		}                                                               \
	} while (0)
#define OK(call) CHECK((call) == MPI_SUCCESS, "%s failed", #call)

static void say(const char *what)
{
	/* Each rank prints; the lines are compared sorted. */
	printf("rank %d: %s ok\n", rank, what);
}

static int class_of(int rc)
{
	int c;
	MPI_Error_class(rc, &c);
	return c;
}

/* Callbacks: they count their calls and record what they saw. */
static int copies, deletes, last_handle;
static void *last_val;

static int copy_fn(int h, int key, void *extra, void *in, void *out, int *flag)
{
	(void)key;
	copies++;
	last_handle = h;
	*(void **)out = (char *)in + *(int *)extra;
	*flag = 1;
	return MPI_SUCCESS;
}

static int delete_fn(int h, int key, void *val, void *extra)
{
	(void)key;
	(void)extra;
	deletes++;
	last_handle = h;
	last_val = val;
	return MPI_SUCCESS;
}

static int fail_deletes = 1;

static int failing_delete(int h, int key, void *val, void *extra)
{
	(void)h; (void)key; (void)val; (void)extra;
	return fail_deletes ? MPI_ERR_OTHER : MPI_SUCCESS;
}

static void comm_attrs(void)
{
	static char vals[8];
	int extra = 1, key, key1, flag;
	void *v;
	MPI_Comm dup;

	/* MPI-1's names. */
	OK(MPI_Keyval_create((MPI_Copy_function *)copy_fn, (MPI_Delete_function *)delete_fn, &key1, &extra));
	OK(MPI_Attr_put(MPI_COMM_WORLD, key1, &vals[2]));
	OK(MPI_Attr_get(MPI_COMM_WORLD, key1, &v, &flag));
	CHECK(flag && v == &vals[2], "MPI_Attr_get: flag %d", flag);
	copies = deletes = 0;
	OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
	CHECK(copies == 1 && last_handle == (int)MPI_COMM_WORLD, "copies %d", copies);
	OK(MPI_Attr_get(dup, key1, &v, &flag));
	CHECK(flag && v == &vals[3], "the dup's value: flag %d", flag);
	OK(MPI_Attr_put(dup, key1, &vals[5])); /* replaces: the old value is deleted */
	CHECK(deletes == 1 && last_val == &vals[3], "replace: deletes %d", deletes);
	OK(MPI_Comm_free(&dup));
	CHECK(deletes == 2 && last_val == &vals[5], "free: deletes %d", deletes);
	OK(MPI_Attr_delete(MPI_COMM_WORLD, key1));
	CHECK(deletes == 3 && last_val == &vals[2], "delete: deletes %d", deletes);
	OK(MPI_Attr_get(MPI_COMM_WORLD, key1, &v, &flag));
	CHECK(!flag, "after delete: flag %d", flag);
	OK(MPI_Attr_delete(MPI_COMM_WORLD, key1)); /* none set: not an error */
	OK(MPI_Keyval_free(&key1));
	CHECK(key1 == MPI_KEYVAL_INVALID, "MPI_Keyval_free left %d", key1);
	say("comm attributes");

	/* A failing delete callback fails the call; a keyval of another kind is refused. */
	OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, failing_delete, &key, NULL));
	OK(MPI_Comm_set_attr(MPI_COMM_WORLD, key, vals));
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	int rc = MPI_Comm_delete_attr(MPI_COMM_WORLD, key);
	CHECK(rc != MPI_SUCCESS, "a failing delete callback succeeded");
	int tkey;
	OK(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, &tkey, NULL));
	rc = MPI_Comm_set_attr(MPI_COMM_WORLD, tkey, vals);
	printf("rank %d: a datatype keyval on a communicator: class %d\n", rank, class_of(rc));
	rc = MPI_Comm_set_attr(MPI_COMM_WORLD, MPI_TAG_UB, vals);
	printf("rank %d: setting MPI_TAG_UB: class %d\n", rank, class_of(rc));
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
	OK(MPI_Type_free_keyval(&tkey));
	/* The attribute stayed: delete it with a callback that succeeds. */
	fail_deletes = 0;
	OK(MPI_Comm_delete_attr(MPI_COMM_WORLD, key));
	OK(MPI_Comm_free_keyval(&key));
}

/* The proxies of a Fortran keyval: they call the Fortran callbacks. Here they record
 * the attribute type they are given and call the C callbacks. */
static int proxy_type = -1;

static int my_copy_proxy(MPI_Comm_copy_attr_function *fn, int h, int key, void *extra, int type,
			 void *val, void **out, int *flag)
{
	proxy_type = type;
	return fn(h, key, extra, val, out, flag);
}

static int my_delete_proxy(MPI_Comm_delete_attr_function *fn, int h, int key, int type, void *val,
			   void *extra)
{
	proxy_type = type;
	return fn(h, key, val, extra);
}

static int fortran_copy(int h, int key, void *extra, void *in, void *out, int *flag)
{
	(void)h; (void)key; (void)extra;
	*(intptr_t *)out = (intptr_t)in + 1; /* a Fortran value by value */
	*flag = 1;
	return MPI_SUCCESS;
}

static void fortran_attrs(void)
{
	int key, flag, *ip, zero = 0;
	intptr_t iv;
	void *v;
	MPI_Comm dup;

	/* Stored by value: C gets the address of the integer, Fortran the integer. */
	OK(MPI_Comm_create_keyval(fortran_copy, delete_fn, &key, &zero));
	MPII_Keyval_set_proxy(key, my_copy_proxy, my_delete_proxy);
	OK(MPII_Comm_set_attr(MPI_COMM_WORLD, key, (void *)(intptr_t)41, ATTR_INT));
	OK(MPI_Comm_get_attr(MPI_COMM_WORLD, key, &ip, &flag));
	CHECK(flag && *ip == 41, "C's view of a Fortran INTEGER attribute");
	OK(MPII_Comm_get_attr(MPI_COMM_WORLD, key, &iv, &flag, ATTR_INT));
	CHECK(flag && iv == 41, "Fortran's view: %ld", (long)iv);
	OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
	CHECK(proxy_type == ATTR_INT, "the copy proxy got type %d", proxy_type);
	OK(MPII_Comm_get_attr(dup, key, &iv, &flag, ATTR_AINT));
	CHECK(flag && iv == 42, "the dup's Fortran value: %ld", (long)iv);
	proxy_type = -1;
	deletes = 0;
	OK(MPI_Comm_free(&dup));
	CHECK(proxy_type == ATTR_INT && deletes == 1 && last_val == (void *)(intptr_t)42,
	      "the delete proxy: type %d, %d deletes", proxy_type, deletes);
	OK(MPI_Comm_delete_attr(MPI_COMM_WORLD, key));
	OK(MPI_Comm_free_keyval(&key));

	/* A C pointer read from Fortran is its bits. */
	OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &key, NULL));
	OK(MPI_Comm_set_attr(MPI_COMM_WORLD, key, &zero));
	OK(MPII_Comm_get_attr(MPI_COMM_WORLD, key, &iv, &flag, ATTR_AINT));
	CHECK(flag && iv == (intptr_t)&zero, "Fortran's view of a C pointer");
	OK(MPI_Comm_delete_attr(MPI_COMM_WORLD, key));
	OK(MPI_Comm_free_keyval(&key));

	/* Predefined attributes, by Fortran's keyvals (C's plus one), come as values. */
	OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ip, &flag));
	CHECK(flag, "no MPI_TAG_UB");
	OK(MPII_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB + 1, &iv, &flag, ATTR_INT));
	CHECK(flag && iv == *ip, "Fortran's MPI_TAG_UB %ld, C's %d", (long)iv, *ip);

	/* Datatypes. */
	OK(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, &key, NULL));
	OK(MPII_Type_set_attr(MPI_DOUBLE, key, (void *)(intptr_t)7, ATTR_AINT));
	OK(MPII_Type_get_attr(MPI_DOUBLE, key, &iv, &flag, ATTR_AINT));
	CHECK(flag && iv == 7, "a datatype's Fortran attribute");
	OK(MPI_Type_get_attr(MPI_DOUBLE, key, &v, &flag));
	CHECK(flag && *(intptr_t *)v == 7, "C's view of a datatype's Fortran attribute");
	OK(MPI_Type_delete_attr(MPI_DOUBLE, key));
	OK(MPI_Type_free_keyval(&key));
	say("fortran attributes");
}

static void type_attrs(void)
{
	static char vals[4];
	int extra = 0, key, flag;
	void *v;
	MPI_Datatype vec;

	OK(MPI_Type_create_keyval(copy_fn, delete_fn, &key, &extra));
	OK(MPI_Type_set_attr(MPI_INT, key, &vals[0]));
	OK(MPI_Type_get_attr(MPI_INT, key, &v, &flag));
	CHECK(flag && v == &vals[0], "MPI_INT's attribute");
	OK(MPI_Type_vector(2, 1, 2, MPI_INT, &vec));
	OK(MPI_Type_get_attr(vec, key, &v, &flag));
	CHECK(!flag, "a new type has an attribute");
	OK(MPI_Type_set_attr(vec, key, &vals[1]));
	deletes = 0;
	OK(MPI_Type_free(&vec));
	CHECK(deletes == 1 && last_val == &vals[1], "MPI_Type_free: %d deletes", deletes);
	OK(MPI_Type_delete_attr(MPI_INT, key));
	CHECK(deletes == 2 && last_handle == (int)MPI_INT, "MPI_Type_delete_attr: %d deletes", deletes);
	OK(MPI_Type_get_attr(MPI_INT, key, &v, &flag));
	CHECK(!flag, "after delete");
	OK(MPI_Type_free_keyval(&key));
	say("datatype attributes");
}

/* Window error handlers. */
static int win_errors, win_code;

static void win_handler(MPI_Win *w, int *code, ...)
{
	(void)w;
	win_errors++;
	win_code = *code;
}

static int comm_errors, comm_code;

static void comm_handler(MPI_Comm *c, int *code, ...)
{
	(void)c;
	comm_errors++;
	comm_code = *code;
}

static void win_basics(void)
{
	int *base, key, flag, n, *ip, extra = 0;
	MPI_Win win;
	MPI_Aint *sz;
	void *v;
	char name[MPI_MAX_OBJECT_NAME];
	intptr_t iv;

	OK(MPI_Win_allocate(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));

	/* Names. */
	OK(MPI_Win_get_name(win, name, &n));
	CHECK(n == 0 && name[0] == 0, "a new window's name is %s", name);
	OK(MPI_Win_set_name(win, "halo"));
	OK(MPI_Win_get_name(win, name, &n));
	CHECK(n == 4 && strcmp(name, "halo") == 0, "the name is %s", name);

	/* Group. */
	MPI_Group g, wg;
	int gs, r[2] = {0, 1}, tr[2];
	OK(MPI_Win_get_group(win, &g));
	OK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
	OK(MPI_Group_size(g, &gs));
	OK(MPI_Group_translate_ranks(g, 2, r, wg, tr));
	CHECK(gs == size && tr[0] == 0 && tr[1] == 1, "the window's group");
	OK(MPI_Group_free(&g));
	OK(MPI_Group_free(&wg));

	/* Hints. */
	MPI_Info in, used;
	char val[MPI_MAX_INFO_VAL + 1];
	OK(MPI_Info_create(&in));
	OK(MPI_Info_set(in, "no_locks", "true"));
	OK(MPI_Win_set_info(win, in));
	OK(MPI_Info_free(&in));
	OK(MPI_Win_get_info(win, &used));
	OK(MPI_Info_get(used, "no_locks", MPI_MAX_INFO_VAL, val, &flag));
	CHECK(flag && strcmp(val, "true") == 0, "no_locks: flag %d", flag);
	OK(MPI_Info_free(&used));

	/* User attributes beside the predefined ones; MPI_Win_free deletes them. */
	OK(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, delete_fn, &key, &extra));
	OK(MPI_Win_set_attr(win, key, &extra));
	OK(MPI_Win_get_attr(win, key, &v, &flag));
	CHECK(flag && v == &extra, "a window's attribute");
	OK(MPI_Win_get_attr(win, MPI_WIN_SIZE, &sz, &flag));
	CHECK(flag && *sz == 4 * sizeof(int), "MPI_WIN_SIZE");
	OK(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &ip, &flag));
	CHECK(flag && *ip == MPI_WIN_FLAVOR_ALLOCATE, "the flavor is %d", *ip);
	OK(MPII_Win_get_attr(win, MPI_WIN_DISP_UNIT + 1, &iv, &flag, ATTR_AINT));
	CHECK(flag && iv == sizeof(int), "Fortran's MPI_WIN_DISP_UNIT %ld", (long)iv);
	OK(MPII_Win_get_attr(win, MPI_WIN_BASE + 1, &iv, &flag, ATTR_AINT));
	CHECK(flag && iv == (intptr_t)base, "Fortran's MPI_WIN_BASE");
	deletes = 0;
	OK(MPII_Win_set_attr(win, key, (void *)(intptr_t)5, ATTR_INT));
	CHECK(deletes == 1 && last_val == &extra, "the replaced window attribute");
	OK(MPI_Win_get_attr(win, key, &ip, &flag));
	CHECK(flag && *ip == 5, "C's view of a window's Fortran attribute");
	OK(MPI_Win_delete_attr(win, key));
	CHECK(deletes == 2, "MPI_Win_delete_attr: %d deletes", deletes);
	OK(MPI_Win_set_attr(win, key, &extra));

	/* Error handlers. */
	MPI_Errhandler eh, got;
	OK(MPI_Win_create_errhandler(win_handler, &eh));
	OK(MPI_Win_set_errhandler(win, eh));
	OK(MPI_Win_get_errhandler(win, &got));
	CHECK(got == eh, "MPI_Win_get_errhandler");
	OK(MPI_Win_call_errhandler(win, MPI_ERR_OTHER));
	CHECK(win_errors == 1 && win_code == MPI_ERR_OTHER, "the window's handler: %d calls", win_errors);
	int rc = MPI_Put(&extra, 1, MPI_INT, 99, 0, 1, MPI_INT, win); /* a bad rank */
	CHECK(rc != MPI_SUCCESS && win_errors == 2 && class_of(win_code) == MPI_ERR_RANK,
	      "a bad rank: rc %d, %d calls", rc, win_errors);
	OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
	OK(MPI_Errhandler_free(&eh));
	OK(MPI_Win_call_errhandler(win, MPI_ERR_OTHER)); /* MPI_ERRORS_RETURN: nothing */
	CHECK(win_errors == 2, "MPI_ERRORS_RETURN called the handler");

	deletes = 0;
	OK(MPI_Win_free(&win));
	CHECK(deletes == 1 && last_val == &extra, "MPI_Win_free: %d deletes", deletes);
	OK(MPI_Win_free_keyval(&key));
	say("window names, groups, hints, attributes and handlers");
}

static void pscw(void)
{
	int *base, flag = 0;
	MPI_Win win;
	MPI_Group wg, peer;
	int other = 1 - rank;

	OK(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
	*base = 0;
	OK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
	OK(MPI_Group_incl(wg, 1, &other, &peer));
	OK(MPI_Barrier(MPI_COMM_WORLD));
	if (rank == 0) {
		OK(MPI_Win_post(peer, 0, win));
		while (!flag)
			OK(MPI_Win_test(win, &flag));
		CHECK(*base == 7, "after MPI_Win_test: %d", *base);
	} else {
		int seven = 7;
		OK(MPI_Win_start(peer, 0, win));
		OK(MPI_Put(&seven, 1, MPI_INT, 0, 0, 1, MPI_INT, win));
		OK(MPI_Win_complete(win));
	}
	OK(MPI_Group_free(&peer));
	OK(MPI_Group_free(&wg));
	OK(MPI_Win_free(&win));
	say("MPI_Win_test");
}

static void shared(void)
{
	int *base, *other, unit, flag, *ip;
	MPI_Aint sz;
	MPI_Win win;
	MPI_Comm node = MPI_COMM_WORLD; /* the ranks run on one host */

	OK(MPI_Win_allocate_shared((rank + 1) * 2 * sizeof(int), sizeof(int), MPI_INFO_NULL, node, &base, &win));
	OK(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &ip, &flag));
	CHECK(flag && *ip == MPI_WIN_FLAVOR_SHARED, "the flavor is %d", *ip);
	OK(MPI_Win_lock_all(0, win));
	for (int i = 0; i < (rank + 1) * 2; i++)
		base[i] = 100 * rank + i;
	OK(MPI_Win_sync(win));
	OK(MPI_Barrier(node));
	OK(MPI_Win_sync(win));
	for (int r = 0; r < size; r++) {
		OK(MPI_Win_shared_query(win, r, &sz, &unit, &other));
		CHECK(sz == (MPI_Aint)((r + 1) * 2 * sizeof(int)) && unit == sizeof(int), "rank %d: size %ld", r, (long)sz);
		for (int i = 0; i < (r + 1) * 2; i++)
			CHECK(other[i] == 100 * r + i, "rank %d's element %d is %d", r, i, other[i]);
	}
	/* The segment is contiguous: rank 1's memory follows rank 0's. */
	OK(MPI_Win_shared_query(win, MPI_PROC_NULL, &sz, &unit, &other));
	CHECK(other[2] == 100 && other[5] == 103, "the segment from MPI_PROC_NULL");
	OK(MPI_Win_unlock_all(win));
	OK(MPI_Win_free(&win));
	say("shared windows");
}

static void dynamic(void)
{
	MPI_Win win;
	int flag, *ip, buf[4] = {0, 0, 0, 0}, other = 1 - rank;
	MPI_Aint addr, addrs[2];

	OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
	OK(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &ip, &flag));
	CHECK(flag && *ip == MPI_WIN_FLAVOR_DYNAMIC, "the flavor is %d", *ip);
	OK(MPI_Win_attach(win, buf, sizeof buf));
	OK(MPI_Get_address(&buf[1], &addr));
	OK(MPI_Allgather(&addr, 1, MPI_AINT, addrs, 1, MPI_AINT, MPI_COMM_WORLD));
	int v[2] = {10 + rank, 20 + rank};
	OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, other, 0, win));
	OK(MPI_Put(v, 2, MPI_INT, other, addrs[other], 2, MPI_INT, win));
	OK(MPI_Win_unlock(other, win));
	OK(MPI_Barrier(MPI_COMM_WORLD));
	int mine = -1;
	OK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
	OK(MPI_Get(&mine, 1, MPI_INT, rank, addrs[rank] + sizeof(int), 1, MPI_INT, win));
	OK(MPI_Win_unlock(rank, win));
	CHECK(buf[0] == 0 && buf[1] == 10 + other && buf[2] == 20 + other && buf[3] == 0 && mine == buf[2],
	      "after the put: %d %d %d %d, got %d", buf[0], buf[1], buf[2], buf[3], mine);
	int back[2];
	OK(MPI_Win_lock(MPI_LOCK_SHARED, other, 0, win));
	OK(MPI_Get(back, 2, MPI_INT, other, addrs[other], 2, MPI_INT, win));
	OK(MPI_Win_unlock(other, win));
	CHECK(back[0] == 10 + rank && back[1] == 20 + rank, "the get: %d %d", back[0], back[1]);
	/* A buffer attached after the origin's first access. */
	int buf2[2] = {0, 0};
	OK(MPI_Win_attach(win, buf2, sizeof buf2));
	OK(MPI_Get_address(buf2, &addr));
	OK(MPI_Allgather(&addr, 1, MPI_AINT, addrs, 1, MPI_AINT, MPI_COMM_WORLD));
	OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, other, 0, win));
	OK(MPI_Put(v, 2, MPI_INT, other, addrs[other], 2, MPI_INT, win));
	OK(MPI_Win_unlock(other, win));
	OK(MPI_Barrier(MPI_COMM_WORLD));
	OK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
	CHECK(buf2[0] == 10 + other && buf2[1] == 20 + other, "the second buffer: %d %d", buf2[0], buf2[1]);
	OK(MPI_Win_unlock(rank, win));
	OK(MPI_Barrier(MPI_COMM_WORLD));
	OK(MPI_Win_detach(win, buf));
	OK(MPI_Win_detach(win, buf2));
	OK(MPI_Win_free(&win));
	say("dynamic windows");
}

static void rget_accumulate(void)
{
	int *base, other = 1 - rank;
	MPI_Win win;
	MPI_Request req;

	OK(MPI_Win_allocate(2 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
	base[0] = 5 * (rank + 1);
	base[1] = 6 * (rank + 1);
	OK(MPI_Barrier(MPI_COMM_WORLD));
	int add[2] = {1, 2}, old[2];
	OK(MPI_Win_lock_all(0, win));
	OK(MPI_Rget_accumulate(add, 2, MPI_INT, old, 2, MPI_INT, other, 0, 2, MPI_INT, MPI_SUM, win, &req));
	OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
	OK(MPI_Win_unlock_all(win));
	CHECK(old[0] == 5 * (other + 1) && old[1] == 6 * (other + 1), "the old values: %d %d", old[0], old[1]);
	OK(MPI_Barrier(MPI_COMM_WORLD));
	OK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
	CHECK(base[0] == 5 * (rank + 1) + 1 && base[1] == 6 * (rank + 1) + 2, "the sums: %d %d", base[0], base[1]);
	OK(MPI_Win_unlock(rank, win));
	OK(MPI_Win_free(&win));
	say("MPI_Rget_accumulate");
}

static void infos(void)
{
	MPI_Info in, dup;
	int n, flag, len;
	char key[MPI_MAX_INFO_KEY + 1], val[64];

	OK(MPI_Info_create(&in));
	OK(MPI_Info_set(in, "b", "two"));
	OK(MPI_Info_set(in, "a", "one"));
	OK(MPI_Info_set(in, "c", "three"));
	OK(MPI_Info_set(in, "b", "deux")); /* replaces, keeps its place */
	OK(MPI_Info_get_nkeys(in, &n));
	CHECK(n == 3, "%d keys", n);
	for (int i = 0; i < n; i++) {
		OK(MPI_Info_get_nthkey(in, i, key));
		OK(MPI_Info_get(in, key, sizeof val - 1, val, &flag));
		CHECK(flag, "no %s", key);
		printf("rank %d: info key %d: %s = %s\n", rank, i, key, val);
	}
	OK(MPI_Info_get_valuelen(in, "c", &len, &flag));
	CHECK(flag && len == 5, "valuelen %d", len);
	OK(MPI_Info_get_valuelen(in, "z", &len, &flag));
	CHECK(!flag, "z has a value");
	len = 0;
	OK(MPI_Info_get_string(in, "c", &len, val, &flag));
	CHECK(flag && len == 6, "MPI_Info_get_string's length %d", len);
	len = 3;
	OK(MPI_Info_get_string(in, "c", &len, val, &flag));
	CHECK(flag && len == 6 && strcmp(val, "th") == 0, "a cut value: %s", val);
	OK(MPI_Info_dup(in, &dup));
	OK(MPI_Info_delete(in, "a"));
	OK(MPI_Info_get_nkeys(in, &n));
	CHECK(n == 2, "%d keys after delete", n);
	OK(MPI_Info_get_nkeys(dup, &n));
	CHECK(n == 3, "%d keys in the dup", n);
	OK(MPI_Info_get(dup, "a", sizeof val - 1, val, &flag));
	CHECK(flag && strcmp(val, "one") == 0, "the dup's a: %s", val);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	int rc = MPI_Info_delete(in, "a");
	printf("rank %d: deleting a missing key: class %d\n", rank, class_of(rc));
	rc = MPI_Info_get_nthkey(in, 5, key);
	printf("rank %d: key 5 of 2: class %d\n", rank, class_of(rc));
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
	OK(MPI_Info_free(&in));
	OK(MPI_Info_free(&dup));
	CHECK(in == MPI_INFO_NULL, "MPI_Info_free");

	/* MPI_INFO_ENV may hold any of the reserved keys; whatever it has is well-formed. */
	OK(MPI_Info_get_nkeys(MPI_INFO_ENV, &n));
	for (int i = 0; i < n; i++) {
		OK(MPI_Info_get_nthkey(MPI_INFO_ENV, i, key));
		OK(MPI_Info_get_valuelen(MPI_INFO_ENV, key, &len, &flag));
		CHECK(flag && len >= 0, "MPI_INFO_ENV's %s", key);
	}
	OK(MPI_Info_get(MPI_INFO_ENV, "command", sizeof val - 1, val, &flag));
	CHECK(!flag || strstr(val, "attrwincheck") != NULL, "the command is %s", val);
	OK(MPI_Info_create_env(0, NULL, &in));
	OK(MPI_Info_get_nkeys(in, &n));
	OK(MPI_Info_free(&in));
	say("info");
}

static void errors(void)
{
	int cls, cls2, code, c, n, flag, *last;
	char s[MPI_MAX_ERROR_STRING];

	OK(MPI_Add_error_class(&cls));
	CHECK(cls > MPI_ERR_LASTCODE, "the class %#x is not above MPI_ERR_LASTCODE", cls);
	OK(MPI_Add_error_class(&cls2));
	CHECK(cls2 != cls, "two classes alike");
	OK(MPI_Add_error_code(cls, &code));
	OK(MPI_Error_class(code, &c));
	CHECK(c == cls, "the code's class %#x, want %#x", c, cls);
	OK(MPI_Error_string(code, s, &n));
	CHECK(n == 0 && s[0] == 0, "a new code's string is %s", s);
	OK(MPI_Add_error_string(code, "the frobnicator jammed"));
	OK(MPI_Add_error_string(cls, "frobnication"));
	OK(MPI_Error_string(code, s, &n));
	printf("rank %d: user code: %s\n", rank, s);
	OK(MPI_Error_string(cls, s, &n));
	printf("rank %d: user class: %s\n", rank, s);
	OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag));
	CHECK(flag && *last >= cls2, "MPI_LASTUSEDCODE %#x is below the class %#x", *last, cls2);
	OK(MPIX_Delete_error_string(code));
	OK(MPI_Error_string(code, s, &n));
	CHECK(n == 0, "the deleted string is %s", s);
	int ocode;
	OK(MPI_Add_error_code(MPI_ERR_OTHER, &ocode));
	OK(MPI_Error_class(ocode, &c));
	CHECK(c == MPI_ERR_OTHER, "a code of MPI_ERR_OTHER has class %d", c);
	OK(MPIX_Delete_error_code(ocode));
	OK(MPIX_Delete_error_code(code));
	/* Debian's MPICH 4.0.2 frees a deleted class's string again at MPI_Finalize:
	 * delete the string first. */
	OK(MPIX_Delete_error_string(cls));
	OK(MPIX_Delete_error_class(cls2));
	OK(MPIX_Delete_error_class(cls));

	/* Communicator handlers, by MPI-1's names and MPI-2's. */
	MPI_Errhandler eh, got;
	OK(MPI_Errhandler_create(comm_handler, &eh));
	OK(MPI_Errhandler_set(MPI_COMM_WORLD, eh));
	OK(MPI_Errhandler_get(MPI_COMM_WORLD, &got));
	CHECK(got == eh, "MPI_Errhandler_get");
	OK(MPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_ARG));
	CHECK(comm_errors == 1 && comm_code == MPI_ERR_ARG, "the handler: %d calls", comm_errors);
	int rc = MPI_Send(&n, 1, MPI_INT, 99, 0, MPI_COMM_WORLD);
	CHECK(rc != MPI_SUCCESS && comm_errors == 2 && class_of(comm_code) == MPI_ERR_RANK, "a bad rank");
	OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
	OK(MPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_ARG)); /* returns */
	OK(MPI_Errhandler_free(&eh));
	OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
	say("error classes, codes and handlers");
}

static int self_delete(int h, int key, void *val, void *extra)
{
	int flag;
	(void)key; (void)extra;
	MPI_Finalized(&flag);
	CHECK(h == (int)MPI_COMM_SELF && val == &rank && !flag, "MPI_COMM_SELF's delete callback");
	printf("rank %d: MPI_COMM_SELF's attribute deleted in MPI_Finalize\n", rank);
	return MPI_SUCCESS;
}

/* Errors of the arguments, under MPI_ERRORS_RETURN: their classes are MPICH's. */
static void bad_args(void)
{
	int *base, key, flag, buf[4];
	void *v;
	char k[MPI_MAX_INFO_KEY + 50];
	MPI_Win win;
	MPI_Info in;

	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	OK(MPI_Win_allocate(16, 4, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
	OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
	printf("rank %d: MPI_Win_attach on an allocated window: class %d\n", rank, class_of(MPI_Win_attach(win, buf, sizeof buf)));
	printf("rank %d: MPI_Win_test without MPI_Win_post: class %d\n", rank, class_of(MPI_Win_test(win, &flag)));
	printf("rank %d: MPI_Win_call_errhandler on MPI_WIN_NULL: class %d\n", rank, class_of(MPI_Win_call_errhandler(MPI_WIN_NULL, MPI_ERR_OTHER)));
	OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &key, NULL));
	printf("rank %d: a communicator keyval on a datatype: class %d\n", rank, class_of(MPI_Type_get_attr(MPI_INT, key, &v, &flag)));
	printf("rank %d: a communicator keyval on a window: class %d\n", rank, class_of(MPI_Win_set_attr(win, key, &v)));
	OK(MPI_Comm_free_keyval(&key));
	key = MPI_TAG_UB;
	printf("rank %d: freeing MPI_TAG_UB: class %d\n", rank, class_of(MPI_Comm_free_keyval(&key)));
	OK(MPI_Info_create(&in));
	memset(k, 'k', MPI_MAX_INFO_KEY + 10);
	k[MPI_MAX_INFO_KEY + 10] = 0;
	printf("rank %d: a key too long: class %d\n", rank, class_of(MPI_Info_set(in, k, "v")));
	printf("rank %d: an empty key: class %d\n", rank, class_of(MPI_Info_set(in, "", "v")));
	printf("rank %d: key -1: class %d\n", rank, class_of(MPI_Info_get_nthkey(in, -1, k)));
	OK(MPI_Info_free(&in));
	printf("rank %d: deleting code 12345: class %d\n", rank, class_of(MPIX_Delete_error_code(12345)));
	printf("rank %d: deleting class 5: class %d\n", rank, class_of(MPIX_Delete_error_class(5)));
	OK(MPI_Win_free(&win));
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0); /* one write per line: the ranks' lines do not mix */
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	CHECK(size == 2, "run at 2 ranks, not %d", size);
	if (argc > 1 && strcmp(argv[1], "rget") == 0) {
		/* Apart: Debian's MPICH 4.0.2 returns the origin's own values. */
		rget_accumulate();
	} else {
		comm_attrs();
		fortran_attrs();
		type_attrs();
		win_basics();
		pscw();
		shared();
		dynamic();
		infos();
		errors();
		bad_args();
		/* MPI_Finalize deletes MPI_COMM_SELF's attributes first. */
		int key;
		OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete, &key, NULL));
		OK(MPI_Comm_set_attr(MPI_COMM_SELF, key, &rank));
	}
	MPI_Finalize();
	return 0;
}
