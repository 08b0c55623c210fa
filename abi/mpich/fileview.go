//go:build cgo

package mpich

// #include <stdlib.h>
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/gorma-hpc/gorma/datatype"
)

// A view is what a rank sees of a file: from byte disp on, the filetype tiled at
// every extent, and of each tile only its data, in etypes. Positions and offsets of
// the data calls count etypes of this data stream.
type view struct {
	disp         int64
	etype, ftype Datatype // the program's handles, or this library's copies of derived ones
	esize        int64
	blocks       []datatype.Block // the filetype's data runs within a tile, in file order
	size, extent int64            // the filetype's data bytes and extent: a tile
	own          []Datatype       // copies of derived datatypes that the view holds
}

// byteView is the view a file has at its open: bytes from offset 0.
func byteView() view {
	return view{etype: mpi_BYTE, ftype: mpi_BYTE, esize: 1, blocks: []datatype.Block{{Off: 0, Len: 1}}, size: 1, extent: 1}
}

// release frees the view's copies of derived datatypes.
func (v *view) release() {
	for i := range v.own {
		_ = doTypeFree(&v.own[i])
	}
	v.own = nil
}

// hold returns d, or for a derived datatype a copy that the view keeps: the program
// may free its handle while the view lives.
func (v *view) hold(d Datatype) (Datatype, error) {
	if _, ok := types.get(int32(d)); !ok {
		return d, nil
	}
	var c Datatype
	if err := doTypeDup(d, &c); err != nil {
		return 0, err
	}
	v.own = append(v.own, c)
	return c, nil
}

// newView checks and builds the view of disp, etype and filetype.
func newView(disp int64, etype, ftype Datatype) (view, error) {
	et, err := typeOf(etype)
	if err != nil {
		return view{}, err
	}
	ft, err := typeOf(ftype)
	if err != nil {
		return view{}, err
	}
	if disp < 0 {
		return view{}, mpiErr(mpi_ERR_ARG, fmt.Sprintf("displacement %d is negative", disp))
	}
	if et.size == 0 || ft.size == 0 {
		return view{}, mpiErr(mpi_ERR_TYPE, "the etype and the filetype must hold data: their size is 0")
	}
	if ft.size%et.size != 0 {
		return view{}, mpiErr(mpi_ERR_ARG, fmt.Sprintf("the filetype's size %d is not a multiple of the etype's %d: build the filetype from etypes", ft.size, et.size))
	}
	blocks := ft.layout.Blocks()
	end := 0
	for _, b := range blocks {
		if b.Off < end {
			return view{}, mpiErr(mpi_ERR_IO, "the filetype's displacements must be non-negative and increasing, as MPI requires of a filetype")
		}
		end = b.Off + b.Len
	}
	if end > ft.extent && ft.extent > 0 {
		return view{}, mpiErr(mpi_ERR_TYPE, fmt.Sprintf("the filetype's data reaches byte %d, past its extent %d: tiles would overlap", end, ft.extent))
	}
	if ft.extent <= 0 {
		return view{}, mpiErr(mpi_ERR_TYPE, fmt.Sprintf("the filetype's extent %d is not positive", ft.extent))
	}
	v := view{disp: disp, esize: int64(et.size), blocks: blocks, size: int64(ft.size), extent: int64(ft.extent)}
	if v.etype, err = v.hold(etype); err == nil {
		v.ftype, err = v.hold(ftype)
	}
	if err != nil {
		v.release()
		return view{}, err
	}
	return v, nil
}

// A run is a contiguous piece of the file: n bytes at byte offset off.
type run struct{ off, n int64 }

// runs maps n bytes of the data stream from byte pos on to the file's byte runs,
// adjacent runs merged.
func (v *view) runs(pos, n int64) []run {
	var out []run
	add := func(off, k int64) {
		if l := len(out); l > 0 && out[l-1].off+out[l-1].n == off {
			out[l-1].n += k
			return
		}
		out = append(out, run{off, k})
	}
	tile, in := pos/v.size, pos%v.size
	for n > 0 {
		base := v.disp + tile*v.extent
		for _, b := range v.blocks {
			bl := int64(b.Len)
			if in >= bl {
				in -= bl
				continue
			}
			k := min(bl-in, n)
			add(base+int64(b.Off)+in, k)
			n -= k
			in = 0
			if n == 0 {
				break
			}
		}
		tile++
	}
	return out
}

// dataBelow is the data stream's bytes that lie below byte offset eof of the file.
func (v *view) dataBelow(eof int64) int64 {
	if eof <= v.disp {
		return 0
	}
	rel := eof - v.disp
	tiles := rel / v.extent
	rest := rel - tiles*v.extent
	n := tiles * v.size
	for _, b := range v.blocks {
		n += min(max(rest-int64(b.Off), 0), int64(b.Len))
	}
	return n
}

// doFileSetView is MPI_File_set_view, collective: every rank passes the same etype
// size and datarep. Both file pointers go back to 0. Only the "native" data
// representation is supported.
func doFileSetView(fh unsafe.Pointer, disp int, etype, ftype Datatype, datarep *byte, i Info) error {
	f, err := fileOf(fh)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var v view
	err = checkDatarep(datarep)
	if err == nil {
		_, err = hintsOfInfo(i)
	}
	if err == nil && f.split != nil {
		err = mpiErr(mpi_ERR_IO, "a split collective is begun on the file and not ended: call its _end first")
	}
	d := int64(disp)
	if err == nil && disp == displacementCurrent {
		if f.amode&modeSequential == 0 {
			err = mpiErr(mpi_ERR_ARG, "MPI_DISPLACEMENT_CURRENT needs a file opened with MPI_MODE_SEQUENTIAL")
		} else {
			var sh int64
			if sh, err = f.getShared(); err == nil {
				d = f.view.disp + f.view.byteOffset(sh)
			}
		}
	}
	if err == nil {
		v, err = newView(d, etype, ftype)
	}
	es := v.esize
	if err := agree(f.w, err, es, "the etype's size", mpi_ERR_NOT_SAME); err != nil {
		v.release()
		return err
	}
	f.view.release()
	f.view, f.pos = v, 0
	if f.w.Rank() == 0 {
		err = f.putShared(0)
	}
	return agree(f.w, err, 0, "", 0)
}

// byteOffset is the file's byte offset, less disp, of etype offset off of the view.
func (v *view) byteOffset(off int64) int64 {
	r := v.runs(off*v.esize, 1)
	return r[0].off - v.disp
}

// checkDatarep accepts "native", the representation gorma's files use.
func checkDatarep(datarep *byte) error {
	if datarep == nil {
		return mpiErr(mpi_ERR_ARG, "the data representation is NULL: pass \"native\"")
	}
	s := C.GoString((*C.char)(unsafe.Pointer(datarep)))
	if s != "native" {
		return mpiErr(mpi_ERR_UNSUPPORTED_DATAREP, fmt.Sprintf("data representation %q is not supported: gorma's MPI-IO reads and writes \"native\" only", s))
	}
	return nil
}

// doFileGetView is MPI_File_get_view. A derived etype or filetype is returned as a
// new handle, which the program frees.
func doFileGetView(fh unsafe.Pointer, disp *int64, etype, ftype *Datatype, datarep *byte) error {
	f, err := fileOf(fh)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var e, t Datatype
	if e, err = dupDerived(f.view.etype); err != nil {
		return err
	}
	if t, err = dupDerived(f.view.ftype); err != nil {
		return err
	}
	*disp, *etype, *ftype = f.view.disp, e, t
	putString(datarep, maxDatarep, "native")
	return nil
}

// dupDerived returns d, or a copy of a derived d.
func dupDerived(d Datatype) (Datatype, error) {
	if _, ok := types.get(int32(d)); !ok {
		return d, nil
	}
	var c Datatype
	err := doTypeDup(d, &c)
	return c, err
}

// doFileGetTypeExtent is MPI_File_get_type_extent: in "native", the datatype's
// extent.
func doFileGetTypeExtent(fh unsafe.Pointer, d Datatype, extent *int64) error {
	if _, err := fileOf(fh); err != nil {
		return err
	}
	t, err := anyTypeOf(d)
	if err != nil {
		return err
	}
	*extent = int64(t.extent)
	return nil
}

// doFileGetTypeExtentC is MPI_File_get_type_extent_c.
func doFileGetTypeExtentC(fh unsafe.Pointer, d Datatype, extent *int64) error {
	return doFileGetTypeExtent(fh, d, extent)
}

// doFileGetByteOffset is MPI_File_get_byte_offset: the absolute byte offset of etype
// offset off of the view.
func doFileGetByteOffset(fh unsafe.Pointer, off int, disp *int64) error {
	f, err := fileOf(fh)
	if err != nil {
		return err
	}
	if off < 0 {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("offset %d is negative", off))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	*disp = f.view.disp + f.view.byteOffset(int64(off))
	return nil
}

// seekTo is where a seek of off from whence goes, in etypes, from pointer cur.
func (f *file) seekTo(cur, off int64, whence int) (int64, error) {
	var p int64
	switch whence {
	case seekSet:
		p = off
	case seekCur:
		p = cur + off
	case seekEnd:
		fi, err := f.f.Stat()
		if err != nil {
			return 0, ioErr("stat", f.path, err)
		}
		p = f.view.dataBelow(fi.Size())/f.view.esize + off
	default:
		return 0, mpiErr(mpi_ERR_ARG, fmt.Sprintf("whence %d is not MPI_SEEK_SET, MPI_SEEK_CUR or MPI_SEEK_END", whence))
	}
	if p < 0 {
		return 0, mpiErr(mpi_ERR_ARG, fmt.Sprintf("the seek reaches offset %d, below the view's start", p))
	}
	return p, nil
}

// doFileSeek is MPI_File_seek: the individual file pointer moves.
func doFileSeek(fh unsafe.Pointer, off, whence int) error {
	f, err := fileOf(fh)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.individual(); err != nil {
		return err
	}
	p, err := f.seekTo(f.pos, int64(off), whence)
	if err != nil {
		return err
	}
	f.pos = p
	return nil
}

// doFileGetPosition is MPI_File_get_position: the individual file pointer, in etypes.
func doFileGetPosition(fh unsafe.Pointer, off *int64) error {
	f, err := fileOf(fh)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.individual(); err != nil {
		return err
	}
	*off = f.pos
	return nil
}
