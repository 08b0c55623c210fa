package sockets

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Abstract Unix socket names have no permissions: any process of the network namespace
// may bind a name first. A listener that finds its name taken names the holder's uid.

// NameHeldError is the error of a listener whose abstract socket name another socket
// holds. Listen("shm", name) returns it (in a *net.OpError); Listen("tcp", addr) returns
// it only when the holder runs as the listener's own uid or root, whose processes this
// user's dialers would trust, and otherwise serves plain TCP.
type NameHeldError struct {
	Name  string // the abstract socket name, without its leading NUL
	UID   int    // the holder's uid; -1 if it could not be found
	PID   int    // the holder's pid (0: unknown)
	Where string // how the holder was found: "SO_PEERCRED" or "/proc"
}

func (e *NameHeldError) Error() string {
	var who string
	switch {
	case e.UID < 0:
		who = "a process this one cannot identify (it accepts no connection; run as root to look it up in /proc)"
	case e.PID > 0:
		who = fmt.Sprintf("uid %d (pid %d)", e.UID, e.PID)
	default:
		who = fmt.Sprintf("uid %d", e.UID)
	}
	if e.UID == os.Geteuid() {
		return fmt.Sprintf("a listener named \"@%s\" already exists in this network namespace, held by %s, this user (pick another name or stop that process)", e.Name, who)
	}
	return fmt.Sprintf("the abstract socket \"@%s\" is held by %s, not by this user (uid %d): pick another name, or have that user stop the process", e.Name, who, os.Geteuid())
}

// trustedHolder reports whether this user's dialers would connect to the holder: it runs
// as this user or root.
func (e *NameHeldError) trustedHolder() bool { return e.UID >= 0 && trustListener(uint32(e.UID)) }

// nameHolder finds who holds the abstract socket name: the credentials of the listener
// that a connect reaches (SO_PEERCRED), else the owner of the socket's inode found
// through /proc/net/unix and /proc/*/fd. It returns nil if no socket holds the name.
func nameHolder(abstractName string) *NameHeldError {
	e := &NameHeldError{Name: abstractName, UID: -1}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err == nil {
		defer unix.Close(fd)
		err = unix.Connect(fd, &unix.SockaddrUnix{Name: "@" + abstractName})
		if err == nil || errors.Is(err, unix.EINPROGRESS) {
			if cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
				e.UID, e.PID, e.Where = int(cred.Uid), int(cred.Pid), "SO_PEERCRED"
				return e
			}
		}
	}
	switch uid, pid, found := procHolder(abstractName); {
	case !found && errors.Is(err, syscall.ECONNREFUSED):
		return nil // nobody holds it (any more)
	case uid >= 0:
		e.UID, e.PID, e.Where = uid, pid, "/proc"
	}
	return e
}

// procHolder looks the name up in /proc/net/unix and returns the uid owning the
// socket's inode and a pid holding it, or -1 when no process's descriptors can be read
// (another user's need root). found reports whether the name is bound at all.
func procHolder(abstractName string) (uid, pid int, found bool) {
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		return -1, 0, false
	}
	defer f.Close()
	inode := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// Num RefCount Protocol Flags Type St Inode Path
		fields := strings.Fields(sc.Text())
		if len(fields) == 8 && fields[7] == "@"+abstractName {
			inode = fields[6]
			break
		}
	}
	if inode == "" {
		return -1, 0, false
	}
	link := "socket:[" + inode + "]"
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, p := range fds {
		if target, err := os.Readlink(p); err != nil || target != link {
			continue
		}
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			continue
		}
		pid, _ := strconv.Atoi(strings.Split(p, "/")[2])
		return int(st.Uid), pid, true
	}
	return -1, 0, true
}

// heldErr explains a failed bind of abstractName: a *NameHeldError when a socket holds
// it, else the bind's error. retry reports that nobody holds the name (any more).
func heldErr(abstractName string, err error) (_ error, retry bool) {
	if !errors.Is(err, syscall.EADDRINUSE) {
		if oe := (*net.OpError)(nil); errors.As(err, &oe) {
			err = oe.Err
		}
		return err, false
	}
	h := nameHolder(abstractName)
	if h == nil {
		return err, true
	}
	return h, false
}
