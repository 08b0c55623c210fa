//go:build cgo

package mpich

// #include <stdlib.h>
import "C"

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"unsafe"
)

// An info is an MPI_Info: keys and their values, in the order the keys were first set
// (MPI_Info_get_nthkey's order). The library reads no hint; MPI allows that.
type info struct {
	mu   sync.Mutex
	keys []string
	vals map[string]string
}

var (
	infos = newTable[*info](kindInfo)
	// envInfo is MPI_INFO_ENV, made at its first use.
	envOnce sync.Once
	envInfo *info
)

func newInfo() *info { return &info{vals: map[string]string{}} }

// set sets key to val.
func (in *info) set(key, val string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if _, ok := in.vals[key]; !ok {
		in.keys = append(in.keys, key)
	}
	in.vals[key] = val
}

// get returns key's value.
func (in *info) get(key string) (string, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	v, ok := in.vals[key]
	return v, ok
}

// dup returns a copy of in.
func (in *info) dup() *info {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := &info{keys: append([]string(nil), in.keys...), vals: make(map[string]string, len(in.vals))}
	for k, v := range in.vals {
		out.vals[k] = v
	}
	return out
}

// infoOf returns the info of handle h, MPI_INFO_ENV included.
func infoOf(h Info) (*info, error) {
	if h == mpi_INFO_ENV {
		envOnce.Do(func() { envInfo = envOf(os.Args) })
		return envInfo, nil
	}
	if in, ok := infos.get(int32(h)); ok {
		return in, nil
	}
	return nil, errHandle("info", int32(h))
}

// userInfoOf is infoOf for the calls that change an info: MPI_INFO_ENV is read-only.
func userInfoOf(h Info) (*info, error) {
	if h == mpi_INFO_ENV {
		return nil, mpiErr(mpi_ERR_INFO, "MPI_INFO_ENV is predefined and cannot be changed or freed: change a copy (MPI_Info_dup)")
	}
	return infoOf(h)
}

// envOf is the info of MPI_INFO_ENV and MPI_Info_create_env for a program started with
// args: the reserved keys "command" and "argv", and "maxprocs", "wdir" and
// "thread_level" once known.
func envOf(args []string) *info {
	in := newInfo()
	if len(args) > 0 {
		in.set("command", args[0])
		if len(args) > 1 {
			in.set("argv", strings.Join(args[1:], " "))
		}
	}
	if w := world; w != nil {
		in.set("maxprocs", fmt.Sprint(w.Size()))
	}
	if wd, err := os.Getwd(); err == nil {
		in.set("wdir", wd)
	}
	in.set("thread_level", "MPI_THREAD_MULTIPLE")
	return in
}

// infoKey reads and checks a key argument.
func infoKey(key *byte) (string, error) {
	if key == nil {
		return "", mpiErr(mpi_ERR_ARG, "the key is NULL")
	}
	k := C.GoString((*C.char)(unsafe.Pointer(key)))
	if k == "" || len(k) > mpi_MAX_INFO_KEY {
		return "", mpiErr(mpi_ERR_INFO_KEY, fmt.Sprintf("key %q is empty or longer than MPI_MAX_INFO_KEY (%d)", k, mpi_MAX_INFO_KEY))
	}
	return k, nil
}

// doInfoCreate is MPI_Info_create.
func doInfoCreate(h *Info) error {
	*h = Info(infos.add(newInfo()))
	return nil
}

// doInfoSet is MPI_Info_set.
func doInfoSet(h Info, key, value *byte) error {
	in, err := userInfoOf(h)
	if err != nil {
		return err
	}
	k, err := infoKey(key)
	if err != nil {
		return err
	}
	if value == nil {
		return mpiErr(mpi_ERR_ARG, "the value is NULL")
	}
	v := C.GoString((*C.char)(unsafe.Pointer(value)))
	if len(v) > mpi_MAX_INFO_VAL {
		return mpiErr(mpi_ERR_INFO_VALUE, fmt.Sprintf("the value of key %q has %d characters, more than MPI_MAX_INFO_VAL (%d)", k, len(v), mpi_MAX_INFO_VAL))
	}
	in.set(k, v)
	return nil
}

// doInfoFree is MPI_Info_free.
func doInfoFree(h *Info) error {
	if _, err := userInfoOf(*h); err != nil {
		return err
	}
	if _, ok := infos.del(int32(*h)); !ok {
		return errHandle("info", int32(*h))
	}
	*h = mpi_INFO_NULL
	return nil
}

// doInfoDelete is MPI_Info_delete.
func doInfoDelete(h Info, key *byte) error {
	in, err := userInfoOf(h)
	if err != nil {
		return err
	}
	k, err := infoKey(key)
	if err != nil {
		return err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if _, ok := in.vals[k]; !ok {
		return mpiErr(mpi_ERR_INFO_NOKEY, fmt.Sprintf("key %q is not set in info %#x", k, uint32(h)))
	}
	delete(in.vals, k)
	for i, x := range in.keys {
		if x == k {
			in.keys = append(in.keys[:i], in.keys[i+1:]...)
			break
		}
	}
	return nil
}

// doInfoDup is MPI_Info_dup.
func doInfoDup(h Info, out *Info) error {
	in, err := infoOf(h)
	if err != nil {
		return err
	}
	*out = Info(infos.add(in.dup()))
	return nil
}

// doInfoGet is MPI_Info_get: the value, cut to valuelen characters as MPI says.
func doInfoGet(h Info, key *byte, valuelen int, value *byte, flag *int32) error {
	in, err := infoOf(h)
	if err != nil {
		return err
	}
	k, err := infoKey(key)
	if err != nil {
		return err
	}
	if valuelen < 0 {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("valuelen %d is negative", valuelen))
	}
	v, ok := in.get(k)
	*flag = b2i(ok)
	if ok {
		if value == nil {
			return mpiErr(mpi_ERR_ARG, "the value buffer is NULL")
		}
		putString(value, valuelen+1, v)
	}
	return nil
}

// doInfoGetNkeys is MPI_Info_get_nkeys.
func doInfoGetNkeys(h Info, n *int32) error {
	in, err := infoOf(h)
	if err != nil {
		return err
	}
	in.mu.Lock()
	*n = int32(len(in.keys))
	in.mu.Unlock()
	return nil
}

// doInfoGetNthkey is MPI_Info_get_nthkey.
func doInfoGetNthkey(h Info, n int, key *byte) error {
	in, err := infoOf(h)
	if err != nil {
		return err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if n < 0 || n >= len(in.keys) {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("key number %d is not in [0, %d): the info has %d keys", n, len(in.keys), len(in.keys)))
	}
	putString(key, mpi_MAX_INFO_KEY+1, in.keys[n])
	return nil
}

// doInfoGetValuelen is MPI_Info_get_valuelen.
func doInfoGetValuelen(h Info, key *byte, n, flag *int32) error {
	in, err := infoOf(h)
	if err != nil {
		return err
	}
	k, err := infoKey(key)
	if err != nil {
		return err
	}
	v, ok := in.get(k)
	*flag = b2i(ok)
	if ok {
		*n = int32(len(v))
	}
	return nil
}

// doInfoGetString is MPI_Info_get_string: the value cut to *buflen bytes with its NUL
// (none when *buflen is 0); *buflen becomes the value's length plus one.
func doInfoGetString(h Info, key *byte, buflen *int32, value *byte, flag *int32) error {
	in, err := infoOf(h)
	if err != nil {
		return err
	}
	k, err := infoKey(key)
	if err != nil {
		return err
	}
	if *buflen < 0 {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("buflen %d is negative", *buflen))
	}
	v, ok := in.get(k)
	*flag = b2i(ok)
	if ok {
		if *buflen > 0 {
			if value == nil {
				return mpiErr(mpi_ERR_ARG, "the value buffer is NULL")
			}
			putString(value, int(*buflen), v)
		}
		*buflen = int32(len(v) + 1)
	}
	return nil
}

// doInfoCreateEnv is MPI_Info_create_env: MPI_INFO_ENV's keys for the arguments given
// (argc 0 or argv NULL: the process's own).
func doInfoCreateEnv(argc int, argv unsafe.Pointer, h *Info) error {
	args := os.Args
	if argc > 0 && argv != nil {
		args = make([]string, argc)
		for i, p := range unsafe.Slice((**C.char)(argv), argc) {
			if p == nil {
				return mpiErr(mpi_ERR_ARG, fmt.Sprintf("argv[%d] is NULL, below argc %d", i, argc))
			}
			args[i] = C.GoString(p)
		}
	} else if argc < 0 {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("argc %d is negative", argc))
	}
	*h = Info(infos.add(envOf(args)))
	return nil
}
