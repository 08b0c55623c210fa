package connbench

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/gorma-hpc/gorma/transport/sockets"
)

// gorma's sockets, registered for every program that uses this package: gorma-shm
// rendezvouses on a name (the run directory's base name, unique per run), gorma-tcp
// listens on loopback and offers shm to gorma dialers.
func init() {
	for _, network := range []string{"shm", "tcp"} {
		Register(Transport{
			Name:   "gorma-" + network,
			Listen: func(addr string) (net.Listener, error) { return sockets.Listen(network, addr) },
			Dial: func(ctx context.Context, addr string) (net.Conn, error) {
				return sockets.DialContext(ctx, network, addr)
			},
			Addr: func(dir string) string {
				if network == "tcp" {
					return "127.0.0.1:0"
				}
				return "sockbench-" + strconv.Itoa(os.Getpid()) + "-" + filepath.Base(dir)
			},
		})
	}
}
