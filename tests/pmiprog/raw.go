package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gorma-hpc/gorma/pmi"
)

// raw writes line to the rank's PMI connection as it is, without package pmi's client,
// prints the answer on stderr and hangs. where picks the connection and the moment:
//
//	fd-pre     PMI_FD, before any init
//	fd-post    PMI_FD, after cmd=init pmi_version=1
//	sock-pre   the agent socket, before gorma-init
//	sock-post  the agent socket, after gorma-init
//
// line is a Go string literal (strconv.Unquote: "cmd=get_maxes\n", "\x00\xff\n"), in
// which {rank} and {job} stand for the rank's and the job's; or long:N, N bytes of a put
// line without a newline.
func raw(c pmi.Contract, where, line string) {
	var conn net.Conn
	var err error
	if strings.HasPrefix(where, "fd-") {
		fd, ferr := strconv.Atoi(os.Getenv(pmi.EnvPMIFD))
		if ferr != nil {
			fail("raw: no %s: %v", pmi.EnvPMIFD, ferr)
		}
		f := os.NewFile(uintptr(fd), "pmi")
		conn, err = net.FileConn(f)
		f.Close()
	} else {
		conn, err = net.Dial("unix", c.AgentSock)
	}
	if err != nil {
		fail("raw: connect: %v", err)
	}
	rd := bufio.NewReader(conn)
	ask := func(req string) {
		if _, err := conn.Write([]byte(req)); err != nil {
			fail("raw: write %q: %v", req, err)
		}
		a, err := rd.ReadString('\n')
		fmt.Fprintf(os.Stderr, "raw %d: %q answered %q (%v)\n", c.Rank, req, a, err)
	}
	switch where {
	case "fd-post":
		ask("cmd=init pmi_version=1 pmi_subversion=1\n")
	case "sock-post":
		ask(fmt.Sprintf("cmd=gorma-init version=%d rank=%d job=%s\n", pmi.ProtocolVersion, c.Rank, c.JobID))
	case "fd-pre", "sock-pre":
	default:
		fail("raw: unknown connection %q", where)
	}
	var b []byte
	if n, ok := strings.CutPrefix(line, "long:"); ok {
		b = []byte("cmd=put kvsname=kvs key=k value=")
		b = append(b, strings.Repeat("v", atoi(n)-len(b))...)
	} else {
		s, err := strconv.Unquote(line)
		if err != nil {
			fail("raw: line %s is not a Go string literal: %v", line, err)
		}
		s = strings.ReplaceAll(s, "{rank}", strconv.Itoa(c.Rank))
		b = []byte(strings.ReplaceAll(s, "{job}", c.JobID))
	}
	fmt.Printf("sent %d\n", c.Rank)
	conn.SetWriteDeadline(time.Now().Add(time.Minute))
	if _, err := conn.Write(b); err != nil {
		fmt.Fprintf(os.Stderr, "raw %d: write: %v\n", c.Rank, err) // the agent hung up on a long line
	}
	a, err := rd.ReadString('\n')
	fmt.Fprintf(os.Stderr, "raw %d: answer %q (%v)\n", c.Rank, a, err)
	hang(c)
}
