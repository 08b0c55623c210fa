/* topocheck: groups, communicators and process topologies, with the neighbourhood
 * collectives, through MPICH's ABI. Each rank checks its own results and prints
 * deterministic lines; run at 2 or 4 ranks. A wrong value aborts with a message. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

#define CHECK(cond, ...)                                     \
    do {                                                     \
        if (!(cond)) {                                       \
            fprintf(stderr, "rank %d: check failed: ", rank); \
            fprintf(stderr, __VA_ARGS__);                    \
            fprintf(stderr, "\n");                           \
            MPI_Abort(MPI_COMM_WORLD, 1);                    \
        }                                                    \
    } while (0)

#define OK(call) CHECK((call) == MPI_SUCCESS, "%s failed", #call)

static const char *cmpName(int r) {
    switch (r) {
    case MPI_IDENT: return "ident";
    case MPI_CONGRUENT: return "congruent";
    case MPI_SIMILAR: return "similar";
    case MPI_UNEQUAL: return "unequal";
    }
    return "?";
}

/* errClass returns the class of rc, which must be an error. */
static int errClass(int rc) {
    int class;
    CHECK(rc != MPI_SUCCESS, "a call that should fail succeeded");
    MPI_Error_class(rc, &class);
    return class;
}

static void groups(void) {
    MPI_Group wg, excl, evens, evens2, odds, odds2, uni, inter, diff, empty;
    int n;
    OK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    int first = 0;
    OK(MPI_Group_excl(wg, 1, &first, &excl));
    MPI_Group_size(excl, &n);
    CHECK(n == size - 1, "excl size %d", n);
    int rev[1][3] = {{size - 1, 0, -2}};
    int ev[1][3] = {{0, size - 1, 2}}, od[1][3] = {{1, size - 1, 2}};
    OK(MPI_Group_range_incl(wg, 1, ev, &evens));
    OK(MPI_Group_range_excl(wg, 1, od, &evens2));
    OK(MPI_Group_range_incl(wg, 1, od, &odds));
    OK(MPI_Group_difference(wg, evens, &odds2));
    OK(MPI_Group_union(evens, odds, &uni));
    OK(MPI_Group_intersection(evens, wg, &inter));
    OK(MPI_Group_difference(evens, evens2, &diff));
    MPI_Group rg;
    OK(MPI_Group_range_incl(wg, 1, rev, &rg));
    MPI_Group_size(rg, &n);
    CHECK(n == (size + 1) / 2, "reverse range size %d", n);
    int r0 = 0, t;
    OK(MPI_Group_translate_ranks(rg, 1, &r0, wg, &t));
    CHECK(t == size - 1, "reverse range's rank 0 is %d in the world", t);
    if (rank == 0) {
        char line[512];
        int e, o, c[5];
        MPI_Group_size(evens, &e);
        MPI_Group_size(odds, &o);
        MPI_Group_compare(evens, evens2, &c[0]);
        MPI_Group_compare(odds, odds2, &c[1]);
        MPI_Group_compare(uni, wg, &c[2]);
        MPI_Group_compare(inter, evens, &c[3]);
        MPI_Group_compare(excl, wg, &c[4]);
        snprintf(line, sizeof line,
                 "groups: evens %d, odds %d, range_incl vs range_excl %s, odds vs difference %s, "
                 "union vs world %s, intersection vs evens %s, excl vs world %s, "
                 "empty difference is MPI_GROUP_EMPTY %d",
                 e, o, cmpName(c[0]), cmpName(c[1]), cmpName(c[2]), cmpName(c[3]), cmpName(c[4]),
                 diff == MPI_GROUP_EMPTY);
        printf("%s\n", line);
    }
    int bad[1][3] = {{0, size, 1}};
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int c1 = errClass(MPI_Group_range_incl(wg, 1, bad, &empty));
    int c2 = errClass(MPI_Group_excl(wg, 1, &size, &empty));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    if (rank == 0)
        printf("groups: range past the end class %d, excl past the end class %d\n", c1, c2);
    MPI_Group all[] = {excl, evens, evens2, odds, odds2, uni, inter, diff, rg, wg};
    for (int i = 0; i < (int)(sizeof all / sizeof all[0]); i++)
        OK(MPI_Group_free(&all[i]));
    printf("rank %d: groups ok\n", rank);
}

static void comms(void) {
    MPI_Comm dup, rev, half, inter, cg, dinfo, idup, idinfo, shared, none;
    int cmp, flag, len, n;
    char name[MPI_MAX_OBJECT_NAME];
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    OK(MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev));
    OK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half));
    if (rank == 0) {
        int c[4];
        MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, &c[0]);
        MPI_Comm_compare(MPI_COMM_WORLD, dup, &c[1]);
        MPI_Comm_compare(MPI_COMM_WORLD, rev, &c[2]);
        MPI_Comm_compare(MPI_COMM_WORLD, half, &c[3]);
        printf("comms: world vs world %s, dup %s, reversed %s, half %s\n",
               cmpName(c[0]), cmpName(c[1]), cmpName(c[2]), cmpName(c[3]));
    }
    /* Names. */
    MPI_Comm_get_name(MPI_COMM_WORLD, name, &len);
    CHECK(strcmp(name, "MPI_COMM_WORLD") == 0 && len == 14, "world's name %s (%d)", name, len);
    MPI_Comm_get_name(MPI_COMM_SELF, name, &len);
    CHECK(strcmp(name, "MPI_COMM_SELF") == 0, "self's name %s", name);
    MPI_Comm_get_name(dup, name, &len);
    CHECK(len == 0 && name[0] == 0, "a dup's name %s (%d)", name, len);
    OK(MPI_Comm_set_name(dup, "my dup"));
    MPI_Comm_get_name(dup, name, &len);
    CHECK(strcmp(name, "my dup") == 0 && len == 6, "the dup's name %s", name);
    OK(MPI_Comm_set_name(MPI_COMM_WORLD, "everyone"));
    MPI_Comm_get_name(MPI_COMM_WORLD, name, &len);
    CHECK(strcmp(name, "everyone") == 0, "world's new name %s", name);
    OK(MPI_Comm_set_name(MPI_COMM_WORLD, "MPI_COMM_WORLD"));
    /* Intercommunicators. */
    MPI_Comm_test_inter(MPI_COMM_WORLD, &flag);
    CHECK(!flag, "the world is an intercommunicator");
    OK(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - rank % 2, 5, &inter));
    MPI_Comm_test_inter(inter, &flag);
    CHECK(flag, "the intercommunicator is not one");
    MPI_Comm_remote_size(inter, &n);
    CHECK(n == (rank % 2 ? (size + 1) / 2 : size / 2), "remote size %d", n);
    MPI_Group rg;
    OK(MPI_Comm_remote_group(inter, &rg));
    MPI_Group_size(rg, &len);
    CHECK(len == n, "remote group size %d", len);
    MPI_Group_free(&rg);
    MPI_Comm_compare(inter, inter, &cmp);
    CHECK(cmp == MPI_IDENT, "inter vs itself %s", cmpName(cmp));
    MPI_Comm_compare(inter, MPI_COMM_WORLD, &cmp);
    CHECK(cmp == MPI_UNEQUAL, "inter vs world %s", cmpName(cmp));
    /* Create_group: the even ranks only. */
    MPI_Group wg, evens;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int ev[1][3] = {{0, size - 1, 2}};
    MPI_Group_range_incl(wg, 1, ev, &evens);
    if (rank % 2 == 0) {
        OK(MPI_Comm_create_group(MPI_COMM_WORLD, evens, 9, &cg));
        MPI_Comm_size(cg, &n);
        MPI_Comm_rank(cg, &len);
        CHECK(n == (size + 1) / 2 && len == rank / 2, "create_group size %d rank %d", n, len);
        int sum, one = 1;
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, cg);
        CHECK(sum == n, "sum over create_group's communicator %d", sum);
        MPI_Comm_free(&cg);
    }
    MPI_Group_free(&evens);
    MPI_Group_free(&wg);
    /* Info and the dups. */
    MPI_Info info, got;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
    OK(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &dinfo));
    MPI_Comm_compare(MPI_COMM_WORLD, dinfo, &cmp);
    CHECK(cmp == MPI_CONGRUENT, "dup_with_info %s", cmpName(cmp));
    OK(MPI_Comm_get_info(dinfo, &got));
    CHECK(got != MPI_INFO_NULL, "get_info gave MPI_INFO_NULL");
    OK(MPI_Info_free(&got));
    OK(MPI_Comm_set_info(dup, info));
    OK(MPI_Comm_get_info(dup, &got));
    OK(MPI_Info_free(&got));
    MPI_Request req;
    OK(MPI_Comm_idup(MPI_COMM_WORLD, &idup, &req));
    OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK(req == MPI_REQUEST_NULL, "idup's request after wait");
    OK(MPI_Comm_idup_with_info(dup, info, &idinfo, &req));
    do
        OK(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
    while (!flag);
    MPI_Comm_compare(idup, idinfo, &cmp);
    CHECK(cmp == MPI_CONGRUENT, "idup vs idup_with_info %s", cmpName(cmp));
    int sum, one = 1;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, idinfo);
    CHECK(sum == size, "sum over idup_with_info's communicator %d", sum);
    MPI_Info_free(&info);
    /* Split_type. */
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, size - rank, MPI_INFO_NULL, &shared));
    MPI_Comm_size(shared, &n);
    MPI_Comm_rank(shared, &len);
    CHECK(n == size && len == size - 1 - rank, "shared split: size %d, rank %d (one host)", n, len);
    OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_UNDEFINED, 0, MPI_INFO_NULL, &none));
    CHECK(none == MPI_COMM_NULL, "split_type MPI_UNDEFINED gave a communicator");
    if (rank == 0)
        printf("comms: shared split of %d ranks, undefined split null\n", n);
    MPI_Comm all[] = {dup, rev, half, inter, dinfo, idup, idinfo, shared};
    for (int i = 0; i < (int)(sizeof all / sizeof all[0]); i++)
        OK(MPI_Comm_free(&all[i]));
    printf("rank %d: comms ok\n", rank);
}

static void dims(void) {
    int cases[][5] = {
        /* nnodes, ndims, dims... */
        {6, 2, 0, 0, 0}, {7, 2, 0, 0, 0}, {12, 3, 0, 0, 0}, {16, 3, 0, 0, 0},
        {36, 3, 0, 0, 0}, {24, 3, 0, 0, 0}, {6, 3, 0, 3, 0}, {100, 3, 0, 0, 0},
        {30, 3, 0, 0, 0}, {64, 3, 0, 4, 0},
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        int *c = cases[i];
        OK(MPI_Dims_create(c[0], c[1], c + 2));
        if (rank == 0) {
            char line[128];
            int k = snprintf(line, sizeof line, "dims_create %d:", c[0]);
            for (int d = 0; d < c[1]; d++)
                k += snprintf(line + k, sizeof line - k, " %d", c[2 + d]);
            printf("%s\n", line);
        }
    }
    int bad[2] = {0, 4};
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int class = errClass(MPI_Dims_create(6, 2, bad));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    if (rank == 0)
        printf("dims_create 6 with 4 fixed: class %d\n", class);
}

static void cart(void) {
    int d[2] = {0, 0}, periods[2] = {1, 0}, n, t;
    MPI_Comm cart, sub, cdup, small;
    MPI_Dims_create(size, 2, d);
    OK(MPI_Cart_create(MPI_COMM_WORLD, 2, d, periods, 1, &cart));
    MPI_Topo_test(cart, &t);
    CHECK(t == MPI_CART, "topo_test %d", t);
    MPI_Topo_test(MPI_COMM_WORLD, &t);
    CHECK(t == MPI_UNDEFINED, "world's topo_test %d", t);
    MPI_Cartdim_get(cart, &n);
    CHECK(n == 2, "cartdim %d", n);
    int gd[2], gp[2], gc[2], coords[2], r;
    OK(MPI_Cart_get(cart, 2, gd, gp, gc));
    CHECK(gd[0] == d[0] && gd[1] == d[1] && gp[0] == 1 && gp[1] == 0, "cart_get dims %d %d periods %d %d", gd[0], gd[1], gp[0], gp[1]);
    OK(MPI_Cart_coords(cart, rank, 2, coords));
    CHECK(coords[0] == gc[0] && coords[1] == gc[1], "cart_coords vs cart_get");
    OK(MPI_Cart_rank(cart, coords, &r));
    CHECK(r == rank, "cart_rank %d", r);
    int wrap[2] = {coords[0] + d[0], coords[1]};
    OK(MPI_Cart_rank(cart, wrap, &r));
    CHECK(r == rank, "cart_rank of a wrapped coordinate %d", r);
    int s0, d0, s1, d1, s2, d2;
    OK(MPI_Cart_shift(cart, 0, 1, &s0, &d0));
    OK(MPI_Cart_shift(cart, 1, 1, &s1, &d1));
    OK(MPI_Cart_shift(cart, 1, -1, &s2, &d2));
    printf("rank %d: cart %dx%d at (%d,%d), shift 0: %d %d, shift 1: %d %d, shift 1 by -1: %d %d\n",
           rank, d[0], d[1], coords[0], coords[1], s0, d0, s1, d1, s2, d2);
    OK(MPI_Cart_map(MPI_COMM_WORLD, 2, d, periods, &r));
    CHECK(r == rank, "cart_map %d", r);
    int remain[2] = {0, 1};
    OK(MPI_Cart_sub(cart, remain, &sub));
    MPI_Topo_test(sub, &t);
    MPI_Cartdim_get(sub, &n);
    int sr;
    MPI_Comm_rank(sub, &sr);
    CHECK(t == MPI_CART && n == 1 && sr == coords[1], "cart_sub topo %d dims %d rank %d", t, n, sr);
    OK(MPI_Comm_dup(cart, &cdup));
    MPI_Topo_test(cdup, &t);
    OK(MPI_Cart_get(cdup, 2, gd, gp, gc));
    CHECK(t == MPI_CART && gd[0] == d[0] && gc[1] == coords[1], "a cart's dup: topo %d", t);
    int cmp;
    MPI_Comm_compare(cart, cdup, &cmp);
    CHECK(cmp == MPI_CONGRUENT, "cart vs its dup %s", cmpName(cmp));
    /* A grid of all but the last rank. */
    int one = size - 1, per = 0;
    OK(MPI_Cart_create(MPI_COMM_WORLD, 1, &one, &per, 0, &small));
    CHECK((small == MPI_COMM_NULL) == (rank == size - 1), "the small grid's communicator");
    OK(MPI_Cart_map(MPI_COMM_WORLD, 1, &one, &per, &r));
    CHECK(r == (rank == size - 1 ? MPI_UNDEFINED : rank), "cart_map of the small grid %d", r);
    if (small != MPI_COMM_NULL)
        MPI_Comm_free(&small);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int c1 = errClass(MPI_Cartdim_get(MPI_COMM_WORLD, &n));
    int big = size + 1;
    int c2 = errClass(MPI_Cart_create(MPI_COMM_WORLD, 1, &big, &per, 0, &small));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    if (rank == 0)
        printf("cart: cartdim_get without a topology class %d, grid too large class %d\n", c1, c2);
    MPI_Comm_free(&sub);
    MPI_Comm_free(&cdup);
    MPI_Comm_free(&cart);
    printf("rank %d: cart ok\n", rank);
}

/* ring1d is a 1D grid of every rank, periodic from 3 ranks. At 2 a periodic ring has
 * one rank as both neighbours, and MPICH 4.0.2 then puts the blocks of
 * MPI_Neighbor_alltoallv and _alltoallw of unequal lengths in the wrong slots (MPI 4.1
 * says the block sent towards +1 lands in the -1 slot, as gorma's library does). */
static MPI_Comm ring1d(void) {
    int d = size, per = size >= 3;
    MPI_Comm c;
    OK(MPI_Cart_create(MPI_COMM_WORLD, 1, &d, &per, 0, &c));
    return c;
}

static void neighbors(void) {
    MPI_Comm c = ring1d();
    int left, right;
    MPI_Cart_shift(c, 0, 1, &left, &right);
    int me = rank * 10 + 1, got[2] = {-1, -1};
    OK(MPI_Neighbor_allgather(&me, 1, MPI_INT, got, 1, MPI_INT, c));
    printf("rank %d: neighbor_allgather %d %d\n", rank, got[0], got[1]);
    CHECK(got[0] == (left == MPI_PROC_NULL ? -1 : left * 10 + 1), "allgather from the left");
    int send[2] = {rank * 100, rank * 100 + 1}, recv[2] = {-1, -1};
    OK(MPI_Neighbor_alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, c));
    printf("rank %d: neighbor_alltoall %d %d\n", rank, recv[0], recv[1]);
    CHECK(recv[1] == (right == MPI_PROC_NULL ? -1 : right * 100), "alltoall from the right");
    int vr[4] = {-1, -1, -1, -1}, counts[2] = {1, 1}, displs[2] = {3, 0};
    OK(MPI_Neighbor_allgatherv(&me, 1, MPI_INT, vr, counts, displs, MPI_INT, c));
    printf("rank %d: neighbor_allgatherv %d %d %d %d\n", rank, vr[0], vr[1], vr[2], vr[3]);
    /* alltoallv: 1 int to the left, 2 to the right. */
    int vs[3] = {rank, rank + 100, rank + 200}, sc[2] = {1, 2}, sd[2] = {0, 1};
    int rc[2] = {2, 1}, rd[2] = {0, 2}, vr2[3] = {-1, -1, -1};
    OK(MPI_Neighbor_alltoallv(vs, sc, sd, MPI_INT, vr2, rc, rd, MPI_INT, c));
    printf("rank %d: neighbor_alltoallv %d %d %d\n", rank, vr2[0], vr2[1], vr2[2]);
    CHECK(left == MPI_PROC_NULL || (vr2[0] == left + 100 && vr2[1] == left + 200), "alltoallv from the left");
    CHECK(right == MPI_PROC_NULL || vr2[2] == right, "alltoallv from the right");
    /* alltoallw: an int to the left, a double to the right. */
    struct {
        int i;
        double x;
    } ws = {rank, rank + 0.5}, wr = {-1, -1.0};
    int wc[2] = {1, 1};
    MPI_Aint wsd[2] = {0, (char *)&ws.x - (char *)&ws}, wrd[2] = {(char *)&wr.x - (char *)&wr, 0};
    MPI_Datatype wst[2] = {MPI_INT, MPI_DOUBLE}, wrt[2] = {MPI_DOUBLE, MPI_INT};
    OK(MPI_Neighbor_alltoallw(&ws, wc, wsd, wst, &wr, wc, wrd, wrt, c));
    printf("rank %d: neighbor_alltoallw %d %.1f\n", rank, wr.i, wr.x);
    CHECK((left == MPI_PROC_NULL || wr.x == left + 0.5) && (right == MPI_PROC_NULL || wr.i == right),
          "alltoallw from the neighbours");
    /* The nonblocking forms give the same answers. */
    MPI_Request reqs[5];
    int got2[2] = {-1, -1}, recv2[2] = {-1, -1}, vr3[4] = {-1, -1, -1, -1}, vr4[3] = {-1, -1, -1};
    struct {
        int i;
        double x;
    } wr2 = {-1, -1.0};
    OK(MPI_Ineighbor_allgather(&me, 1, MPI_INT, got2, 1, MPI_INT, c, &reqs[0]));
    OK(MPI_Ineighbor_alltoall(send, 1, MPI_INT, recv2, 1, MPI_INT, c, &reqs[1]));
    OK(MPI_Ineighbor_allgatherv(&me, 1, MPI_INT, vr3, counts, displs, MPI_INT, c, &reqs[2]));
    OK(MPI_Ineighbor_alltoallv(vs, sc, sd, MPI_INT, vr4, rc, rd, MPI_INT, c, &reqs[3]));
    OK(MPI_Ineighbor_alltoallw(&ws, wc, wsd, wst, &wr2, wc, wrd, wrt, c, &reqs[4]));
    int flag;
    do
        OK(MPI_Test(&reqs[0], &flag, MPI_STATUS_IGNORE));
    while (!flag);
    MPI_Status sts[4];
    OK(MPI_Waitall(4, reqs + 1, sts));
    CHECK(memcmp(got, got2, sizeof got) == 0 && memcmp(recv, recv2, sizeof recv) == 0 &&
              memcmp(vr, vr3, sizeof vr) == 0 && memcmp(vr2, vr4, sizeof vr2) == 0 &&
              wr.i == wr2.i && wr.x == wr2.x,
          "the nonblocking neighbourhood collectives differ from the blocking ones");
    /* Persistent forms: made and freed (MPI_Start is not exercised here). */
    OK(MPI_Neighbor_allgather_init(&me, 1, MPI_INT, got2, 1, MPI_INT, c, MPI_INFO_NULL, &reqs[0]));
    OK(MPI_Neighbor_alltoall_init(send, 1, MPI_INT, recv2, 1, MPI_INT, c, MPI_INFO_NULL, &reqs[1]));
    OK(MPI_Neighbor_allgatherv_init(&me, 1, MPI_INT, vr3, counts, displs, MPI_INT, c, MPI_INFO_NULL, &reqs[2]));
    OK(MPI_Neighbor_alltoallv_init(vs, sc, sd, MPI_INT, vr4, rc, rd, MPI_INT, c, MPI_INFO_NULL, &reqs[3]));
    OK(MPI_Neighbor_alltoallw_init(&ws, wc, wsd, wst, &wr2, wc, wrd, wrt, c, MPI_INFO_NULL, &reqs[4]));
    for (int i = 0; i < 5; i++) {
        OK(MPI_Request_free(&reqs[i]));
        CHECK(reqs[i] == MPI_REQUEST_NULL, "a freed persistent request");
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int class = errClass(MPI_Neighbor_allgather(&me, 1, MPI_INT, got, 1, MPI_INT, MPI_COMM_WORLD));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    if (rank == 0)
        printf("neighbor_allgather without a topology: class %d\n", class);
    MPI_Comm_free(&c);
    printf("rank %d: neighbors ok\n", rank);
}

static void graph(void) {
    /* A ring: node i's neighbours are i+1 and i-1. */
    int index[64], edges[128];
    for (int i = 0; i < size; i++) {
        index[i] = 2 * (i + 1);
        edges[2 * i] = (i + 1) % size;
        edges[2 * i + 1] = (i + size - 1) % size;
    }
    MPI_Comm g, gdup;
    OK(MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &g));
    int t, nn, ne, cnt, nb[2], gi[64], ge[128], r;
    MPI_Topo_test(g, &t);
    MPI_Graphdims_get(g, &nn, &ne);
    CHECK(t == MPI_GRAPH && nn == size && ne == 2 * size, "graph: topo %d, %d nodes, %d edges", t, nn, ne);
    OK(MPI_Graph_get(g, nn, ne, gi, ge));
    CHECK(memcmp(gi, index, nn * sizeof(int)) == 0 && memcmp(ge, edges, ne * sizeof(int)) == 0, "graph_get");
    OK(MPI_Graph_neighbors_count(g, rank, &cnt));
    OK(MPI_Graph_neighbors(g, rank, 2, nb));
    OK(MPI_Graph_map(MPI_COMM_WORLD, size, index, edges, &r));
    CHECK(cnt == 2 && r == rank, "graph: %d neighbours, mapped to %d", cnt, r);
    int me = rank + 1000, got[2] = {-1, -1};
    OK(MPI_Neighbor_allgather(&me, 1, MPI_INT, got, 1, MPI_INT, g));
    printf("rank %d: graph neighbours %d %d, allgather %d %d\n", rank, nb[0], nb[1], got[0], got[1]);
    OK(MPI_Comm_dup(g, &gdup));
    MPI_Topo_test(gdup, &t);
    OK(MPI_Graph_neighbors(gdup, rank, 2, nb));
    CHECK(t == MPI_GRAPH && nb[0] == (rank + 1) % size, "a graph's dup: topo %d", t);
    MPI_Comm_free(&gdup);
    MPI_Comm_free(&g);
    printf("rank %d: graph ok\n", rank);
}

static void distgraph(void) {
    /* Adjacent, weighted: from the rank below, to the rank above. */
    int src = (rank + size - 1) % size, dst = (rank + 1) % size;
    int sw = rank + 1, dw = rank + 2;
    MPI_Comm dg, dg2, ddup;
    OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &src, &sw, 1, &dst, &dw, MPI_INFO_NULL, 0, &dg));
    int t, in, out, weighted, s, d, gsw, gdw;
    MPI_Topo_test(dg, &t);
    OK(MPI_Dist_graph_neighbors_count(dg, &in, &out, &weighted));
    OK(MPI_Dist_graph_neighbors(dg, 1, &s, &gsw, 1, &d, &gdw));
    CHECK(t == MPI_DIST_GRAPH && in == 1 && out == 1 && weighted && s == src && d == dst && gsw == sw && gdw == dw,
          "adjacent dist graph: topo %d, degrees %d %d, weighted %d, %d (%d) -> %d (%d)", t, in, out, weighted, s, gsw, d, gdw);
    int me = rank * 7, got = -1;
    OK(MPI_Neighbor_alltoall(&me, 1, MPI_INT, &got, 1, MPI_INT, dg));
    printf("rank %d: dist graph from %d to %d, alltoall %d\n", rank, s, d, got);
    OK(MPI_Comm_dup(dg, &ddup));
    OK(MPI_Dist_graph_neighbors(ddup, 1, &s, &gsw, 1, &d, &gdw));
    CHECK(s == src && d == dst && gsw == sw, "a dist graph's dup");
    /* Rank 0 gives every edge i -> i+1, unweighted. */
    int srcs[64], degs[64], dsts[64], n = rank == 0 ? size : 0;
    for (int i = 0; i < n; i++) {
        srcs[i] = i;
        degs[i] = 1;
        dsts[i] = (i + 1) % size;
    }
    OK(MPI_Dist_graph_create(MPI_COMM_WORLD, n, srcs, degs, dsts, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &dg2));
    OK(MPI_Dist_graph_neighbors_count(dg2, &in, &out, &weighted));
    OK(MPI_Dist_graph_neighbors(dg2, 1, &s, MPI_UNWEIGHTED, 1, &d, MPI_UNWEIGHTED));
    CHECK(in == 1 && out == 1 && !weighted && s == src && d == dst, "dist graph: degrees %d %d, weighted %d, %d -> %d", in, out, weighted, s, d);
    int gv[1] = {-1};
    OK(MPI_Neighbor_allgather(&me, 1, MPI_INT, gv, 1, MPI_INT, dg2));
    printf("rank %d: dist graph allgather %d\n", rank, gv[0]);
    /* Weighted: rank r gives the edge r+1 -> r, of weight 100+r. */
    MPI_Comm dg3;
    int from = (rank + 1) % size, wt = 100 + rank;
    OK(MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &from, (int[]){1}, &rank, &wt, MPI_INFO_NULL, 0, &dg3));
    OK(MPI_Dist_graph_neighbors_count(dg3, &in, &out, &weighted));
    OK(MPI_Dist_graph_neighbors(dg3, 1, &s, &gsw, 1, &d, &gdw));
    CHECK(in == 1 && out == 1 && weighted && s == from && gsw == 100 + rank && d == src && gdw == 100 + src,
          "weighted dist graph: degrees %d %d, weighted %d, from %d (%d), to %d (%d)", in, out, weighted, s, gsw, d, gdw);
    printf("rank %d: weighted dist graph from %d (weight %d) to %d (weight %d)\n", rank, s, gsw, d, gdw);
    MPI_Comm_free(&dg3);
    MPI_Comm_free(&ddup);
    MPI_Comm_free(&dg2);
    MPI_Comm_free(&dg);
    printf("rank %d: distgraph ok\n", rank);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* one write per line: the ranks' lines do not mix */
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2 && size <= 64, "run at 2 to 64 ranks, not %d", size);
    groups();
    comms();
    dims();
    cart();
    neighbors();
    graph();
    distgraph();
    MPI_Barrier(MPI_COMM_WORLD);
    printf("rank %d: topo ok\n", rank);
    MPI_Finalize();
    return 0;
}
