package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// File is a file being written under a temporary name in its folder. Close gives it its
// name; Abort removes it.
type File struct {
	*os.File
	path string
}

// Create starts the file path with permissions perm. The caller writes it through the
// returned File and must call Close or Abort.
func Create(path string, perm fs.FileMode) (*File, error) {
	dir, base := filepath.Split(path)
	for range 100 {
		// O_EXCL: the name is new, so no link stands there; the umask applies to perm.
		tmp := filepath.Join(dir, "."+base+".tmp-"+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "create", Path: path, Err: unwrapPath(err)}
		}
		return &File{File: f, path: path}, nil
	}
	return nil, &fs.PathError{Op: "create", Path: path, Err: fs.ErrExist}
}

// Close closes the file and renames it over its name. On failure the temporary file is
// removed and nothing is left at the name that was not there before.
func (f *File) Close() error {
	tmp := f.File.Name()
	if err := f.File.Close(); err != nil {
		os.Remove(tmp)
		return &fs.PathError{Op: "close", Path: f.path, Err: unwrapPath(err)}
	}
	if err := os.Rename(tmp, f.path); err != nil {
		os.Remove(tmp)
		return &fs.PathError{Op: "rename", Path: f.path, Err: unwrapPath(err)}
	}
	return nil
}

// Abort closes the file and removes it.
func (f *File) Abort() {
	f.File.Close()
	os.Remove(f.File.Name())
}

// Name returns the name the file takes at Close.
func (f *File) Name() string { return f.path }

// WriteFile writes data to the file path, as os.WriteFile does, through Create.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return &fs.PathError{Op: "write", Path: path, Err: unwrapPath(err)}
	}
	return f.Close()
}

// Check reports why a file or folder written at path, or under it, could be redirected
// or replaced by another user than this process's (and root), or nil. It refuses:
//   - a link that another user made, anywhere on the path;
//   - a folder on the path (after links) that another user owns, or whose entries users
//     other than its owner may replace: writable by its group or by others, without the
//     sticky bit;
//   - path itself when another user owns it.
//
// The part of path that does not exist yet is not checked: this process creates it.
func Check(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	me := uint32(os.Geteuid())
	cur := "/"
	if err := checkFolder(cur, me); err != nil {
		return err
	}
	rest := splitPath(abs)
	for i, name := range rest {
		next := filepath.Join(cur, name)
		fi, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil
		case err != nil:
			return fmt.Errorf("%s cannot be read (%v)", next, unwrapPath(err))
		}
		last := i == len(rest)-1
		if fi.Mode()&fs.ModeSymlink != 0 {
			if o := owner(fi); o != me && o != 0 {
				return fmt.Errorf("%s is a link that %s made; name a path without another user's links", next, who(o))
			}
			target, err := filepath.EvalSymlinks(next)
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%s is a link to nothing; name the file itself", next)
			}
			if err != nil {
				return fmt.Errorf("%s cannot be followed (%v)", next, unwrapPath(err))
			}
			if err := checkResolved(target, me); err != nil {
				return err
			}
			cur = target
			continue
		}
		if fi.IsDir() {
			if err := checkFolder(next, me); err != nil {
				return err
			}
		} else if !last {
			return fmt.Errorf("%s is a file, not a folder; name a path that is not under a file", next)
		} else if o := owner(fi); o != me && o != 0 {
			return fmt.Errorf("%s belongs to %s; name a file of yours or a new one", next, who(o))
		}
		cur = next
	}
	return nil
}

// checkResolved checks every folder of path, which holds no links, as Check does.
func checkResolved(path string, me uint32) error {
	cur := "/"
	for _, name := range splitPath(path) {
		cur = filepath.Join(cur, name)
		fi, err := os.Lstat(cur)
		if err != nil {
			return fmt.Errorf("%s cannot be read (%v)", cur, unwrapPath(err))
		}
		if fi.IsDir() {
			if err := checkFolder(cur, me); err != nil {
				return err
			}
		} else if o := owner(fi); o != me && o != 0 {
			return fmt.Errorf("%s belongs to %s; name a file of yours or a new one", cur, who(o))
		}
	}
	return nil
}

// checkFolder reports why the entries of the folder dir could be replaced by a user
// other than me and root, or nil.
func checkFolder(dir string, me uint32) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("%s cannot be read (%v)", dir, unwrapPath(err))
	}
	if o := owner(fi); o != me && o != 0 {
		return fmt.Errorf("the folder %s belongs to %s, who may replace what is written there; name a folder of yours", dir, who(o))
	}
	if m := fi.Mode(); m.Perm()&0o022 != 0 && m&fs.ModeSticky == 0 {
		return fmt.Errorf("the folder %s may be changed by users other than its owner (mode %04o, no sticky bit); name a folder only its owner can write, or set its sticky bit (chmod +t)", dir, m.Perm())
	}
	return nil
}

// splitPath returns the names of the clean absolute path p, from the root down.
func splitPath(p string) []string {
	var names []string
	for p != "/" && p != "." && p != "" {
		names = append([]string{filepath.Base(p)}, names...)
		p = filepath.Dir(p)
	}
	return names
}

// owner returns the uid that owns fi's file.
func owner(fi fs.FileInfo) uint32 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Uid
	}
	return 0
}

// who names the user uid: "user NAME (uid N)", or "uid N" without an account.
func who(uid uint32) string {
	id := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(id); err == nil {
		return "user " + u.Username + " (uid " + id + ")"
	}
	return "uid " + id
}

// unwrapPath returns the error inside a *fs.PathError (or *os.LinkError), whose path
// names the temporary file rather than the caller's.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
