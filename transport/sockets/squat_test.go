package sockets

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/tests/sysuser"
)

// Environment of TestSquatterHelper's process: abstract socket names, comma-separated,
// to bind and listen on, and to bind only.
const (
	envSquatListen = "SOCKETS_TEST_SQUAT_LISTEN"
	envSquatBind   = "SOCKETS_TEST_SQUAT_BIND"
)

// squatUser is the user that TestSquatted creates to run its squatter.
const squatUser = "gormasquat"

// TestSquatterHelper is the squatting process of TestSquatted (it does nothing in a
// normal run). It binds the names of $SOCKETS_TEST_SQUAT_LISTEN and listens on them,
// binds those of $SOCKETS_TEST_SQUAT_BIND without listening, prints "bound", and holds
// them until its stdin closes.
func TestSquatterHelper(t *testing.T) {
	listenNames, bindNames := os.Getenv(envSquatListen), os.Getenv(envSquatBind)
	if listenNames == "" && bindNames == "" {
		t.Skip("the squatting process of TestSquatted")
	}
	for _, name := range strings.Split(listenNames, ",") {
		l, err := net.Listen("unix", "@"+name)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
	}
	for _, name := range strings.Split(bindNames, ",") {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		if err := unix.Bind(fd, &unix.SockaddrUnix{Name: "@" + name}); err != nil {
			t.Fatalf("bind %q: %v", name, err)
		}
	}
	fmt.Println("bound")
	io.Copy(io.Discard, os.Stdin)
}

// squatUID returns the uid and gid of squatUser, creating the user if need be. It skips
// the test unless it runs as root.
func squatUID(t *testing.T) (uid, gid uint32) {
	u, g := sysuser.IDs(t, squatUser, "runs a squatter as another uid")
	return uint32(u), uint32(g)
}

// squat runs TestSquatterHelper as squatUser, holding the abstract socket names listen
// (listening) and bind (bound only) until the test ends. It returns the squatter's uid.
func squat(t *testing.T, listen, bind []string) uint32 {
	uid, gid := squatUID(t)
	// The test binary sits in a directory only root may enter: the squatter runs a copy.
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "squatter.test")
	exe, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, exe, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestSquatterHelper$", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), envSquatListen+"="+strings.Join(listen, ","), envSquatBind+"="+strings.Join(bind, ","))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the squatter as uid %d: %v", uid, err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	out := bufio.NewScanner(stdout)
	if !out.Scan() || out.Text() != "bound" {
		t.Fatalf("the squatter (uid %d) did not bind its names: %q %v", uid, out.Text(), out.Err())
	}
	return uid
}

// freePort returns a TCP port of 127.0.0.1 that nothing listens on.
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestSquatted: another user's process holds the abstract names of a "tcp" listener and
// of two "shm" listeners (one listening, one only bound). The "tcp" listener serves plain
// TCP and logs the squatter's uid; the "shm" listeners fail with an error naming it.
func TestSquatted(t *testing.T) {
	port := freePort(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	tcpName := upgradeName(net.IPv4(127, 0, 0, 1), port)
	listening, bound := uniqueName(t), uniqueName(t)
	uid := squat(t, []string{tcpName, abstractPrefix + listening}, []string{abstractPrefix + bound})
	wantUID := fmt.Sprintf("uid %d", uid)

	t.Run("tcp", func(t *testing.T) {
		var logged bytes.Buffer
		lc := ListenConfig{ErrorLog: log.New(&logged, "", 0)}
		l, err := lc.Listen(t.Context(), "tcp", addr)
		if err != nil {
			t.Fatalf("Listen(tcp, %s) with its shm name squatted by %s: %v", addr, wantUID, err)
		}
		defer l.Close()
		go echo(l)
		if !strings.Contains(logged.String(), wantUID) || !strings.Contains(logged.String(), "plain TCP") {
			t.Errorf("the listener logged %q; want a line naming %s and plain TCP", logged.String(), wantUID)
		}
		t.Logf("logged: %s", strings.TrimSpace(logged.String()))
		c, err := Dial("tcp", addr)
		if err != nil {
			t.Fatalf("Dial(tcp, %s): %v", addr, err)
		}
		if _, ok := c.(*net.TCPConn); !ok {
			t.Errorf("Dial(tcp, %s) returned a %T; want a *net.TCPConn", addr, c)
		}
		msg := []byte("plain TCP beside a squatter")
		if got := echoBack(t, c, msg); !bytes.Equal(got, msg) {
			t.Fatalf("echo over TCP: %q, want %q", got, msg)
		}
	})
	for _, tc := range []struct{ name, how string }{{listening, "listening"}, {bound, "bound only"}} {
		t.Run("shm "+tc.how, func(t *testing.T) {
			l, err := Listen("shm", tc.name)
			if err == nil {
				l.Close()
				t.Fatalf("Listen(shm, %q) succeeded on a name %s holds", tc.name, wantUID)
			}
			var held *NameHeldError
			if !errors.As(err, &held) || held.UID != int(uid) || !strings.Contains(err.Error(), wantUID) {
				t.Fatalf("Listen(shm, %q) on a name %s holds: %v; want a *NameHeldError naming it", tc.name, wantUID, err)
			}
			t.Logf("%v (found by %s)", err, held.Where)
		})
	}
}
