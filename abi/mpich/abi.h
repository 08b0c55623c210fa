/* The C side of libmpich.so.12 that the generated forwarders share. */
#ifndef GORMA_ABI_H
#define GORMA_ABI_H

/* gorma_forked is 1 in a child of fork(): the Go runtime's threads stay in the
 * parent, so the child must not enter Go. */
extern int gorma_forked;

/* gorma_forked_call reports a call made in such a child and returns MPI_ERR_OTHER. */
int gorma_forked_call(const char *fn);

#endif
