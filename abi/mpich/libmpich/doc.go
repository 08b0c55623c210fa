// Command libmpich is the root of the c-shared build of package mpich:
//
//	CGO_ENABLED=1 go build -buildmode=c-shared -o lib/libmpich.so.12 ./abi/mpich/libmpich
//
// make libmpich runs it with the SONAME set. A c-shared build needs a main package; its
// main never runs.
package main
