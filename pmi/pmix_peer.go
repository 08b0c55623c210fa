package pmi

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A TCP socket has no SO_PEERCRED. The kernel still records the owner of every socket,
// which is what SO_PEERCRED would give for a Unix socket. peerTable asks the kernel for
// the one socket at the other end of a loopback connection: a sock_diag query over
// netlink (INET_DIAG) for its four-tuple, a hash lookup in the kernel. /proc/net/tcp
// lists every socket of the host, so a scan of it costs time in proportion to their
// number; the table scans it only where the kernel answers no sock_diag query.

// peerSock is what the kernel says about a connection's peer socket.
type peerSock struct {
	uid   uint32 // the socket's owner
	inode uint32 // the socket's inode: /proc/PID/fd/N of its holders reads socket:[inode]
}

// peerTable looks up the peer sockets of one server's connections. Any goroutine may
// call lookup; one query runs at a time.
type peerTable struct {
	queries atomic.Int64 // sock_diag queries made for connections
	scans   atomic.Int64 // scans of /proc/net/tcp

	mu  sync.Mutex
	fd  int // the NETLINK_SOCK_DIAG socket; -1: scan /proc/net/tcp
	seq uint32
	buf []byte

	why string // why the table scans /proc/net/tcp (set by newPeerTable); "" if it queries
}

// diagSocket opens a NETLINK_SOCK_DIAG socket. A test makes it fail, as a kernel without
// sock_diag does.
var diagSocket = func() (int, error) {
	return unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
}

// newPeerTable opens a sock_diag socket and checks that the kernel answers a query for
// the listener at ln. Without an answer the table scans /proc/net/tcp instead.
func newPeerTable(ln *net.TCPAddr) *peerTable {
	t := &peerTable{fd: -1, buf: make([]byte, 8192)}
	fd, err := diagSocket()
	if err != nil {
		t.why = fmt.Sprintf("the kernel opens no sock_diag socket (%v)", err)
		return t
	}
	tv := unix.NsecToTimeval(int64(time.Second))
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	t.fd = fd
	if _, err := t.query(ln, &net.TCPAddr{IP: net.IPv4zero}); err != nil {
		unix.Close(fd)
		t.fd = -1
		t.why = fmt.Sprintf("the kernel answers no sock_diag query (%v)", err)
	}
	return t
}

// close releases the netlink socket.
func (t *peerTable) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.fd >= 0 {
		unix.Close(t.fd)
		t.fd = -1
	}
}

// diagOK reports whether lookups are sock_diag queries.
func (t *peerTable) diagOK() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.fd >= 0
}

// lookup returns the socket at the other end of the loopback TCP connection c. It fails
// when the peer has closed its socket: no process holds it any more.
func (t *peerTable) lookup(c net.Conn) (peerSock, error) {
	la, ok1 := c.LocalAddr().(*net.TCPAddr)
	ra, ok2 := c.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 || la.IP.To4() == nil || ra.IP.To4() == nil {
		return peerSock{}, fmt.Errorf("not an IPv4 TCP connection")
	}
	if t.diagOK() {
		t.queries.Add(1)
		// The peer's socket: its local address is our remote one, and the other way round.
		return t.query(ra, la)
	}
	t.scans.Add(1)
	return scanProcNetTCP(ra, la)
}

// The layout of the kernel's sock_diag messages for IPv4 TCP (linux/inet_diag.h).
const (
	diagReqLen   = 56 // struct inet_diag_req_v2
	diagMsgLen   = 72 // struct inet_diag_msg
	diagMsgUID   = 64 // offset of idiag_uid in inet_diag_msg
	diagMsgInode = 68 // offset of idiag_inode
	diagSockID   = 4  // offset of the socket id (ports, addresses) in inet_diag_msg
)

// query asks the kernel for the TCP socket whose local address is local and whose
// remote address is remote.
func (t *peerTable) query(local, remote *net.TCPAddr) (peerSock, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.fd < 0 {
		return peerSock{}, fmt.Errorf("sock_diag socket closed")
	}
	t.seq++
	req := make([]byte, unix.SizeofNlMsghdr+diagReqLen)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST)
	binary.NativeEndian.PutUint32(req[8:], t.seq)
	r := req[unix.SizeofNlMsghdr:]
	r[0], r[1] = unix.AF_INET, unix.IPPROTO_TCP
	binary.NativeEndian.PutUint32(r[4:], 0xffffffff) // every state
	id := r[8:]
	putSockID(id, local, remote)
	binary.NativeEndian.PutUint32(id[40:], 0xffffffff) // no cookie
	binary.NativeEndian.PutUint32(id[44:], 0xffffffff)
	if err := unix.Sendto(t.fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return peerSock{}, fmt.Errorf("sock_diag query: %w", err)
	}
	for {
		n, _, err := unix.Recvfrom(t.fd, t.buf, 0)
		if err != nil {
			return peerSock{}, fmt.Errorf("sock_diag answer: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(t.buf[:n])
		if err != nil {
			return peerSock{}, fmt.Errorf("sock_diag answer: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Seq != t.seq {
				continue // the answer to an earlier query that timed out
			}
			return parseDiagAnswer(m, id)
		}
	}
}

// putSockID writes the socket id of inet_diag_sockid: the ports and the addresses in
// network byte order, then the interface (0).
func putSockID(id []byte, local, remote *net.TCPAddr) {
	binary.BigEndian.PutUint16(id[0:], uint16(local.Port))
	binary.BigEndian.PutUint16(id[2:], uint16(remote.Port))
	copy(id[4:8], local.IP.To4())
	copy(id[20:24], remote.IP.To4())
}

// parseDiagAnswer reads the kernel's answer to a query for the socket id want.
func parseDiagAnswer(m syscall.NetlinkMessage, want []byte) (peerSock, error) {
	switch m.Header.Type {
	case unix.NLMSG_ERROR:
		if len(m.Data) >= 4 {
			if errno := -int32(binary.NativeEndian.Uint32(m.Data)); errno > 0 {
				if unix.Errno(errno) == unix.ENOENT {
					return peerSock{}, fmt.Errorf("no such socket: the peer has closed it")
				}
				return peerSock{}, fmt.Errorf("sock_diag: %w", unix.Errno(errno))
			}
		}
		return peerSock{}, fmt.Errorf("sock_diag: an error message without an error")
	case unix.SOCK_DIAG_BY_FAMILY:
	default:
		return peerSock{}, fmt.Errorf("sock_diag: answer of type %d", m.Header.Type)
	}
	if len(m.Data) < diagMsgLen || !bytes.Equal(m.Data[diagSockID:diagSockID+36], want[:36]) {
		return peerSock{}, fmt.Errorf("sock_diag: an answer of %d bytes for another socket", len(m.Data))
	}
	p := peerSock{uid: binary.NativeEndian.Uint32(m.Data[diagMsgUID:]), inode: binary.NativeEndian.Uint32(m.Data[diagMsgInode:])}
	if p.inode == 0 {
		// A socket in TIME_WAIT, or one its process has closed: the kernel reports uid 0.
		return peerSock{}, fmt.Errorf("the peer has closed its socket")
	}
	return p, nil
}

// scanProcNetTCP finds the socket local -> remote in /proc/net/tcp.
func scanProcNetTCP(local, remote *net.TCPAddr) (peerSock, error) {
	l, r := procNetAddr(local), procNetAddr(remote)
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return peerSock{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 || fs[1] != l || fs[2] != r {
			continue
		}
		uid, err1 := strconv.ParseUint(fs[7], 10, 32)
		inode, err2 := strconv.ParseUint(fs[9], 10, 32)
		if err1 != nil || err2 != nil {
			return peerSock{}, fmt.Errorf("/proc/net/tcp: uid %q, inode %q", fs[7], fs[9])
		}
		if inode == 0 {
			return peerSock{}, fmt.Errorf("the peer has closed its socket")
		}
		return peerSock{uid: uint32(uid), inode: uint32(inode)}, nil
	}
	if err := sc.Err(); err != nil {
		return peerSock{}, err
	}
	return peerSock{}, fmt.Errorf("no socket %s -> %s in /proc/net/tcp (the peer is gone, or in another network namespace)", local, remote)
}

// procNetAddr writes a as /proc/net/tcp does: the IPv4 address as a host-order 32-bit
// number in hex, a colon, the port in hex.
func procNetAddr(a *net.TCPAddr) string {
	ip := a.IP.To4()
	return fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], a.Port)
}

// socketHolder returns the child of this process that holds the socket inode among its
// descriptors, or 0 when none does. The ranks of a job are the children of the agent
// that serves them, so a connection from a rank's own process has a holder here. It
// costs a look at the descriptors of every child.
func socketHolder(inode uint32) int {
	if inode == 0 {
		return 0
	}
	want := "socket:[" + strconv.FormatUint(uint64(inode), 10) + "]"
	for _, pid := range childPIDs() {
		if holds(pid, want) {
			return pid
		}
	}
	return 0
}

// childPIDs returns the children of this process: each thread's
// /proc/self/task/TID/children, or, on a kernel without those files, the processes
// whose parent is this one.
func childPIDs() []int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil
	}
	var pids []int
	read := 0
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/children")
		if err != nil {
			continue
		}
		read++
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	if read > 0 {
		return pids
	}
	return childPIDsByParent()
}

// childPIDsByParent scans /proc for the processes whose parent is this process.
func childPIDsByParent() []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	self := strconv.Itoa(os.Getpid())
	var pids []int
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + n + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) >= 2 && f[1] == self {
			pids = append(pids, pid)
		}
	}
	return pids
}

// holds reports whether process pid has a descriptor whose link reads want.
func holds(pid int, want string) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	d, err := os.Open(dir)
	if err != nil {
		return false
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		if l, err := os.Readlink(dir + n); err == nil && l == want {
			return true
		}
	}
	return false
}
