package main

import (
	"os"

	"github.com/gorma-hpc/gorma/launcher"
)

func main() {
	os.Exit(launcher.Main(os.Args[1:]))
}
