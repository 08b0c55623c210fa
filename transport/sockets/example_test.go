package sockets_test

import (
	"fmt"
	"io"
	"log"

	"github.com/gorma-hpc/gorma/transport/sockets"
)

func Example() {
	l, err := sockets.Listen("shm", "example/echo")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	go func() { // an echo server; in real use, another process
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c)
	}()

	c, err := sockets.Dial("shm", "example/echo")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "hello over shared memory")
	c.(*sockets.Conn).CloseWrite()
	reply, err := io.ReadAll(c)
	fmt.Printf("%s %v\n", reply, err)
	// Output: hello over shared memory <nil>
}
