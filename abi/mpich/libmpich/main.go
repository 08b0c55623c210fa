package main

import _ "github.com/gorma-hpc/gorma/abi/mpich"

func main() {}
