package benchkit

import (
	"net"

	"golang.org/x/sys/unix"
)

// Setsockopt runs set on c's descriptor, if c is a TCP connection (other connections
// are left as they are), and returns set's error.
func Setsockopt(c net.Conn, set func(fd int) error) error {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = set(int(fd)) }); err != nil {
		return err
	}
	return serr
}

// SetCongestion sets c's TCP congestion control (TCP_CONGESTION) to name.
func SetCongestion(c net.Conn, name string) error {
	return Setsockopt(c, func(fd int) error {
		return unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, name)
	})
}
