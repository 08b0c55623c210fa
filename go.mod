module github.com/gorma-hpc/gorma

go 1.26

require (
	github.com/spf13/pflag v1.0.10 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
