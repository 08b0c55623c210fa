/* dtypecheck: MPI's datatype queries and constructors beyond the basic ones, on 2 ranks.
 *
 * It prints deterministic lines (sorted and compared with MPICH's own run by TestDtype)
 * and aborts on a value it knows to be wrong. Rank 0 prints the local checks; the ranks
 * send and receive data of the derived types between them. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank;

#define CHECK(cond, ...)                                               \
    do {                                                               \
        if (!(cond)) {                                                 \
            fprintf(stderr, "dtypecheck: rank %d: line %d: ", rank, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                              \
            fprintf(stderr, "\n");                                     \
            MPI_Abort(MPI_COMM_WORLD, 1);                              \
        }                                                              \
    } while (0)

#define OK(call) CHECK((call) == MPI_SUCCESS, "%s failed", #call)

static int cls(int rc)
{
    int c;
    MPI_Error_class(rc, &c);
    return c;
}

/* Names of the handles a line may print: predefined ones by their MPI name, derived
 * ones by the label they were registered under. */
#define NT 256
static struct { MPI_Datatype t; char n[32]; } known[NT];
static int nknown;

static void reg(MPI_Datatype t, const char *n)
{
    known[nknown].t = t;
    snprintf(known[nknown].n, sizeof known[0].n, "%s", n);
    nknown++;
}

static const char *label(MPI_Datatype t)
{
    for (int i = nknown - 1; i >= 0; i--)
        if (known[i].t == t)
            return known[i].n;
    return "?";
}

/* envelope prints a type's combiner and its contents, then frees the derived
 * datatypes that MPI_Type_get_contents returned. */
static void envelope(const char *what, MPI_Datatype t)
{
    int ni, na, nd, comb;
    OK(MPI_Type_get_envelope(t, &ni, &na, &nd, &comb));
    printf("envelope %s: combiner %d ints %d addrs %d types %d", what, comb, ni, na, nd);
    if (comb == MPI_COMBINER_NAMED) {
        printf("\n");
        return;
    }
    int is[64];
    MPI_Aint as[16];
    MPI_Datatype ds[16];
    CHECK(ni <= 64 && na <= 16 && nd <= 16, "envelope of %s too large", what);
    OK(MPI_Type_get_contents(t, ni, na, nd, is, as, ds));
    printf(" |");
    for (int i = 0; i < ni; i++)
        printf(" %d", is[i]);
    printf(" |");
    for (int i = 0; i < na; i++)
        printf(" %ld", (long)as[i]);
    printf(" |");
    for (int i = 0; i < nd; i++) {
        printf(" %s", label(ds[i]));
        int n2, a2, d2, c2;
        OK(MPI_Type_get_envelope(ds[i], &n2, &a2, &d2, &c2));
        if (c2 != MPI_COMBINER_NAMED)
            OK(MPI_Type_free(&ds[i]));
    }
    printf("\n");
}

/* layout prints a type's size and bounds, and the ints of 0 1 2 ... that one copy of
 * it selects (by MPI_Pack from an array that counts up). */
static void layout(const char *what, MPI_Datatype t, int n)
{
    int size;
    MPI_Aint lb, ext, tlb, text;
    OK(MPI_Type_size(t, &size));
    OK(MPI_Type_get_extent(t, &lb, &ext));
    OK(MPI_Type_get_true_extent(t, &tlb, &text));
    printf("layout %s: size %d lb %ld extent %ld true %ld %ld:", what, size, (long)lb, (long)ext, (long)tlb, (long)text);
    int *src = malloc(n * sizeof(int)), *dst = malloc(size + 4);
    for (int i = 0; i < n; i++)
        src[i] = i;
    int pos = 0;
    OK(MPI_Pack(src, 1, t, dst, size + 4, &pos, MPI_COMM_WORLD));
    CHECK(pos == size, "%s packs %d bytes, size %d", what, pos, size);
    for (int i = 0; i < size / 4; i++)
        printf(" %d", dst[i]);
    printf("\n");
    free(src);
    free(dst);
}

static void names(void)
{
    struct { MPI_Datatype t; const char *n; } p[] = {
        {MPI_CHAR, "MPI_CHAR"}, {MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR"}, {MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR"},
        {MPI_BYTE, "MPI_BYTE"}, {MPI_WCHAR, "MPI_WCHAR"}, {MPI_SHORT, "MPI_SHORT"},
        {MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT"}, {MPI_INT, "MPI_INT"}, {MPI_UNSIGNED, "MPI_UNSIGNED"},
        {MPI_LONG, "MPI_LONG"}, {MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG"}, {MPI_FLOAT, "MPI_FLOAT"},
        {MPI_DOUBLE, "MPI_DOUBLE"}, {MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE"}, {MPI_LONG_LONG, "MPI_LONG_LONG_INT"},
        {MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG"}, {MPI_PACKED, "MPI_PACKED"}, {MPI_2INT, "MPI_2INT"},
        {MPI_COMPLEX, "MPI_COMPLEX"}, {MPI_DOUBLE_COMPLEX, "MPI_DOUBLE_COMPLEX"}, {MPI_LOGICAL, "MPI_LOGICAL"},
        {MPI_REAL, "MPI_REAL"}, {MPI_DOUBLE_PRECISION, "MPI_DOUBLE_PRECISION"}, {MPI_INTEGER, "MPI_INTEGER"},
        {MPI_2INTEGER, "MPI_2INTEGER"}, {MPI_2REAL, "MPI_2REAL"}, {MPI_CHARACTER, "MPI_CHARACTER"},
        {MPI_REAL4, "MPI_REAL4"}, {MPI_REAL8, "MPI_REAL8"}, {MPI_COMPLEX8, "MPI_COMPLEX8"},
        {MPI_COMPLEX16, "MPI_COMPLEX16"}, {MPI_COMPLEX32, "MPI_COMPLEX32"}, {MPI_INTEGER1, "MPI_INTEGER1"},
        {MPI_INTEGER2, "MPI_INTEGER2"}, {MPI_INTEGER4, "MPI_INTEGER4"}, {MPI_INTEGER8, "MPI_INTEGER8"},
        {MPI_INT8_T, "MPI_INT8_T"}, {MPI_INT16_T, "MPI_INT16_T"}, {MPI_INT32_T, "MPI_INT32_T"},
        {MPI_INT64_T, "MPI_INT64_T"}, {MPI_UINT8_T, "MPI_UINT8_T"}, {MPI_UINT16_T, "MPI_UINT16_T"},
        {MPI_UINT32_T, "MPI_UINT32_T"}, {MPI_UINT64_T, "MPI_UINT64_T"}, {MPI_C_BOOL, "MPI_C_BOOL"},
        {MPI_C_FLOAT_COMPLEX, "MPI_C_COMPLEX"}, {MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX"},
        {MPI_AINT, "MPI_AINT"}, {MPI_OFFSET, "MPI_OFFSET"}, {MPI_COUNT, "MPI_COUNT"}, {MPI_CXX_BOOL, "MPI_CXX_BOOL"},
        {MPI_CXX_FLOAT_COMPLEX, "MPI_CXX_FLOAT_COMPLEX"}, {MPI_CXX_DOUBLE_COMPLEX, "MPI_CXX_DOUBLE_COMPLEX"},
    };
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
        OK(MPI_Type_get_name(p[i].t, name, &len));
        CHECK(strcmp(name, p[i].n) == 0 && len == (int)strlen(p[i].n), "name of %s: %s (%d)", p[i].n, name, len);
        reg(p[i].t, p[i].n);
        envelope(p[i].n, p[i].t);
    }
    MPI_Datatype v, d;
    OK(MPI_Type_vector(2, 1, 3, MPI_INT, &v));
    OK(MPI_Type_get_name(v, name, &len));
    CHECK(len == 0 && name[0] == 0, "a new type's name is '%s'", name);
    OK(MPI_Type_set_name(v, "column"));
    OK(MPI_Type_get_name(v, name, &len));
    CHECK(strcmp(name, "column") == 0 && len == 6, "set name: '%s'", name);
    OK(MPI_Type_dup(v, &d));
    OK(MPI_Type_get_name(d, name, &len));
    printf("name of a dup: '%s' %d\n", name, len);
    OK(MPI_Type_set_name(d, "another"));
    OK(MPI_Type_get_name(v, name, &len));
    printf("name after the dup's is set: '%s' %d\n", name, len);
    OK(MPI_Type_free(&d));
    OK(MPI_Type_free(&v));
    printf("names ok\n");
}

/* constructors builds a type of each constructor and prints its envelope, contents
 * and layout. */
static void constructors(void)
{
    MPI_Datatype c, v, hv, ix, hx, ib, hib, st, sa, rs, dp, dpc, ohv, ohx, ost, cc, vc;
    int bl[3] = {2, 1, 3}, dis[3] = {5, 0, 9};
    MPI_Aint adis[3] = {20, 0, 36};
    OK(MPI_Type_contiguous(3, MPI_INT, &c)); reg(c, "contig");
    OK(MPI_Type_vector(3, 2, 4, MPI_INT, &v)); reg(v, "vector");
    OK(MPI_Type_create_hvector(2, 1, 12, v, &hv)); reg(hv, "hvector");
    OK(MPI_Type_indexed(3, bl, dis, MPI_INT, &ix)); reg(ix, "indexed");
    OK(MPI_Type_create_hindexed(3, bl, adis, MPI_INT, &hx)); reg(hx, "hindexed");
    OK(MPI_Type_create_indexed_block(3, 2, dis, MPI_INT, &ib)); reg(ib, "indexed_block");
    OK(MPI_Type_create_hindexed_block(3, 1, adis, c, &hib)); reg(hib, "hindexed_block");
    MPI_Datatype fts[3] = {MPI_INT, c, MPI_INT};
    OK(MPI_Type_create_struct(3, bl, adis, fts, &st)); reg(st, "struct");
    int sizes[2] = {4, 6}, subs[2] = {2, 3}, starts[2] = {1, 2};
    OK(MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &sa)); reg(sa, "subarray");
    OK(MPI_Type_create_resized(ix, -8, 64, &rs)); reg(rs, "resized");
    OK(MPI_Type_dup(st, &dp)); reg(dp, "dup");
    OK(MPI_Type_commit(&ix));
    OK(MPI_Type_dup(ix, &dpc)); reg(dpc, "dup_committed");
    OK(MPI_Type_hvector(2, 2, 20, MPI_INT, &ohv)); reg(ohv, "old_hvector");
    OK(MPI_Type_hindexed(3, bl, adis, MPI_INT, &ohx)); reg(ohx, "old_hindexed");
    OK(MPI_Type_struct(3, bl, adis, fts, &ost)); reg(ost, "old_struct");
    OK(MPI_Type_contiguous_c(4, MPI_INT, &cc)); reg(cc, "contig_c");
    OK(MPI_Type_vector_c(2, 2, 3, MPI_INT, &vc)); reg(vc, "vector_c");
    MPI_Datatype all[] = {c, v, hv, ix, hx, ib, hib, st, sa, rs, dp, dpc, ohv, ohx, ost};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        envelope(label(all[i]), all[i]);
        OK(MPI_Type_commit(&all[i]));
        layout(label(all[i]), all[i], 64);
    }
    envelope("committed indexed", ix);
    /* A large-count constructor's counts are MPI_Counts: MPI_Type_get_envelope cannot
     * give them, MPI_Type_get_envelope_c can. */
    int ni, na, nd, comb;
    int rc = MPI_Type_get_envelope(cc, &ni, &na, &nd, &comb);
    printf("envelope of contiguous_c: class %d\n", cls(rc));
    MPI_Count lni, lna, lnc, lnd;
    MPI_Datatype lts[2];
    for (int k = 0; k < 2; k++) {
        MPI_Datatype t = k ? vc : cc;
        OK(MPI_Type_get_envelope_c(t, &lni, &lna, &lnc, &lnd, &comb));
        printf("envelope_c %s: combiner %d ints %ld addrs %ld counts %ld types %ld\n", label(t), comb, (long)lni, (long)lna, (long)lnc, (long)lnd);
        OK(MPI_Type_commit(&t));
        layout(label(t), t, 16);
    }
    OK(MPI_Type_get_envelope_c(v, &lni, &lna, &lnc, &lnd, &comb));
    printf("envelope_c vector: combiner %d ints %ld addrs %ld counts %ld types %ld\n", comb, (long)lni, (long)lna, (long)lnc, (long)lnd);
    /* MPI_Type_get_contents_c of the other large-count constructors. */
    MPI_Datatype hvc, rsc;
    OK(MPI_Type_create_hvector_c(2, 3, 40, MPI_SHORT, &hvc));
    reg(hvc, "hvector_c");
    OK(MPI_Type_create_resized_c(hvc, -2, 96, &rsc));
    reg(rsc, "resized_c");
    for (int k = 0; k < 2; k++) {
        MPI_Datatype t = k ? rsc : hvc;
        int cis[4];
        MPI_Aint cas[4];
        MPI_Count ccs[4];
        OK(MPI_Type_get_envelope_c(t, &lni, &lna, &lnc, &lnd, &comb));
        OK(MPI_Type_get_contents_c(t, 4, 4, 4, 2, cis, cas, ccs, lts));
        printf("contents_c %s: combiner %d counts", label(t), comb);
        for (int i = 0; i < lnc; i++)
            printf(" %ld", (long)ccs[i]);
        printf(" types %s %ld %ld\n", label(lts[0]), (long)lni, (long)lna);
        if (lts[0] != MPI_SHORT)
            OK(MPI_Type_free(&lts[0]));
    }
    OK(MPI_Type_commit(&rsc));
    OK(MPI_Type_size_x(rsc, &lnc));
    OK(MPI_Type_get_extent_c(rsc, &lni, &lna));
    printf("resized_c: size %ld lb %ld extent %ld\n", (long)lnc, (long)lni, (long)lna);
    OK(MPI_Type_free(&rsc));
    OK(MPI_Type_free(&hvc));
    /* Contents of a predefined type, and arrays too short. */
    int is[8];
    MPI_Aint as[8];
    MPI_Datatype ds[8];
    rc = MPI_Type_get_contents(MPI_INT, 8, 8, 8, is, as, ds);
    printf("contents of MPI_INT: class %d\n", cls(rc));
    rc = MPI_Type_get_contents(ix, 2, 8, 8, is, as, ds);
    printf("contents into too few ints: class %d\n", cls(rc));
    /* The deprecated queries. */
    MPI_Aint e, lb, ub, a1, a2;
    OK(MPI_Type_extent(rs, &e));
    OK(MPI_Type_lb(rs, &lb));
    OK(MPI_Type_ub(rs, &ub));
    printf("resized: extent %ld lb %ld ub %ld\n", (long)e, (long)lb, (long)ub);
    int arr[4];
    OK(MPI_Address(&arr[0], &a1));
    OK(MPI_Address(&arr[3], &a2));
    CHECK(a2 - a1 == 12 && a1 == (MPI_Aint)(void *)arr, "MPI_Address: %ld %ld", (long)a1, (long)a2);
    /* The _x and _c queries. */
    MPI_Count sx, lbx, ex, tlbx, tex;
    OK(MPI_Type_size_x(rs, &sx));
    OK(MPI_Type_get_extent_x(rs, &lbx, &ex));
    OK(MPI_Type_get_true_extent_x(rs, &tlbx, &tex));
    printf("resized _x: size %ld lb %ld extent %ld true %ld %ld\n", (long)sx, (long)lbx, (long)ex, (long)tlbx, (long)tex);
    OK(MPI_Type_size_c(hv, &sx));
    OK(MPI_Type_get_extent_c(hv, &lbx, &ex));
    OK(MPI_Type_get_true_extent_c(hv, &tlbx, &tex));
    printf("hvector _c: size %ld lb %ld extent %ld true %ld %ld\n", (long)sx, (long)lbx, (long)ex, (long)tlbx, (long)tex);
    /* A type bigger than an int can say. */
    MPI_Datatype big;
    int isz;
    OK(MPI_Type_contiguous_c((MPI_Count)3 << 30, MPI_INT, &big));
    OK(MPI_Type_commit(&big));
    OK(MPI_Type_size(big, &isz));
    OK(MPI_Type_size_x(big, &sx));
    printf("big: size %d size_x %ld\n", isz, (long)sx);
    MPI_Status s;
    int n;
    MPI_Count nc;
    OK(MPI_Status_set_elements_x(&s, big, 2));
    OK(MPI_Get_count(&s, MPI_INT, &n));
    OK(MPI_Get_count_c(&s, MPI_INT, &nc));
    printf("big status: count %d count_c %ld\n", n, (long)nc);
    OK(MPI_Get_elements(&s, MPI_INT, &n));
    OK(MPI_Get_elements_c(&s, MPI_INT, &nc));
    printf("big status: elements %d elements_c %ld\n", n, (long)nc);
    OK(MPI_Pack_size_c(2, big, MPI_COMM_WORLD, &nc));
    printf("pack size_c of big: %ld\n", (long)nc);
    OK(MPI_Type_free(&big));
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        OK(MPI_Type_free(&all[i]));
    OK(MPI_Type_free(&cc));
    OK(MPI_Type_free(&vc));
    printf("constructors ok\n");
}

/* elements prints MPI_Get_count and MPI_Get_elements of statuses of some byte counts
 * for a mixed struct, a nested struct, a vector of shorts, MPI_2INT and MPI_INT. The
 * structs' counts stop at whole basic elements: past a partial one MPICH 4.0.2 counts
 * the bytes left as more elements (strict() checks gorma's answers there). */
static void elements(void)
{
    MPI_Datatype st, ve, in;
    int bl[2] = {1, 2};
    MPI_Aint dis[2] = {0, 8};
    MPI_Datatype ts[2] = {MPI_INT, MPI_DOUBLE};
    OK(MPI_Type_create_struct(2, bl, dis, ts, &st));
    OK(MPI_Type_vector(2, 2, 3, MPI_SHORT, &ve));
    MPI_Datatype its[2] = {st, MPI_CHAR};
    int ibl[2] = {2, 3};
    MPI_Aint idis[2] = {0, 48};
    OK(MPI_Type_create_struct(2, ibl, idis, its, &in));
    MPI_Datatype all[] = {st, ve, in, MPI_2INT, MPI_INT};
    const char *nm[] = {"struct", "vector", "nested", "2int", "int"};
    int sb[] = {0, 2, 4, 12, 14, 20, 22, 24, 32, 40, 44, 52, 60, -1};
    int nb[] = {0, 3, 4, 12, 20, 24, 32, 40, 41, 42, 43, 86, -1};
    int ab[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 18, 20, 24, 30, 32, -1};
    for (int k = 0; k < 5; k++) {
        OK(MPI_Type_commit(&all[k]));
        printf("elements %s:", nm[k]);
        int *bs = k == 0 ? sb : k == 2 ? nb : ab;
        for (int i = 0; bs[i] >= 0; i++) {
            MPI_Status s;
            int b = bs[i], n, e, ex;
            MPI_Count x;
            OK(MPI_Status_set_elements(&s, MPI_BYTE, b));
            OK(MPI_Get_count(&s, all[k], &n));
            OK(MPI_Get_elements(&s, all[k], &e));
            OK(MPI_Get_elements_x(&s, all[k], &x));
            ex = (int)x;
            CHECK(ex == e, "Get_elements_x %d, Get_elements %d", ex, e);
            printf(" %d:%d/%d", b, n, e);
        }
        printf("\n");
    }
    MPI_Status s;
    int n, flag;
    OK(MPI_Status_set_elements(&s, st, 3));
    OK(MPI_Get_count(&s, st, &n));
    CHECK(n == 3, "count %d after set_elements(st, 3)", n);
    OK(MPI_Get_elements(&s, MPI_INT, &n));
    printf("set_elements(struct, 3): %d ints\n", n);
    OK(MPI_Status_set_elements_x(&s, MPI_DOUBLE, 5));
    OK(MPI_Get_elements(&s, MPI_FLOAT, &n));
    CHECK(n == 10, "elements of 5 doubles in floats: %d", n);
    OK(MPI_Status_set_cancelled(&s, 1));
    OK(MPI_Test_cancelled(&s, &flag));
    CHECK(flag == 1, "cancelled %d", flag);
    OK(MPI_Get_count(&s, MPI_DOUBLE, &n));
    CHECK(n == 5, "count after set_cancelled: %d", n);
    OK(MPI_Status_set_cancelled(&s, 0));
    OK(MPI_Test_cancelled(&s, &flag));
    CHECK(flag == 0, "cancelled %d", flag);
    int rc = MPI_Status_set_elements(&s, MPI_INT, -1);
    printf("set_elements -1: class %d\n", cls(rc));
    for (int k = 0; k < 3; k++)
        OK(MPI_Type_free(&all[k]));
    printf("elements ok\n");
}

/* darrays prints the layouts of distributed arrays for each rank of 2 and 4. */
static void darrays(void)
{
    struct {
        const char *name;
        int ndims, gs[3], dist[3], darg[3], ps[3], order, size;
    } cs[] = {
        {"block1d", 1, {10}, {MPI_DISTRIBUTE_BLOCK}, {MPI_DISTRIBUTE_DFLT_DARG}, {4}, MPI_ORDER_C, 4},
        {"cyclic1d", 1, {10}, {MPI_DISTRIBUTE_CYCLIC}, {2}, {4}, MPI_ORDER_C, 4},
        {"block2dC", 2, {4, 6}, {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_BLOCK}, {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG}, {2, 2}, MPI_ORDER_C, 4},
        {"block2dF", 2, {4, 6}, {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_BLOCK}, {MPI_DISTRIBUTE_DFLT_DARG, 4}, {2, 2}, MPI_ORDER_FORTRAN, 4},
        {"cyclic2dC", 2, {5, 7}, {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_CYCLIC}, {MPI_DISTRIBUTE_DFLT_DARG, 2}, {2, 2}, MPI_ORDER_C, 4},
        {"mixed3dF", 3, {3, 4, 5}, {MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK}, {MPI_DISTRIBUTE_DFLT_DARG, 3, MPI_DISTRIBUTE_DFLT_DARG}, {1, 2, 1}, MPI_ORDER_FORTRAN, 2},
        {"mixed3dC", 3, {3, 4, 5}, {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_BLOCK}, {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG, 3}, {1, 1, 2}, MPI_ORDER_C, 2},
    };
    char what[64];
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        for (int r = 0; r < cs[i].size; r++) {
            MPI_Datatype t;
            OK(MPI_Type_create_darray(cs[i].size, r, cs[i].ndims, cs[i].gs, cs[i].dist, cs[i].darg, cs[i].ps, cs[i].order, MPI_INT, &t));
            snprintf(what, sizeof what, "%s/%d", cs[i].name, r);
            reg(t, what);
            if (r == 1)
                envelope(what, t);
            OK(MPI_Type_commit(&t));
            layout(what, t, 64);
            OK(MPI_Type_free(&t));
        }
    }
    MPI_Datatype t;
    int gs[1] = {10}, dist[1] = {MPI_DISTRIBUTE_BLOCK}, darg[1] = {2}, ps[1] = {4};
    int rc = MPI_Type_create_darray(4, 0, 1, gs, dist, darg, ps, MPI_ORDER_C, MPI_INT, &t);
    printf("darray with too small blocks: class %d\n", cls(rc));
    rc = MPI_Type_create_darray(4, 4, 1, gs, dist, darg, ps, MPI_ORDER_C, MPI_INT, &t);
    printf("darray with rank 4 of 4: class %d\n", cls(rc));
    printf("darrays ok\n");
}

static void f90(void)
{
    MPI_Datatype t, t2;
    int rs[] = {1, 2, 3, 4, 5, 9, 10, 18, 19, 40};
    for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++) {
        int rc = MPI_Type_create_f90_integer(rs[i], &t);
        if (rc != MPI_SUCCESS) {
            printf("f90 integer %d: class %d\n", rs[i], cls(rc));
            continue;
        }
        int size;
        OK(MPI_Type_size(t, &size));
        OK(MPI_Type_create_f90_integer(rs[i], &t2));
        CHECK(t == t2, "f90 integer %d: two handles", rs[i]);
        reg(t, "f90");
        printf("f90 integer %d: size %d\n", rs[i], size);
        envelope("f90 integer", t);
    }
    int ps[] = {MPI_UNDEFINED, 3, 6, 7, 15, 16};
    int rr[] = {MPI_UNDEFINED, 30, 37, 38, 307, 308};
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) {
            if (ps[i] == MPI_UNDEFINED && rr[j] == MPI_UNDEFINED)
                continue;
            for (int cplx = 0; cplx < 2; cplx++) {
                int rc = cplx ? MPI_Type_create_f90_complex(ps[i], rr[j], &t) : MPI_Type_create_f90_real(ps[i], rr[j], &t);
                if (rc != MPI_SUCCESS) {
                    printf("f90 %s %d %d: class %d\n", cplx ? "complex" : "real", ps[i], rr[j], cls(rc));
                    continue;
                }
                int size;
                OK(MPI_Type_size(t, &size));
                printf("f90 %s %d %d: size %d\n", cplx ? "complex" : "real", ps[i], rr[j], size);
                if (i == 2 && j == 1)
                    envelope(cplx ? "f90 complex" : "f90 real", t);
            }
        }
    /* An f90 type carries data as its predefined twin does. */
    OK(MPI_Type_create_f90_real(12, MPI_UNDEFINED, &t));
    double d[2] = {1.5, -2.25}, back[2];
    char buf[64];
    int pos = 0;
    OK(MPI_Pack(d, 2, t, buf, sizeof buf, &pos, MPI_COMM_WORLD));
    CHECK(pos == 16, "f90 real packs %d bytes", pos);
    pos = 0;
    OK(MPI_Unpack(buf, sizeof buf, &pos, back, 2, t, MPI_COMM_WORLD));
    CHECK(back[0] == 1.5 && back[1] == -2.25, "f90 real unpacked %g %g", back[0], back[1]);
    printf("f90 ok\n");
}

static void hex(const char *what, const unsigned char *b, MPI_Aint n)
{
    printf("external32 %s:", what);
    for (MPI_Aint i = 0; i < n; i++)
        printf("%s%02x", i % 4 ? "" : " ", b[i]);
    printf("\n");
}

static void external(void)
{
    unsigned char buf[256];
    MPI_Aint pos, size;
    int is[3] = {1, -2, 0x01020304};
    short ss[2] = {258, -1};
    long ls[2] = {5, -6};
    double ds[2] = {1.0, -0.5};
    float fs[1] = {3.0f};
    struct {
        MPI_Datatype t;
        void *p;
        int n;
        const char *name;
    } cs[] = {
        {MPI_INT, is, 3, "int"}, {MPI_SHORT, ss, 2, "short"}, {MPI_LONG, ls, 2, "long"},
        {MPI_DOUBLE, ds, 2, "double"}, {MPI_FLOAT, fs, 1, "float"}, {MPI_CHAR, "abc", 3, "char"},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        OK(MPI_Pack_external_size("external32", cs[i].n, cs[i].t, &size));
        pos = 0;
        OK(MPI_Pack_external("external32", cs[i].p, cs[i].n, cs[i].t, buf, sizeof buf, &pos));
        CHECK(pos == size, "%s: packed %ld, size %ld", cs[i].name, (long)pos, (long)size);
        hex(cs[i].name, buf, pos);
        unsigned char back[64];
        MPI_Aint in = 0;
        OK(MPI_Unpack_external("external32", buf, pos, &in, back, cs[i].n, cs[i].t));
        CHECK(in == pos, "%s: unpacked %ld of %ld", cs[i].name, (long)in, (long)pos);
        int sz;
        MPI_Type_size(cs[i].t, &sz);
        CHECK(memcmp(back, cs[i].p, sz * cs[i].n) == 0, "%s: unpacked other values", cs[i].name);
    }
    /* A vector: only the data travels. */
    MPI_Datatype ve;
    MPI_Aint in;
    int vals[6] = {10, 11, 12, 13, 14, 15}, vback[6] = {0};
    OK(MPI_Type_vector(3, 1, 2, MPI_INT, &ve));
    OK(MPI_Type_commit(&ve));
    pos = 4;
    buf[0] = buf[1] = buf[2] = buf[3] = 0xee;
    OK(MPI_Pack_external("external32", vals, 1, ve, buf, sizeof buf, &pos));
    hex("vector at 4", buf, pos);
    in = 4;
    OK(MPI_Unpack_external("external32", buf, pos, &in, vback, 1, ve));
    CHECK(vback[0] == 10 && vback[1] == 0 && vback[2] == 12 && vback[4] == 14, "vector unpacked %d %d %d", vback[0], vback[2], vback[4]);
    /* The large-count forms. */
    MPI_Count cpos = 0, csize, cin = 0;
    OK(MPI_Pack_external_size_c("external32", 3, MPI_INT, &csize));
    OK(MPI_Pack_external_c("external32", is, 3, MPI_INT, buf, sizeof buf, &cpos));
    CHECK(cpos == 12 && csize == 12, "pack_external_c: %ld %ld", (long)cpos, (long)csize);
    int iback[3];
    OK(MPI_Unpack_external_c("external32", buf, cpos, &cin, iback, 3, MPI_INT));
    CHECK(cin == 12 && iback[2] == 0x01020304, "unpack_external_c: %ld %x", (long)cin, iback[2]);
    OK(MPI_Type_free(&ve));
    printf("external32 ok\n");
}

/* packc checks MPI_Pack_c, MPI_Unpack_c and MPI_Pack_size_c. */
static void packc(void)
{
    int v[6] = {1, 2, 3, 4, 5, 6}, back[6] = {0};
    MPI_Datatype t;
    OK(MPI_Type_vector_c(3, 1, 2, MPI_INT, &t));
    OK(MPI_Type_commit(&t));
    MPI_Count size, pos = 0, in = 0;
    char buf[64];
    OK(MPI_Pack_size_c(2, t, MPI_COMM_WORLD, &size));
    OK(MPI_Pack_c(v, 1, t, buf, sizeof buf, &pos, MPI_COMM_WORLD));
    OK(MPI_Unpack_c(buf, pos, &in, back, 1, t, MPI_COMM_WORLD));
    CHECK(size >= 24 && pos == 12 && in == 12 && back[0] == 1 && back[2] == 3 && back[4] == 5 && back[1] == 0,
          "pack_c: size %ld pos %ld in %ld", (long)size, (long)pos, (long)in);
    OK(MPI_Type_free(&t));
    printf("pack_c ok\n");
}

/* exchange sends data of derived types from rank 0 to rank 1, which checks it and
 * counts what it got. */
static void exchange(void)
{
    int gs[2] = {4, 6}, dist[2] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK};
    int darg[2] = {1, MPI_DISTRIBUTE_DFLT_DARG}, ps[2] = {2, 1};
    MPI_Datatype da, hib, dp, f90, st;
    OK(MPI_Type_create_darray(2, rank, 2, gs, dist, darg, ps, MPI_ORDER_C, MPI_INT, &da));
    MPI_Aint dis[2] = {8, 0};
    OK(MPI_Type_create_hindexed_block(2, 1, dis, MPI_INT, &hib));
    OK(MPI_Type_dup(da, &dp));
    OK(MPI_Type_create_f90_integer(9, &f90));
    int bl[2] = {1, 2};
    MPI_Aint sdis[2] = {0, 8};
    MPI_Datatype sts[2] = {MPI_INT, MPI_DOUBLE};
    OK(MPI_Type_create_struct(2, bl, sdis, sts, &st));
    OK(MPI_Type_commit(&da));
    OK(MPI_Type_commit(&hib));
    OK(MPI_Type_commit(&dp));
    OK(MPI_Type_commit(&st));
    int a[24], b[24];
    for (int i = 0; i < 24; i++)
        a[i] = 100 + i, b[i] = -1;
    MPI_Status s;
    int n, e;
    if (rank == 0) {
        /* rank 0's darray part (even rows) goes into rank 1's (odd rows). */
        OK(MPI_Send(a, 1, da, 1, 1, MPI_COMM_WORLD));
        OK(MPI_Send(a, 2, hib, 1, 2, MPI_COMM_WORLD));
        OK(MPI_Send(a, 3, f90, 1, 3, MPI_COMM_WORLD));
        struct { int i; double d[2]; } r = {5, {1.5, 2.5}};
        OK(MPI_Send(&r, 1, st, 1, 4, MPI_COMM_WORLD));
        OK(MPI_Send(&r, 12, MPI_BYTE, 1, 5, MPI_COMM_WORLD));
        OK(MPI_Send(a, 5, MPI_INT, 1, 6, MPI_COMM_WORLD));
    } else {
        OK(MPI_Recv(b, 1, dp, 0, 1, MPI_COMM_WORLD, &s));
        OK(MPI_Get_elements(&s, dp, &e));
        printf("darray received:");
        for (int i = 0; i < 24; i++)
            printf(" %d", b[i]);
        printf(" elements %d\n", e);
        for (int i = 0; i < 24; i++)
            b[i] = -1;
        OK(MPI_Recv(b, 2, hib, 0, 2, MPI_COMM_WORLD, &s));
        OK(MPI_Get_count(&s, hib, &n));
        OK(MPI_Get_elements(&s, hib, &e));
        printf("hindexed_block received: %d %d %d %d count %d elements %d\n", b[0], b[1], b[2], b[3], n, e);
        OK(MPI_Recv(b, 3, f90, 0, 3, MPI_COMM_WORLD, &s));
        OK(MPI_Get_count(&s, f90, &n));
        printf("f90 integer received: %d %d %d count %d\n", b[0], b[1], b[2], n);
        struct { int i; double d[2]; } r = {0, {0, 0}};
        OK(MPI_Recv(&r, 1, st, 0, 4, MPI_COMM_WORLD, &s));
        OK(MPI_Get_elements(&s, st, &e));
        printf("struct received: %d %g %g elements %d\n", r.i, r.d[0], r.d[1], e);
        OK(MPI_Recv(&r, 1, st, 0, 5, MPI_COMM_WORLD, &s));
        OK(MPI_Get_count(&s, st, &n));
        OK(MPI_Get_elements(&s, st, &e));
        printf("12 bytes into struct: count %d elements %d\n", n, e);
        OK(MPI_Recv(b, 2, st, 0, 6, MPI_COMM_WORLD, &s));
        OK(MPI_Get_count(&s, st, &n));
        OK(MPI_Get_elements(&s, st, &e));
        printf("5 ints into 2 structs: count %d elements %d\n", n, e);
    }
    OK(MPI_Type_free(&da));
    OK(MPI_Type_free(&hib));
    OK(MPI_Type_free(&dp));
    OK(MPI_Type_free(&st));
    printf("rank %d: exchange ok\n", rank);
}

/* strict prints the answers where MPICH 4.0.2 is wrong, for TestDtype to check against
 * fixed ones on gorma's library: MPI_Get_elements past a partial basic element of a
 * struct (MPICH counts the bytes left as more elements), MPI_Pack_size of more bytes
 * than an int holds, a darray with processes over an undistributed dimension, and
 * MPI_Pack_external of another representation or into too small a buffer (MPICH
 * accepts all of these), and external32 of a struct (on which MPICH crashes). */
static void strict(void)
{
    MPI_Datatype st, in;
    int bl[2] = {1, 2};
    MPI_Aint dis[2] = {0, 8};
    MPI_Datatype ts[2] = {MPI_INT, MPI_DOUBLE};
    OK(MPI_Type_create_struct(2, bl, dis, ts, &st));
    MPI_Datatype its[2] = {st, MPI_CHAR};
    int ibl[2] = {2, 3};
    MPI_Aint idis[2] = {0, 48};
    OK(MPI_Type_create_struct(2, ibl, idis, its, &in));
    OK(MPI_Type_commit(&st));
    OK(MPI_Type_commit(&in));
    int sb[] = {16, 18, 36, -1}, nb[] = {11, 13, 16, 28, 56, -1};
    for (int k = 0; k < 2; k++) {
        int *bs = k ? nb : sb;
        printf("strict elements %s:", k ? "nested" : "struct");
        for (int i = 0; bs[i] >= 0; i++) {
            MPI_Status s;
            int e;
            OK(MPI_Status_set_elements(&s, MPI_BYTE, bs[i]));
            OK(MPI_Get_elements(&s, k ? in : st, &e));
            printf(" %d:%d", bs[i], e);
        }
        printf("\n");
    }
    OK(MPI_Type_free(&in));
    OK(MPI_Type_free(&st));
    MPI_Datatype big, t;
    int n;
    OK(MPI_Type_contiguous_c((MPI_Count)3 << 30, MPI_INT, &big));
    OK(MPI_Type_commit(&big));
    printf("strict pack size of big: class %d\n", cls(MPI_Pack_size(1, big, MPI_COMM_WORLD, &n)));
    OK(MPI_Type_free(&big));
    int gs[1] = {10}, dist[1] = {MPI_DISTRIBUTE_NONE}, darg[1] = {2}, ps[1] = {4};
    printf("strict darray none over 4: class %d\n", cls(MPI_Type_create_darray(4, 0, 1, gs, dist, darg, ps, MPI_ORDER_C, MPI_INT, &t)));
    int is[3] = {1, 2, 3};
    unsigned char buf[64];
    MPI_Aint pos = 0, size;
    printf("strict pack_external native: class %d\n", cls(MPI_Pack_external("native", is, 3, MPI_INT, buf, sizeof buf, &pos)));
    pos = 0;
    printf("strict pack_external into 8 bytes: class %d\n", cls(MPI_Pack_external("external32", is, 3, MPI_INT, buf, 8, &pos)));
    struct { int a; double b; short c; } rec = {7, 2.5, -3}, back = {0, 0, 0};
    int sbl[3] = {1, 1, 1};
    MPI_Aint sdis[3] = {0, 8, 16};
    MPI_Datatype sts[3] = {MPI_INT, MPI_DOUBLE, MPI_SHORT};
    OK(MPI_Type_create_struct(3, sbl, sdis, sts, &st));
    OK(MPI_Type_commit(&st));
    OK(MPI_Pack_external_size("external32", 1, st, &size));
    pos = 0;
    OK(MPI_Pack_external("external32", &rec, 1, st, buf, sizeof buf, &pos));
    CHECK(pos == size, "struct: packed %ld, size %ld", (long)pos, (long)size);
    printf("strict ");
    hex("struct", buf, pos);
    MPI_Aint at = 0;
    OK(MPI_Unpack_external("external32", buf, pos, &at, &back, 1, st));
    CHECK(at == pos && back.a == 7 && back.b == 2.5 && back.c == -3, "struct unpacked %d %g %d", back.a, back.b, back.c);
    OK(MPI_Type_free(&st));
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* one write per line: the ranks' lines do not mix */
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    if (argc > 1 && strcmp(argv[1], "strict") == 0) {
        if (rank == 0)
            strict();
        MPI_Finalize();
        return 0;
    }
    if (rank == 0) {
        names();
        constructors();
        elements();
        darrays();
        f90();
        external();
        packc();
    }
    exchange();
    MPI_Finalize();
    return 0;
}
