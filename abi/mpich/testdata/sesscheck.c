/* sesscheck: MPI-4 sessions and the MPI tool interface (MPI_T) through MPICH's ABI.
 * The first argument picks the mode:
 *   session     sessions alone, without MPI_Init;
 *   initfirst   MPI_Init, then a session, finalized before MPI_Finalize;
 *   sessfirst   a session, then MPI_Init; the session outlives MPI_Finalize;
 *   mpit        the tool interface, before and without MPI_Init.
 * Each rank checks its own results and prints deterministic lines; run at 2 ranks.
 * A wrong value aborts with a message. On gorma's library (MPI_Get_library_version
 * starts with "gorma") the MPI_T mode also checks gorma's own variables, silently:
 * MPICH's differ by design. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank = -1;

#define CHECK(cond, ...)                                       \
    do {                                                       \
        if (!(cond)) {                                         \
            fprintf(stderr, "rank %d: check failed: ", rank);  \
            fprintf(stderr, __VA_ARGS__);                      \
            fprintf(stderr, "\n");                             \
            exit(1);                                           \
        }                                                      \
    } while (0)

#define OK(call) CHECK((call) == MPI_SUCCESS, "%s failed", #call)

static int handlerCalls, handlerCode;
static MPI_Session handlerSession;

static void sessionHandler(MPI_Session *s, int *code, ...) {
    handlerCalls++;
    handlerCode = *code;
    handlerSession = *s;
}

static int isGorma(void) {
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int n;
    OK(MPI_Get_library_version(v, &n));
    return strncmp(v, "gorma", 5) == 0;
}

/* psets checks the session's process sets: mpi://WORLD and mpi://SELF are among them. */
static void psets(MPI_Session s, int size) {
    int n, world = 0, self = 0;
    OK(MPI_Session_get_num_psets(s, MPI_INFO_NULL, &n));
    CHECK(n >= 2, "%d process sets, want at least 2", n);
    for (int i = 0; i < n; i++) {
        char name[256];
        int len = 0;
        OK(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, name));
        CHECK(len > 1 && len <= (int)sizeof name, "pset %d: length %d", i, len);
        int want = len;
        OK(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, name));
        CHECK((int)strlen(name) + 1 == want, "pset %d: %s is not %d long", i, name, want);
        world |= strcmp(name, "mpi://WORLD") == 0;
        self |= strcmp(name, "mpi://SELF") == 0;
    }
    CHECK(world && self, "mpi://WORLD or mpi://SELF is missing");
    MPI_Info info;
    char v[32];
    int flag;
    OK(MPI_Session_get_pset_info(s, "mpi://WORLD", &info));
    OK(MPI_Info_get(info, "mpi_size", sizeof v - 1, v, &flag));
    CHECK(flag && atoi(v) == size, "mpi://WORLD's mpi_size is %s, want %d", flag ? v : "unset", size);
    OK(MPI_Info_free(&info));
    OK(MPI_Session_get_pset_info(s, "mpi://SELF", &info));
    OK(MPI_Info_get(info, "mpi_size", sizeof v - 1, v, &flag));
    CHECK(flag && atoi(v) == 1, "mpi://SELF's mpi_size is %s, want 1", flag ? v : "unset");
    OK(MPI_Info_free(&info));
    printf("rank %d: psets ok\n", rank);
}

/* errhandlers checks a session's error handler and its errors. */
static void errhandlers(MPI_Session s) {
    MPI_Errhandler h, got;
    OK(MPI_Session_create_errhandler(sessionHandler, &h));
    OK(MPI_Session_set_errhandler(s, h));
    OK(MPI_Session_get_errhandler(s, &got));
    CHECK(got == h, "MPI_Session_get_errhandler gave another handler");
    OK(MPI_Errhandler_free(&got));
    OK(MPI_Session_call_errhandler(s, MPI_ERR_OTHER));
    CHECK(handlerCalls == 1 && handlerCode == MPI_ERR_OTHER && handlerSession == s,
          "the handler ran %d times with code %d", handlerCalls, handlerCode);
    MPI_Group g;
    /* MPICH 4.0.2 ends the job here instead of calling the session's handler: the
     * error of a bad name is checked on gorma's library only. */
    if (isGorma()) {
        int rc = MPI_Group_from_session_pset(s, "mpi://no-such-pset", &g);
        CHECK(rc != MPI_SUCCESS && handlerCalls == 2 && handlerCode == rc,
              "a bad pset name: rc %d, %d handler calls", rc, handlerCalls);
    }
    OK(MPI_Session_set_errhandler(s, MPI_ERRORS_RETURN));
    OK(MPI_Errhandler_free(&h));
    MPI_Info info;
    OK(MPI_Session_get_info(s, &info));
    if (isGorma()) {
        char v[64];
        int flag;
        OK(MPI_Info_get(info, "thread_level", sizeof v - 1, v, &flag));
        CHECK(flag && strcmp(v, "MPI_THREAD_MULTIPLE") == 0, "thread_level is %s", flag ? v : "unset");
        /* A group without the caller, and a bad string tag, fail through the handler
         * passed for the new communicator; MPICH's classes differ. */
        MPI_Group wg, other;
        MPI_Comm c;
        int me;
        OK(MPI_Group_from_session_pset(s, "mpi://WORLD", &wg));
        OK(MPI_Group_rank(wg, &me));
        OK(MPI_Group_excl(wg, 1, &me, &other));
        int rc = MPI_Comm_create_from_group(other, "org.gorma.sesscheck.bad", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c);
        int class;
        MPI_Error_class(rc, &class);
        CHECK(class == MPI_ERR_GROUP, "a group without the caller: class %d", class);
        rc = MPI_Comm_create_from_group(wg, NULL, MPI_INFO_NULL, MPI_ERRORS_RETURN, &c);
        MPI_Error_class(rc, &class);
        CHECK(class == MPI_ERR_ARG, "a NULL string tag: class %d", class);
        OK(MPI_Group_free(&other));
        OK(MPI_Group_free(&wg));
    }
    OK(MPI_Info_free(&info));
    printf("rank %d: session errhandler ok\n", rank);
}

/* comms makes communicators from the session's groups and uses them. */
static void comms(MPI_Session s, int *size) {
    MPI_Group wg, sg;
    MPI_Comm c, self;
    OK(MPI_Group_from_session_pset(s, "mpi://WORLD", &wg));
    OK(MPI_Group_size(wg, size));
    OK(MPI_Group_rank(wg, &rank));
    OK(MPI_Comm_create_from_group(wg, "org.gorma.sesscheck.world", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c));
    int r, n, sum = 0;
    OK(MPI_Comm_rank(c, &r));
    OK(MPI_Comm_size(c, &n));
    CHECK(r == rank && n == *size, "the world communicator: rank %d of %d", r, n);
    OK(MPI_Allreduce(&r, &sum, 1, MPI_INT, MPI_SUM, c));
    CHECK(sum == n * (n - 1) / 2, "the sum of ranks is %d", sum);
    MPI_Errhandler h;
    OK(MPI_Comm_get_errhandler(c, &h));
    CHECK(h == MPI_ERRORS_RETURN, "the communicator's handler is not MPI_ERRORS_RETURN");

    OK(MPI_Group_from_session_pset(s, "mpi://SELF", &sg));
    OK(MPI_Comm_create_from_group(sg, "org.gorma.sesscheck.self", MPI_INFO_NULL, MPI_ERRORS_RETURN, &self));
    OK(MPI_Comm_size(self, &n));
    CHECK(n == 1, "the self communicator has %d ranks", n);

    /* An intercommunicator between rank 0 and the others. */
    MPI_Group g0, rest, local, remote;
    int zero = 0;
    OK(MPI_Group_incl(wg, 1, &zero, &g0));
    OK(MPI_Group_excl(wg, 1, &zero, &rest));
    local = rank == 0 ? g0 : rest;
    remote = rank == 0 ? rest : g0;
    MPI_Comm inter;
    OK(MPI_Intercomm_create_from_groups(local, 0, remote, 0, "org.gorma.sesscheck.inter", MPI_INFO_NULL,
                                        MPI_ERRORS_RETURN, &inter));
    int rsize, flag;
    OK(MPI_Comm_test_inter(inter, &flag));
    OK(MPI_Comm_remote_size(inter, &rsize));
    CHECK(flag && rsize == (rank == 0 ? *size - 1 : 1), "intercommunicator: inter %d, remote size %d", flag, rsize);
    int lr, v = -1;
    OK(MPI_Comm_rank(inter, &lr));
    if (rank == 0) {
        for (int i = 0; i < rsize; i++)
            OK(MPI_Send(&i, 1, MPI_INT, i, 7, inter));
    } else {
        OK(MPI_Recv(&v, 1, MPI_INT, 0, 7, inter, MPI_STATUS_IGNORE));
        CHECK(v == lr, "got %d over the intercommunicator, want %d", v, lr);
    }
    OK(MPI_Comm_free(&inter));
    OK(MPI_Group_free(&g0));
    OK(MPI_Group_free(&rest));
    OK(MPI_Comm_free(&self));
    OK(MPI_Comm_free(&c));
    OK(MPI_Group_free(&sg));
    OK(MPI_Group_free(&wg));
    printf("rank %d: session comms ok\n", rank);
}

static MPI_Session start(void) {
    MPI_Session s;
    OK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s));
    CHECK(s != MPI_SESSION_NULL, "MPI_Session_init gave MPI_SESSION_NULL");
    return s;
}

static void finish(MPI_Session *s) {
    OK(MPI_Session_finalize(s));
    CHECK(*s == MPI_SESSION_NULL, "MPI_Session_finalize left the handle");
}

static void sessionOnly(void) {
    MPI_Session s = start();
    int size, flag;
    comms(s, &size);
    psets(s, size);
    errhandlers(s);
    OK(MPI_Initialized(&flag));
    CHECK(!flag, "MPI_Initialized is true in a session-only program");
    /* A second session shares the process's runtime. */
    MPI_Session s2 = start();
    CHECK(s2 != s, "two sessions have one handle");
    finish(&s2);
    comms(s, &size);
    finish(&s);
    if (rank == 0)
        printf("session: %d ranks\n", size);
}

static void initFirst(void) {
    int size, wr, flag;
    OK(MPI_Init(NULL, NULL));
    MPI_Session s = start();
    comms(s, &size);
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &wr));
    CHECK(wr == rank, "MPI_COMM_WORLD rank %d, session rank %d", wr, rank);
    if (isGorma()) {
        /* An invalid session's error goes to MPI_COMM_WORLD's handler. */
        int n, class;
        OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
        MPI_Error_class(MPI_Session_get_num_psets(s + 1, MPI_INFO_NULL, &n), &class);
        CHECK(class == MPI_ERR_SESSION, "an invalid session: class %d", class);
        OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    }
    finish(&s);
    OK(MPI_Barrier(MPI_COMM_WORLD));
    OK(MPI_Finalize());
    OK(MPI_Finalized(&flag));
    CHECK(flag, "MPI_Finalized is false after MPI_Finalize");
    if (rank == 0)
        printf("initfirst: %d ranks\n", size);
}

static void sessFirst(void) {
    int size, wsize, flag;
    MPI_Session s = start();
    OK(MPI_Initialized(&flag));
    CHECK(!flag, "MPI_Initialized is true before MPI_Init");
    OK(MPI_Init(NULL, NULL));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &wsize));
    comms(s, &size);
    CHECK(wsize == size, "MPI_COMM_WORLD has %d ranks, mpi://WORLD %d", wsize, size);
    OK(MPI_Finalize());
    /* The session outlives the world model. */
    comms(s, &size);
    finish(&s);
    if (rank == 0)
        printf("sessfirst: %d ranks\n", size);
}

/* mpit checks the tool interface: its variables, categories and errors. */
static void mpit(void) {
    int provided, n, rc, gorma = isGorma();
    CHECK(MPI_T_cvar_get_num(&n) == MPI_T_ERR_NOT_INITIALIZED, "MPI_T_cvar_get_num before MPI_T_init_thread");
    OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    OK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    OK(MPI_T_finalize()); /* the interface stays initialized: one reference left */
    OK(MPI_T_cvar_get_num(&n));
    CHECK(n > 0, "%d control variables", n);
    for (int i = 0; i < n; i++) {
        char name[256], desc[1024];
        int nl = sizeof name, dl = sizeof desc, verb, bind, scope;
        MPI_Datatype dt;
        MPI_T_enum e;
        OK(MPI_T_cvar_get_info(i, name, &nl, &verb, &dt, &e, desc, &dl, &bind, &scope));
        CHECK(nl == (int)strlen(name) + 1, "cvar %d: name length %d for %s", i, nl, name);
        int idx;
        OK(MPI_T_cvar_get_index(name, &idx));
        CHECK(idx == i, "MPI_T_cvar_get_index(%s) = %d, want %d", name, idx, i);
        if (gorma) {
            CHECK(strncmp(name, "GORMA_", 6) == 0 && dt == MPI_CHAR && e == MPI_T_ENUM_NULL &&
                      bind == MPI_T_BIND_NO_OBJECT && scope == MPI_T_SCOPE_READONLY && dl > 1,
                  "cvar %d (%s): type, enum, bind %d or scope %d", i, name, bind, scope);
            MPI_T_cvar_handle h;
            int count;
            char val[256];
            OK(MPI_T_cvar_handle_alloc(i, NULL, &h, &count));
            OK(MPI_T_cvar_read(h, val));
            CHECK((int)strlen(val) + 1 == count, "cvar %s: value %s, count %d", name, val, count);
            const char *env = getenv(name);
            CHECK(env == NULL || strcmp(env, val) == 0, "cvar %s is %s, the environment has %s", name, val, env);
            CHECK(MPI_T_cvar_write(h, "x") == MPI_T_ERR_CVAR_SET_NEVER, "cvar %s was written", name);
            OK(MPI_T_cvar_handle_free(&h));
            CHECK(h == MPI_T_CVAR_HANDLE_NULL, "MPI_T_cvar_handle_free left the handle");
            CHECK(MPI_T_cvar_read(h, val) == MPI_T_ERR_INVALID_HANDLE, "read through a freed handle");
        }
    }
    if (gorma) {
        int idx;
        OK(MPI_T_cvar_get_index("GORMA_PROGRESS", &idx));
        MPI_T_cvar_handle h;
        int count;
        char val[64];
        OK(MPI_T_cvar_handle_alloc(idx, NULL, &h, &count));
        OK(MPI_T_cvar_read(h, val));
        const char *env = getenv("GORMA_PROGRESS");
        CHECK(strcmp(val, env ? env : "hybrid") == 0, "GORMA_PROGRESS reads %s", val);
        OK(MPI_T_cvar_handle_free(&h));
    }
    rc = MPI_T_cvar_get_info(n, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    CHECK(rc == MPI_T_ERR_INVALID_INDEX, "cvar index %d: rc %d", n, rc);
    rc = MPI_T_cvar_get_index("org.gorma.no-such-cvar", &n);
    CHECK(rc == MPI_T_ERR_INVALID_NAME, "a bad cvar name: rc %d", rc);

    int ncat, total = 0;
    OK(MPI_T_category_get_num(&ncat));
    CHECK(ncat > 0, "%d categories", ncat);
    for (int c = 0; c < ncat; c++) {
        char name[256];
        int nl = sizeof name, nc, np, nsub, idx;
        OK(MPI_T_category_get_info(c, name, &nl, NULL, NULL, &nc, &np, &nsub));
        OK(MPI_T_category_get_index(name, &idx));
        CHECK(idx == c, "MPI_T_category_get_index(%s) = %d", name, idx);
        if (nc > 0) {
            int *ix = malloc(nc * sizeof *ix);
            OK(MPI_T_category_get_cvars(c, nc, ix));
            free(ix);
        }
        total += nc;
    }
    if (gorma) {
        int cvars, ne;
        OK(MPI_T_cvar_get_num(&cvars));
        CHECK(total == cvars, "the categories hold %d cvars of %d", total, cvars);
        OK(MPI_T_category_get_num_events(0, &ne));
        CHECK(ne == 0, "%d events in category 0", ne);
    }
    rc = MPI_T_category_get_info(ncat, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    CHECK(rc == MPI_T_ERR_INVALID_INDEX, "category index %d: rc %d", ncat, rc);

    int npvar, nev, nsrc, changed;
    OK(MPI_T_pvar_get_num(&npvar));
    OK(MPI_T_event_get_num(&nev));
    OK(MPI_T_source_get_num(&nsrc));
    OK(MPI_T_category_changed(&changed));
    if (gorma)
        CHECK(npvar == 0 && nev == 0 && nsrc == 0, "%d pvars, %d events, %d sources", npvar, nev, nsrc);
    /* MPICH 4.0.2 crashes on an invalid pvar index: those checks run on gorma only. */
    if (gorma) {
        char name[64], desc[64];
        int nl = sizeof name, dl = sizeof desc, verb, cls, bind, ro, cont, atomic;
        MPI_Datatype dt;
        MPI_T_enum e;
        rc = MPI_T_pvar_get_info(npvar, name, &nl, &verb, &cls, &dt, &e, desc, &dl, &bind, &ro, &cont, &atomic);
        CHECK(rc == MPI_T_ERR_INVALID_INDEX, "pvar index %d: rc %d", npvar, rc);
    }
    MPI_T_pvar_session ps;
    OK(MPI_T_pvar_session_create(&ps));
    MPI_T_pvar_handle ph;
    int count;
    if (gorma) {
        rc = MPI_T_pvar_handle_alloc(ps, npvar, NULL, &ph, &count);
        CHECK(rc == MPI_T_ERR_INVALID_INDEX, "pvar handle for index %d: rc %d", npvar, rc);
    }
    OK(MPI_T_pvar_start(ps, MPI_T_PVAR_ALL_HANDLES));
    OK(MPI_T_pvar_stop(ps, MPI_T_PVAR_ALL_HANDLES));
    OK(MPI_T_pvar_session_free(&ps));
    CHECK(ps == MPI_T_PVAR_SESSION_NULL, "MPI_T_pvar_session_free left the handle");
    if (gorma) {
        rc = MPI_T_source_get_timestamp(0, NULL);
        CHECK(rc == MPI_T_ERR_INVALID_INDEX, "source 0: rc %d", rc);
        rc = MPI_T_event_handle_alloc(0, NULL, MPI_INFO_NULL, NULL);
        CHECK(rc == MPI_T_ERR_INVALID_INDEX, "event 0: rc %d", rc);
    }

    /* The interface also serves a program under MPI_Init, and after it. MPICH 4.0.2
     * crashes in MPI_Init after the interface was finalized: it stays initialized. */
    OK(MPI_Init(NULL, NULL));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided));
    OK(MPI_T_cvar_get_num(&n));
    OK(MPI_T_finalize());
    OK(MPI_Finalize());
    if (gorma) /* MPICH 4.0.2 fails MPI_T calls after MPI_Finalize with an internal error */
        OK(MPI_T_cvar_get_num(&n));
    OK(MPI_T_finalize());
    CHECK(MPI_T_finalize() == MPI_T_ERR_NOT_INITIALIZED, "MPI_T_finalize past its MPI_T_init_thread");
    if (gorma)
        CHECK(MPI_T_cvar_get_num(&n) == MPI_T_ERR_NOT_INITIALIZED, "MPI_T_cvar_get_num after MPI_T_finalize");
    printf("rank %d: mpit ok\n", rank);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* one write per line: the ranks' lines do not mix */
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "session") == 0)
        sessionOnly();
    else if (strcmp(mode, "initfirst") == 0)
        initFirst();
    else if (strcmp(mode, "sessfirst") == 0)
        sessFirst();
    else if (strcmp(mode, "mpit") == 0)
        mpit();
    else {
        fprintf(stderr, "usage: sesscheck session|initfirst|sessfirst|mpit\n");
        return 2;
    }
    return 0;
}
