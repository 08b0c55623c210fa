package launcher

import (
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Sessions. Each rank is a process group leader (signals reach its descendants). An
// MPICH program's ranks also get a session each, as under Hydra; the others stay in the
// caller's session, as under mpirun.
//
// Where the kernel groups tasks by session for scheduling (autogroup:
// /proc/sys/kernel/sched_autogroup_enabled, on in Debian's kernels), a session is the
// unit of CPU share. Ranks that wait by spinning without yielding, as Debian's MPICH
// (ch4:ucx) does, gain from a session each on a host busy with other work: together
// they get a share per rank instead of one. Ranks that yield the processor while they
// wait (gorma ranks on a host they oversubscribe, Open MPI's ranks under
// mpi_yield_when_idle) lose from it. A yield gives the processor only to tasks of the
// same group, so a waiting rank alone in its session keeps its processor for its whole
// time slice while the rank it waits for does not run. `LOAD=2 scripts/real-programs.sh`
// measures both kinds of program, against a build that starts every rank in the
// caller's session (GOLAUNCH2).
//
// A rank in its own session has no controlling terminal; its standard streams are
// golaunch's pipes either way.

// mpichLib is the part of a shared library's name that marks an MPICH program.
const mpichLib = "mpich"

// libDirs are the directories searched for a program's libraries (Debian's multiarch
// and the classic ones), after its own RUNPATH or RPATH.
var libDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib",
	"/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu"}

// sessionCache remembers ownSession's answer per program path for the agent's life.
var sessionCache sync.Map

// ownSession reports whether the ranks of the program at path each get a session of
// their own: whether it is an ELF program that links MPICH, directly or through one of
// the libraries it links (ScaLAPACK's MPICH build, say). Scripts and programs that do
// not link MPICH answer false.
func ownSession(path string) bool {
	if v, ok := sessionCache.Load(path); ok {
		return v.(bool)
	}
	v := linksMPICH(path)
	sessionCache.Store(path, v)
	return v
}

// linksMPICH reports whether the ELF file at path, or a library it needs, names MPICH.
// It looks one level deep: the libraries of path's libraries.
func linksMPICH(path string) bool {
	needed, dirs := elfNeeded(path)
	for _, lib := range needed {
		if strings.Contains(lib, mpichLib) {
			return true
		}
	}
	for _, lib := range needed {
		p := findLib(lib, dirs)
		if p == "" {
			continue
		}
		sub, _ := elfNeeded(p)
		for _, l := range sub {
			if strings.Contains(l, mpichLib) {
				return true
			}
		}
	}
	return false
}

// elfNeeded returns the libraries the ELF file at path needs (DT_NEEDED) and the
// directories its RUNPATH or RPATH names ($ORIGIN resolved); nil for a file that is not
// ELF.
func elfNeeded(path string) (needed, dirs []string) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	needed, _ = f.ImportedLibraries()
	for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
		vals, _ := f.DynString(tag)
		for _, v := range vals {
			for _, d := range strings.Split(v, ":") {
				if d != "" {
					dirs = append(dirs, strings.ReplaceAll(d, "$ORIGIN", filepath.Dir(path)))
				}
			}
		}
	}
	return needed, dirs
}

// findLib returns the path of library name in dirs or libDirs, or "".
func findLib(name string, dirs []string) string {
	if strings.Contains(name, "/") {
		return name
	}
	for _, d := range append(dirs, libDirs...) {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	return ""
}
