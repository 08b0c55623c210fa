package main

// The providers register themselves with verbs from their init functions.
import (
	_ "github.com/gorma-hpc/gorma/transport/verbs/shm"
	_ "github.com/gorma-hpc/gorma/transport/verbs/tcp"
)
