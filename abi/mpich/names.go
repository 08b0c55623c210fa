//go:build cgo

package mpich

import (
	"strings"
	"sync"
)

// cNames maps a runtime call's name, folded to lower case without "window." and
// underscores, to its MPICH function: "recv" to MPI_Recv, "getaccumulate" to
// MPI_Get_accumulate, "winfence" to MPI_Win_fence.
var cNames = sync.OnceValue(func() map[string]string {
	m := make(map[string]string, len(fnNames))
	for _, n := range fnNames {
		m[foldCall(n[strings.Index(n, "_")+1:])] = n
	}
	return m
})

func foldCall(s string) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(s, "window."), "_", ""))
}

// mpiName is the MPICH function that a runtime call serves, for hang reports: "Recv"
// is MPI_Recv, "window.Fence" MPI_Win_fence, "GetAccumulate" MPI_Get_accumulate. A
// call of no covered function keeps its name.
func mpiName(call string) string {
	m, k := cNames(), foldCall(call)
	for _, key := range []string{k, "win" + k, "comm" + k} {
		if n, ok := m[key]; ok {
			return n
		}
	}
	return call
}
