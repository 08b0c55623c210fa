//go:build cgo

/* Fork detection, the functions that stay in C, and mpi.h's data symbols. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include "abi.h"

int gorma_forked;

static void gorma_atfork_child(void) { gorma_forked = 1; }

__attribute__((constructor)) static void gorma_register_atfork(void)
{
	pthread_atfork(0, 0, gorma_atfork_child);
}

int gorma_forked_call(const char *fn)
{
	fprintf(stderr, "%s: called in a child of fork(): gorma's MPI library serves only the "
		"process that loaded it; a child may only exec (posix_spawn and system are fine)\n", fn);
	return 15; /* MPI_ERR_OTHER */
}

/* The data symbols of mpi.h. A program's loader binds them at start, whether or not
 * the program uses them. */
static int gorma_unweighted, gorma_weights_empty;
int *const MPI_UNWEIGHTED = &gorma_unweighted;
int *const MPI_WEIGHTS_EMPTY = &gorma_weights_empty;
void *const MPI_T_PVAR_ALL_HANDLES = (void *)-1;
int *MPI_F_STATUS_IGNORE = 0;
int *MPI_F_STATUSES_IGNORE = 0;
typedef struct { int count_lo, count_hi_and_cancelled, source, tag, error; } gorma_f08_status;
gorma_f08_status MPIR_F08_MPI_STATUS_IGNORE_OBJ;
gorma_f08_status MPIR_F08_MPI_STATUSES_IGNORE_OBJ[1];
gorma_f08_status *MPI_F08_STATUS_IGNORE = &MPIR_F08_MPI_STATUS_IGNORE_OBJ;
gorma_f08_status *MPI_F08_STATUSES_IGNORE = MPIR_F08_MPI_STATUSES_IGNORE_OBJ;

/* MPIR_Dup_fn is MPI_DUP_FN: the attribute copy that copies the value. */
int MPIR_Dup_fn(int obj, int keyval, void *extra, void *in, void *out, int *flag)
{
	(void)obj; (void)keyval; (void)extra;
	*(void **)out = in;
	*flag = 1;
	return 0;
}

/* MPI_DUP_FN is MPI-1's name of the copy that copies the value, as a function. */
int PMPI_DUP_FN(int oldcomm, int keyval, void *extra_state, void *attribute_val_in,
                void *attribute_val_out, int *flag)
{
	return MPIR_Dup_fn(oldcomm, keyval, extra_state, attribute_val_in, attribute_val_out, flag);
}
int MPI_DUP_FN(int oldcomm, int keyval, void *extra_state, void *attribute_val_in,
               void *attribute_val_out, int *flag) __attribute__((weak, alias("PMPI_DUP_FN")));

/* MPI_Wtime and MPI_Wtick stay in C: a program brackets each timed call with MPI_Wtime,
 * and a cgo callback would add its cost to every figure it measures. Seconds on the
 * monotonic clock, as MPICH's. */
double PMPI_Wtime(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
double MPI_Wtime(void) __attribute__((weak, alias("PMPI_Wtime")));

double PMPI_Wtick(void)
{
	struct timespec ts;
	clock_getres(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
double MPI_Wtick(void) __attribute__((weak, alias("PMPI_Wtick")));

/* Address arithmetic: an MPI_Aint is a byte address on this ABI. */
long PMPI_Aint_add(long base, long disp) { return base + disp; }
long MPI_Aint_add(long base, long disp) __attribute__((weak, alias("PMPI_Aint_add")));

long PMPI_Aint_diff(long addr1, long addr2) { return addr1 - addr2; }
long MPI_Aint_diff(long addr1, long addr2) __attribute__((weak, alias("PMPI_Aint_diff")));

/* MPI_Pcontrol sets a profiling library's level. gorma's own profile (golaunch --profile)
 * has no levels, so a call without a profiling library in front does nothing, as MPI
 * specifies. */
int PMPI_Pcontrol(const int level, ...) { (void)level; return 0; }
int MPI_Pcontrol(const int level, ...) __attribute__((weak, alias("PMPI_Pcontrol")));

/* An MPI_File handle is a small integer cast to a pointer: its index in file.go's
 * table, counted from 1 (MPI_FILE_NULL is 0). The Fortran handle is that integer. */
int PMPI_File_c2f(void *file) { return (int)(intptr_t)file; }
int MPI_File_c2f(void *file) __attribute__((weak, alias("PMPI_File_c2f")));

void *PMPI_File_f2c(int file) { return (void *)(intptr_t)file; }
void *MPI_File_f2c(int file) __attribute__((weak, alias("PMPI_File_f2c")));

/* gorma's transports move host memory only: no GPU buffers. The queries answer 0. */
int PMPIX_GPU_query_support(int gpu_type, int *is_supported)
{
	(void)gpu_type;
	*is_supported = 0;
	return 0;
}
int MPIX_GPU_query_support(int gpu_type, int *is_supported) __attribute__((weak, alias("PMPIX_GPU_query_support")));

int PMPIX_Query_cuda_support(void) { return 0; }
int MPIX_Query_cuda_support(void) __attribute__((weak, alias("PMPIX_Query_cuda_support")));

int PMPIX_Query_ze_support(void) { return 0; }
int MPIX_Query_ze_support(void) __attribute__((weak, alias("PMPIX_Query_ze_support")));

int PMPIX_Query_hip_support(void) { return 0; }
int MPIX_Query_hip_support(void) __attribute__((weak, alias("PMPIX_Query_hip_support")));

/* An MPI_Info is an int in MPICH's ABI, and its Fortran handle is the same int. */
int PMPI_Info_c2f(int info) { return info; }
int MPI_Info_c2f(int info) __attribute__((weak, alias("PMPI_Info_c2f")));

int PMPI_Info_f2c(int info) { return info; }
int MPI_Info_f2c(int info) __attribute__((weak, alias("PMPI_Info_f2c")));
