// Package packpool keeps the buffers that the datatype calls of package runtime and
// package collectives pack non-contiguous layouts into, pooled by power-of-two size
// class, so that a steady stream of typed calls allocates nothing. Get and Put are safe
// for concurrent use; a Buf belongs to its caller from Get until Put.
package packpool
