package pmi

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// tcpPeerUID returns the user that owns the other end of a loopback TCP connection, as
// the kernel records it in /proc/net/tcp. A TCP socket has no SO_PEERCRED; the owner of
// the peer's socket is what SO_PEERCRED would give for a Unix socket.
func tcpPeerUID(c net.Conn) (uint32, error) {
	la, ok1 := c.LocalAddr().(*net.TCPAddr)
	ra, ok2 := c.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 || la.IP.To4() == nil || ra.IP.To4() == nil {
		return 0, fmt.Errorf("not an IPv4 TCP connection")
	}
	// The peer's row: its local address is our remote one, and the other way round.
	local, remote := procNetAddr(ra), procNetAddr(la)
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 8 || fs[1] != local || fs[2] != remote {
			continue
		}
		uid, err := strconv.ParseUint(fs[7], 10, 32)
		if err != nil {
			return 0, fmt.Errorf("/proc/net/tcp: uid %q", fs[7])
		}
		return uint32(uid), nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no socket %s -> %s in /proc/net/tcp (the peer is gone, or in another network namespace)", ra, la)
}

// procNetAddr writes a as /proc/net/tcp does: the IPv4 address as a host-order 32-bit
// number in hex, a colon, the port in hex.
func procNetAddr(a *net.TCPAddr) string {
	ip := a.IP.To4()
	return fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], a.Port)
}
