package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

func TestMain(m *testing.M) { os.Exit(testbudget.Run(m)) }

const mpichInclude = "/usr/include/x86_64-linux-gnu/mpich"

// TestGenerated: the committed z* files and docs/abi.md's list are what mpigen writes
// from the installed MPICH headers.
func TestGenerated(t *testing.T) {
	if _, err := os.Stat(filepath.Join(mpichInclude, "mpi_proto.h")); err != nil {
		testbudget.SkipEngine(t, "MPICH's headers are not installed (Debian: apt-get install libmpich-dev)")
	}
	if err := run(mpichInclude, "../..", "../../../../docs/abi.md", true); err != nil {
		t.Fatal(err)
	}
}

func TestParseParam(t *testing.T) {
	for _, c := range []struct {
		in   string
		want param
	}{
		{"const void *buf", param{name: "buf", base: "void", ptrs: 1, isCon: true}},
		{"int count", param{name: "count", base: "int"}},
		{"const int array_of_blocklengths[]", param{name: "array_of_blocklengths", base: "int", ptrs: 1, isCon: true}},
		{"char ***argv", param{name: "argv", base: "char", ptrs: 3}},
		{"MPI_Comm_copy_attr_function *comm_copy_attr_fn", param{name: "comm_copy_attr_fn", base: "MPI_Comm_copy_attr_function", ptrs: 1}},
		{"MPI_Status array_of_statuses[]", param{name: "array_of_statuses", base: "MPI_Status", ptrs: 1}},
		{"int ranges[][3]", param{name: "ranges", base: "int", ptrs: 1}},
	} {
		got, err := parseParam(c.in)
		if err != nil || got != c.want {
			t.Errorf("parseParam(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	if _, err := parseParam("int"); err == nil {
		t.Error(`parseParam("int") gave no error for a parameter without a name`)
	}
}

func TestImplName(t *testing.T) {
	for in, want := range map[string]string{
		"MPI_Comm_rank":           "doCommRank",
		"MPI_Send":                "doSend",
		"MPIX_Comm_revoke":        "doXCommRevoke",
		"MPI_Type_create_hvector": "doTypeCreateHvector",
	} {
		if got := implName(in); got != want {
			t.Errorf("implName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseConsts(t *testing.T) {
	src := `#define MPI_COMM_WORLD ((MPI_Comm)0x44000000)
#define MPI_INT      ((MPI_Datatype)0x4c000405)
#define MPI_ANY_TAG     (-1)
#define MPI_LONG_LONG      MPI_INT
#define MPI_FLOAT_INT ((MPI_Datatype)0x8c000000)
#define MPICH_ERR_FIRST_MPIX 100 /* a gap */
#define MPIX_ERR_REVOKED MPICH_ERR_FIRST_MPIX+3 /* revoked */
#define MPI_BOTTOM      (void *)0
#define MPI_Comm_c2f(comm) (MPI_Fint)(comm)
typedef enum MPIR_Win_model {
    MPI_WIN_SEPARATE   = 1,
    MPI_WIN_UNIFIED    = 2
} MPIR_Win_model_t;
typedef enum MPIR_Topo_type { MPI_GRAPH=1, MPI_CART=2 } MPIR_Topo_type;
`
	got := parseConsts(src)
	want := []constant{
		{"MPI_COMM_WORLD", "Comm", 0x44000000},
		{"MPI_INT", "Datatype", 0x4c000405},
		{"MPI_ANY_TAG", "", -1},
		{"MPI_LONG_LONG", "Datatype", 0x4c000405},
		{"MPI_FLOAT_INT", "Datatype", 0x8c000000},
		{"MPICH_ERR_FIRST_MPIX", "", 100},
		{"MPIX_ERR_REVOKED", "", 103},
		{"MPI_WIN_SEPARATE", "", 1},
		{"MPI_WIN_UNIFIED", "", 2},
		{"MPI_GRAPH", "", 1},
		{"MPI_CART", "", 2},
	}
	if !slices.Equal(got, want) {
		t.Errorf("parseConsts:\n got %+v\nwant %+v", got, want)
	}
}
