//go:build cgo

package mpich

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"unsafe"

	"github.com/gorma-hpc/gorma/window"
)

// Dynamic windows (MPI_Win_create_dynamic, MPI_Win_attach, MPI_Win_detach). MPI names a
// byte of a dynamic window by its address at the target (MPI_Get_address); the window
// package names it by a displacement that Attach returns. Each rank therefore publishes
// its attachments (address, length, displacement) in a directory, a window of int64s
// beside the dynamic window. An origin reads a target's directory once under a shared
// lock, keeps it, and reads it again when an address is in none of its entries.
//
// An origin that kept a directory still finds a buffer detached since then, and the
// access fails with MPI_ERR_RMA_RANGE: MPI calls accessing detached memory erroneous. A
// buffer detached and another attached at the same address between two accesses of one
// origin fails the same way, once, and the origin reads the directory afresh.

const (
	dirSlots = 1024 // the window package's limit of attachments per rank
	dirWords = 3    // address, length, displacement
)

// A dynDir is a dynamic window's directory. mu guards own and peers; no runtime call is
// made while it is held, except the updates of this rank's own directory, which no
// other lock nests in.
type dynDir struct {
	dir *window.Win[int64]

	mu    sync.Mutex
	own   []dynEntry         // by slot: this rank's attachments
	self  []dynEntry         // this rank's attachments with memory, sorted by address
	peers map[int][]dynEntry // directories read from peers, sorted by address
}

// A dynEntry is one attachment: n bytes at address addr, at displacement base of the
// window package. used marks the slots of this rank's attachments in use.
type dynEntry struct {
	addr, n, base int64
	used          bool
}

var dynDirs struct {
	mu sync.Mutex
	m  map[Win]*dynDir
}

func dynDirOf(h Win) *dynDir {
	dynDirs.mu.Lock()
	defer dynDirs.mu.Unlock()
	return dynDirs.m[h]
}

// freeDynDir frees window h's directory, if it is dynamic: a collective call, as
// MPI_Win_free is.
func freeDynDir(h Win) error {
	dynDirs.mu.Lock()
	d := dynDirs.m[h]
	delete(dynDirs.m, h)
	dynDirs.mu.Unlock()
	if d == nil {
		return nil
	}
	return d.dir.Free(bg)
}

// doWinCreateDynamic is MPI_Win_create_dynamic: a window without memory, whose
// displacement unit is 1 byte and whose displacements are the targets' addresses.
func doWinCreateDynamic(i Info, c Comm, out *Win) error {
	co, err := commOf(c)
	if err != nil {
		return err
	}
	if _, err := hintsOf(i); err != nil {
		return err
	}
	w, err := window.CreateDynamic[byte](bg, co.w)
	if err != nil {
		return err
	}
	dir, err := window.Allocate[int64](bg, co.w, dirSlots*dirWords)
	if err != nil {
		w.Free(bg)
		return err
	}
	if err := newWin(w, co, nil, 0, 1, out); err != nil {
		dir.Free(bg)
		return err
	}
	d := &dynDir{dir: dir, own: make([]dynEntry, dirSlots), peers: map[int][]dynEntry{}}
	dynDirs.mu.Lock()
	if dynDirs.m == nil {
		dynDirs.m = map[Win]*dynDir{}
	}
	dynDirs.m[*out] = d
	dynDirs.mu.Unlock()
	return setWinHints(*out, i)
}

// dynamicOf returns the window and directory of h, which must be dynamic.
func dynamicOf(h Win, call string) (*win, *dynDir, error) {
	wo, err := winOf(h)
	if err != nil {
		return nil, nil, err
	}
	d := dynDirOf(h)
	if d == nil {
		return nil, nil, mpiErr(mpi_ERR_RMA_FLAVOR, fmt.Sprintf("%s needs a window of MPI_Win_create_dynamic", call))
	}
	return wo, d, nil
}

// doWinAttach is MPI_Win_attach: size bytes at base become window memory that peers
// name by address.
func doWinAttach(h Win, base unsafe.Pointer, size int) error {
	wo, d, err := dynamicOf(h, "MPI_Win_attach")
	if err != nil {
		return err
	}
	if size < 0 {
		return mpiErr(mpi_ERR_SIZE, fmt.Sprintf("size %d is negative", size))
	}
	if base == nil && size > 0 {
		return mpiErr(mpi_ERR_BUFFER, "base is NULL")
	}
	addr := int64(uintptr(base))
	d.mu.Lock()
	slot := -1
	for s, e := range d.own {
		switch {
		case !e.used:
			if slot < 0 {
				slot = s
			}
		case size > 0 && e.n > 0 && addr < e.addr+e.n && e.addr < addr+int64(size):
			d.mu.Unlock()
			return mpiErr(mpi_ERR_RMA_ATTACH, fmt.Sprintf("[%#x, %#x) overlaps memory attached already at %#x", addr, addr+int64(size), e.addr))
		}
	}
	if slot < 0 {
		d.mu.Unlock()
		return mpiErr(mpi_ERR_RMA_ATTACH, fmt.Sprintf("all %d attachments of this rank are in use: detach one first", dirSlots))
	}
	e := dynEntry{addr: addr, n: int64(size), used: true}
	d.own[slot] = dynEntry{addr: addr, used: true} // taken; published below
	d.mu.Unlock()
	if size > 0 {
		b, err := wo.w.Attach(bg, unsafe.Slice((*byte)(base), size))
		if err != nil {
			d.mu.Lock()
			d.own[slot] = dynEntry{}
			d.mu.Unlock()
			if errors.Is(err, window.ErrInvalid) {
				return mpiErr(mpi_ERR_RMA_ATTACH, err.Error())
			}
			return err
		}
		e.base = int64(b)
	}
	d.mu.Lock()
	d.own[slot] = e
	d.sortSelf()
	d.mu.Unlock()
	return d.publish(wo.w.Rank(), slot, e)
}

// doWinDetach is MPI_Win_detach: the memory attached at base is the caller's again.
func doWinDetach(h Win, base unsafe.Pointer) error {
	wo, d, err := dynamicOf(h, "MPI_Win_detach")
	if err != nil {
		return err
	}
	addr := int64(uintptr(base))
	d.mu.Lock()
	slot := -1
	for s, e := range d.own {
		if e.used && e.addr == addr {
			slot = s
			break
		}
	}
	var e dynEntry
	if slot >= 0 {
		e = d.own[slot]
	}
	d.mu.Unlock()
	if slot < 0 {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("no memory is attached at %#x: pass the base given to MPI_Win_attach", addr))
	}
	if err := d.publish(wo.w.Rank(), slot, dynEntry{}); err != nil {
		return err
	}
	if e.n > 0 {
		if err := wo.w.Detach(bg, int(e.base)); err != nil {
			return err
		}
	}
	d.mu.Lock()
	d.own[slot] = dynEntry{}
	d.sortSelf()
	d.mu.Unlock()
	return nil
}

// sortSelf rebuilds d.self from d.own. d.mu is held.
func (d *dynDir) sortSelf() {
	d.self = d.self[:0]
	for _, e := range d.own {
		if e.used && e.n > 0 {
			d.self = append(d.self, e)
		}
	}
	sort.Slice(d.self, func(i, j int) bool { return d.self[i].addr < d.self[j].addr })
}

// publish writes entry e of slot into this rank's directory, under its exclusive lock,
// whose Unlock makes it visible to the peers' Gets.
func (d *dynDir) publish(me, slot int, e dynEntry) error {
	if err := d.dir.Lock(bg, window.Exclusive, me, 0); err != nil {
		return err
	}
	l := d.dir.Local()[slot*dirWords : (slot+1)*dirWords]
	if e.n > 0 {
		l[0], l[1], l[2] = e.addr, e.n, e.base
	} else {
		l[0], l[1], l[2] = 0, 0, 0
	}
	return d.dir.Unlock(bg, me)
}

// read reads rank's directory and keeps it.
func (d *dynDir) read(rank int) ([]dynEntry, error) {
	buf := make([]int64, dirSlots*dirWords)
	if err := d.dir.Lock(bg, window.Shared, rank, 0); err != nil {
		return nil, err
	}
	err := d.dir.Get(buf, rank, 0)
	if uerr := d.dir.Unlock(bg, rank); err == nil {
		err = uerr
	}
	if err != nil {
		return nil, err
	}
	var es []dynEntry
	for s := range dirSlots {
		if n := buf[s*dirWords+1]; n > 0 {
			es = append(es, dynEntry{addr: buf[s*dirWords], n: n, base: buf[s*dirWords+2]})
		}
	}
	sort.Slice(es, func(i, j int) bool { return es[i].addr < es[j].addr })
	d.mu.Lock()
	d.peers[rank] = es
	d.mu.Unlock()
	return es, nil
}

// find returns the displacement of address addr in entries es, sorted by address.
func find(es []dynEntry, addr int64) (int, bool) {
	i := sort.Search(len(es), func(i int) bool { return es[i].addr+es[i].n > addr })
	if i < len(es) && es[i].addr <= addr {
		return int(es[i].base + addr - es[i].addr), true
	}
	return 0, false
}

// offset returns the displacement of the window package for address addr at rank.
func (d *dynDir) offset(me, rank int, addr int64) (int, error) {
	d.mu.Lock()
	es := d.peers[rank]
	if rank == me {
		es = d.self
	}
	off, ok := find(es, addr)
	d.mu.Unlock()
	if ok {
		return off, nil
	}
	if rank != me {
		es, err := d.read(rank)
		if err != nil {
			return 0, err
		}
		if off, ok := find(es, addr); ok {
			return off, nil
		}
	}
	return 0, mpiErr(mpi_ERR_RMA_RANGE, fmt.Sprintf("address %#x is in no memory that rank %d attached (MPI_Win_attach)", addr, rank))
}

// targetOff is the displacement in bytes of the window package for target_disp disp at
// rank: disp scaled by rank's displacement unit, or for a dynamic window the place of
// the address disp.
func (wo *win) targetOff(h Win, rank, disp int) (int, error) {
	if wo.w.Flavor() != window.FlavorDynamic {
		return disp * wo.units[rank], nil
	}
	d := dynDirOf(h)
	if d == nil {
		return 0, mpiErr(mpi_ERR_INTERN, fmt.Sprintf("dynamic window %#x has no directory", uint32(h)))
	}
	return d.offset(wo.w.Rank(), rank, int64(disp))
}
