package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: stressprog MODE [ARGS]")
	}
	rank := atoi(os.Getenv("GOLAUNCH_RANK"))
	mode, args := os.Args[1], os.Args[2:]
	switch mode {
	case "partial":
		fmt.Fprintf(os.Stdout, "out-%d", rank)
		fmt.Fprintf(os.Stderr, "err-%d", rank)
	case "bigline":
		if rank != 0 {
			fmt.Printf("small %d\n", rank)
			return
		}
		line := make([]byte, atoi(args[0])+1)
		for i := range line {
			line[i] = byte('a' + i%26)
		}
		line[len(line)-1] = '\n'
		os.Stdout.Write(line)
	case "binary":
		b := make([]byte, 0, 256*64)
		for range 64 {
			for c := range 256 {
				b = append(b, byte(c))
			}
		}
		os.Stdout.Write(b)
	case "burst":
		w := bufio.NewWriterSize(os.Stdout, 64<<10)
		pad := strings.Repeat("x", 100)
		for i := range atoi(args[0]) {
			fmt.Fprintf(w, "burst %d %d %s\n", rank, i, pad)
		}
		w.Flush()
		os.Exit(0)
	case "mixed":
		for i := range atoi(args[0]) {
			fmt.Fprintf(os.Stdout, "out %d %d\n", rank, i)
			fmt.Fprintf(os.Stderr, "err %d %d\n", rank, i)
		}
	case "killself":
		if rank == atoi(args[1]) {
			time.Sleep(50 * time.Millisecond)
			syscall.Kill(os.Getpid(), syscall.Signal(atoi(args[0])))
		}
		time.Sleep(time.Hour)
	case "flood", "flooderr":
		writeFile(args[0], rank, fmt.Sprintf("%d 0 %s", os.Getpid(), os.Getenv("GOLAUNCH_AGENT_SOCK")))
		chunk := []byte(strings.Repeat(fmt.Sprintf("flood %d ", rank), 1000) + "\n")
		out := os.Stdout
		if mode == "flooderr" {
			out = os.Stderr
		}
		for {
			if _, err := out.Write(chunk); err != nil {
				os.Exit(3)
			}
		}
	case "ignoreterm":
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
		child := exec.Command("sleep", "3600")
		if err := child.Start(); err != nil {
			fail("child: %v", err)
		}
		writeFile(args[0], rank, fmt.Sprintf("%d %d %s", os.Getpid(), child.Process.Pid, os.Getenv("GOLAUNCH_AGENT_SOCK")))
		time.Sleep(time.Hour)
	case "stdincount":
		if rank != 0 {
			return
		}
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			fail("stdin: %v", err)
		}
		sum := 0
		for _, c := range b {
			sum = (sum*31 + int(c)) % 1000000007
		}
		fmt.Printf("stdin %d %d\n", len(b), sum)
	case "nostdin":
	default:
		fail("unknown mode %q", mode)
	}
}

// writeFile writes content to dir/RANK atomically (the test polls for it).
func writeFile(dir string, rank int, content string) {
	tmp := filepath.Join(dir, fmt.Sprintf(".%d.tmp", rank))
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		fail("%v", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, strconv.Itoa(rank))); err != nil {
		fail("%v", err)
	}
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		fail("not a number: %q", s)
	}
	return n
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "stressprog: "+format+"\n", a...)
	os.Exit(99)
}
