//go:build cgo

package mpich

import "testing"

func TestMPIName(t *testing.T) {
	for call, want := range map[string]string{
		"Recv":          "MPI_Recv",
		"Barrier":       "MPI_Barrier",
		"Allreduce":     "MPI_Allreduce",
		"window.Fence":  "MPI_Win_fence",
		"GetAccumulate": "MPI_Get_accumulate",
		"Finalize":      "MPI_Finalize",
		"Split":         "MPI_Comm_split",
		"no such call":  "no such call",
	} {
		if got := mpiName(call); got != want {
			t.Errorf("mpiName(%q) = %q, want %q", call, got, want)
		}
	}
}
