package main

import (
	"errors"
	"fmt"
	goruntime "runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// refuseCMA installs a seccomp filter on every thread of the process (threads made
// later inherit it) under which process_vm_readv fails with EPERM and every other
// system call runs. It checks the filter by reading this process's own memory that way.
func refuseCMA() error {
	arch, ok := map[string]uint32{"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64}[goruntime.GOARCH]
	if !ok {
		return fmt.Errorf("no audit arch for %s", goruntime.GOARCH)
	}
	// seccomp_data: nr at offset 0, arch at offset 4.
	filter := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 4},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: arch, Jt: 0, Jf: 3},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_PROCESS_VM_READV, Jt: 0, Jf: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("PR_SET_NO_NEW_PRIVS: %w", err)
	}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog))); e != 0 {
		return fmt.Errorf("seccomp: %w", e)
	}
	var probe, got [8]byte
	probe[0] = 1
	local := []unix.Iovec{{Base: &got[0]}}
	local[0].SetLen(len(got))
	remote := []unix.RemoteIovec{{Base: uintptr(unsafe.Pointer(&probe[0])), Len: len(probe)}}
	if _, err := unix.ProcessVMReadv(unix.Getpid(), local, remote, 0); !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("process_vm_readv of this process under the filter: %v, want EPERM", err)
	}
	return nil
}
