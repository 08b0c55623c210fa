//go:build cgo

package mpich

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"unsafe"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

// Dynamic processes: MPI_Comm_spawn, MPI_Comm_spawn_multiple, MPI_Comm_get_parent and
// MPI_Comm_disconnect, on the runtime's Spawn (golaunch only). The runtime starts new
// ranks of the job's own program with the job's own arguments: a spawn must name that
// program (its path, or a name found in PATH or the working directory) and that
// argument list (MPI_ARGV_NULL when the job has none). Anything else fails with
// MPI_ERR_SPAWN, as does a spawn under another launcher. Info keys (host, wdir, path,
// soft, ...) are accepted and none is acted on: golaunch places the new ranks.
// The ports (MPI_Open_port, MPI_Comm_accept, ...) and the name service are left out:
// the runtime does not connect two jobs.

// parent is MPI_Comm_get_parent's handle: made at the first call, MPI_COMM_NULL after
// MPI_Comm_disconnect or MPI_Comm_free of it.
var parent struct {
	sync.Mutex
	made bool
	h    Comm
	co   *comm // h's object: a freed h's slot may hold another communicator
}

// doCommGetParent is MPI_Comm_get_parent: the intercommunicator to the spawning ranks,
// or MPI_COMM_NULL in a rank the job started with.
func doCommGetParent(out *Comm) error {
	if world == nil {
		return errNotInit
	}
	parent.Lock()
	defer parent.Unlock()
	if !parent.made {
		parent.made, parent.h = true, mpi_COMM_NULL
		if p := world.Parent(); p != nil {
			parent.co = &comm{w: p, errh: worldComm.errh}
			parent.h = Comm(comms.add(parent.co))
		}
	}
	if parent.h != mpi_COMM_NULL {
		if co, ok := comms.get(int32(parent.h)); !ok || co != parent.co {
			parent.h = mpi_COMM_NULL // freed by MPI_Comm_free
		}
	}
	*out = parent.h
	return nil
}

// doCommDisconnect is MPI_Comm_disconnect: every rank of c waits until the others
// have reached the call, so no message on c is left under way, and c is freed.
func doCommDisconnect(c *Comm) error {
	switch *c {
	case mpi_COMM_WORLD, mpi_COMM_SELF:
		return mpiErr(mpi_ERR_COMM, "MPI_COMM_WORLD and MPI_COMM_SELF cannot be disconnected")
	}
	co, ok := comms.get(int32(*c))
	if !ok {
		return errHandle("communicator", int32(*c))
	}
	if err := runtime.Barrier(bg, co.w); err != nil {
		return err
	}
	parent.Lock()
	if parent.h == *c {
		parent.h = mpi_COMM_NULL
	}
	parent.Unlock()
	return doCommFree(c)
}

// A spawnApp is one command of a spawn with its arguments and number of ranks.
type spawnApp struct {
	command string
	args    []string
	n       int
	bad     error // an argument that makes the app unusable, reported by root
}

// cStrings reads a NULL-terminated array of C strings (argv); nil gives none.
func cStrings(p unsafe.Pointer) []string {
	var out []string
	for p != nil {
		s := *(**byte)(p)
		if s == nil {
			break
		}
		out = append(out, goStr(s))
		p = unsafe.Add(p, unsafe.Sizeof(uintptr(0)))
	}
	return out
}

// goStr reads the NUL-terminated C string at s.
func goStr(s *byte) string {
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(s), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(s, n))
}

// checkApp reports why the runtime cannot start app, or nil: it starts the job's own
// program with the job's own arguments.
func checkApp(app spawnApp) error {
	if app.bad != nil {
		return app.bad
	}
	if app.n < 1 {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("maxprocs %d: want at least 1", app.n))
	}
	self, err := os.Executable()
	if err != nil {
		return mpiErr(mpi_ERR_SPAWN, fmt.Sprintf("cannot find this program's executable: %v", err))
	}
	if !sameProgram(app.command, self) {
		return mpiErr(mpi_ERR_SPAWN, fmt.Sprintf("command %q is not this job's program %s: gorma's runtime (golaunch) spawns new ranks of the job's own program only", app.command, self))
	}
	if own := os.Args[1:]; !slices.Equal(app.args, own) {
		return mpiErr(mpi_ERR_SPAWN, fmt.Sprintf("arguments %q differ from the job's %q: gorma's runtime (golaunch) starts new ranks with the job's own arguments; pass those (MPI_ARGV_NULL for none), and tell a new rank its role another way (MPI_Comm_get_parent, a message)", app.args, own))
	}
	return nil
}

// sameProgram reports whether command names the executable self: a path, else a
// name found in PATH or in the working directory.
func sameProgram(command, self string) bool {
	want, err := os.Stat(self)
	if err != nil || command == "" {
		return false
	}
	var paths []string
	if filepath.Base(command) != command {
		paths = []string{command}
	} else {
		if p, err := exec.LookPath(command); err == nil {
			paths = append(paths, p)
		}
		paths = append(paths, filepath.Join(".", command))
	}
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && os.SameFile(fi, want) {
			return true
		}
	}
	return false
}

// spawn starts the apps (significant at root only) from every rank of c, and gives
// the intercommunicator and, unless errcodes is nil, one code per new rank.
func spawn(apps []spawnApp, h []Info, root int, c Comm, out *Comm, errcodes *int32) error {
	co, err := commOf(c)
	if err != nil {
		return err
	}
	w := co.w
	if w.IsInter() {
		return mpiErr(mpi_ERR_COMM, "MPI_Comm_spawn takes an intracommunicator")
	}
	if root < 0 || root >= w.Size() {
		return mpiErr(mpi_ERR_ROOT, fmt.Sprintf("root %d is not in [0, %d)", root, w.Size()))
	}
	// root checks its apps and tells the others the total, or -1 if it refused them.
	total := []int64{-1}
	var why error
	if w.Rank() == root {
		why = checkApps(apps, h)
		if why == nil {
			total[0] = 0
			for _, a := range apps {
				total[0] += int64(a.n)
			}
		}
	}
	if err := collectives.Bcast(bg, w, total, root); err != nil {
		return err
	}
	n := int(total[0])
	codes := func(code int32) {
		if errcodes != nil && n > 0 {
			for i := range unsafe.Slice(errcodes, n) {
				unsafe.Slice(errcodes, n)[i] = code
			}
		}
	}
	if n < 0 {
		if why == nil {
			why = mpiErr(mpi_ERR_SPAWN, fmt.Sprintf("the root, rank %d, refused the spawn (its error says why)", root))
		}
		return why
	}
	ic, err := w.Spawn(bg, n)
	if err != nil {
		codes(mpi_ERR_SPAWN)
		if errors.Is(err, runtime.ErrInvalid) {
			return mpiErr(mpi_ERR_SPAWN, err.Error()) // golaunch's account, or which launcher can spawn
		}
		return err
	}
	codes(mpi_SUCCESS)
	newComm(ic, co, out)
	return nil
}

// checkApps checks root's apps and their infos.
func checkApps(apps []spawnApp, h []Info) error {
	for i, a := range apps {
		if h[i] != mpi_INFO_NULL {
			if _, err := infoOf(h[i]); err != nil {
				return err
			}
		}
		if err := checkApp(a); err != nil {
			if len(apps) > 1 {
				return fmt.Errorf("command %d: %w", i, err)
			}
			return err
		}
	}
	return nil
}

// doCommSpawn is MPI_Comm_spawn.
func doCommSpawn(command *byte, argv unsafe.Pointer, n int, h Info, root int, c Comm, out *Comm, errcodes *int32) error {
	var apps []spawnApp
	if w, err := worldOf(c); err == nil && w.Rank() == root {
		a := spawnApp{n: n, bad: mpiErr(mpi_ERR_ARG, "command is NULL")}
		if command != nil {
			a = spawnApp{command: goStr(command), args: cStrings(argv), n: n}
		}
		apps = []spawnApp{a}
	}
	return spawn(apps, []Info{h}, root, c, out, errcodes)
}

// doCommSpawnMultiple is MPI_Comm_spawn_multiple: every command must be the job's
// program with its arguments, so the new ranks are count groups of one program.
func doCommSpawnMultiple(count int, commands, argvs unsafe.Pointer, ns *int32, hs *Info, root int, c Comm, out *Comm, errcodes *int32) error {
	var apps []spawnApp
	var infos []Info
	if w, err := worldOf(c); err == nil && w.Rank() == root {
		switch {
		case count < 1:
			apps, infos = []spawnApp{{bad: mpiErr(mpi_ERR_ARG, fmt.Sprintf("count %d: want at least 1 command", count))}}, []Info{mpi_INFO_NULL}
		case commands == nil || ns == nil || hs == nil:
			apps, infos = []spawnApp{{bad: mpiErr(mpi_ERR_ARG, "array_of_commands, array_of_maxprocs and array_of_info must not be NULL")}}, []Info{mpi_INFO_NULL}
		}
		if apps != nil {
			return spawn(apps, infos, root, c, out, errcodes)
		}
		cmds := unsafe.Slice((**byte)(commands), count)
		var av []unsafe.Pointer
		if argvs != nil {
			av = unsafe.Slice((*unsafe.Pointer)(argvs), count)
		}
		for i, cmd := range cmds {
			a := spawnApp{n: int(unsafe.Slice(ns, count)[i]), bad: mpiErr(mpi_ERR_ARG, fmt.Sprintf("command %d is NULL", i))}
			if cmd != nil {
				a.command, a.bad = goStr(cmd), nil
			}
			if av != nil {
				a.args = cStrings(av[i])
			}
			apps = append(apps, a)
		}
		infos = unsafe.Slice(hs, count)
	}
	return spawn(apps, infos, root, c, out, errcodes)
}
