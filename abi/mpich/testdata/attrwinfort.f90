! attrwinfort: attributes from Fortran through Debian's libmpichfort.so.12, which
! reaches the library's MPII_* helpers and calls Fortran callbacks through its
! proxies. Values are INTEGER(KIND=MPI_ADDRESS_KIND) or, by MPI-1's calls, INTEGER.
module attrcb
  use mpi
  implicit none
  integer :: deletes = 0
contains
  subroutine copy_plus(comm, key, extra, in, out, flag, ierr)
    integer :: comm, key, ierr
    integer(kind=MPI_ADDRESS_KIND) :: extra, in, out
    logical :: flag
    out = in + extra
    flag = .true.
    ierr = MPI_SUCCESS
  end subroutine
  subroutine count_delete(comm, key, val, extra, ierr)
    integer :: comm, key, ierr
    integer(kind=MPI_ADDRESS_KIND) :: val, extra
    deletes = deletes + 1
    ierr = MPI_SUCCESS
  end subroutine
end module

program attrwinfort
  use mpi
  use attrcb
  implicit none
  integer :: ierr, rank, key, ikey, wkey, dup, win, ival
  integer(kind=MPI_ADDRESS_KIND) :: val, extra, got, wsize, base
  logical :: flag

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)

  extra = 5
  call MPI_Comm_create_keyval(copy_plus, count_delete, key, extra, ierr)
  val = 1234567890123_MPI_ADDRESS_KIND
  call MPI_Comm_set_attr(MPI_COMM_WORLD, key, val, ierr)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call MPI_Comm_get_attr(dup, key, got, flag, ierr)
  call check(flag .and. got == val + 5, 'the copy callback''s value')
  call MPI_Comm_free(dup, ierr)
  call check(deletes == 1, 'the delete callback at MPI_Comm_free')
  call MPI_Comm_delete_attr(MPI_COMM_WORLD, key, ierr)
  call check(deletes == 2, 'the delete callback at MPI_Comm_delete_attr')
  call MPI_Comm_free_keyval(key, ierr)

  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, got, flag, ierr)
  call check(flag .and. got >= 32767, 'MPI_TAG_UB')

  call MPI_Keyval_create(MPI_DUP_FN, MPI_NULL_DELETE_FN, ikey, 0, ierr)
  call MPI_Attr_put(MPI_COMM_WORLD, ikey, 77, ierr)
  call MPI_Attr_get(MPI_COMM_WORLD, ikey, ival, flag, ierr)
  call check(flag .and. ival == 77, 'MPI_Attr_get')
  call MPI_Attr_delete(MPI_COMM_WORLD, ikey, ierr)
  call MPI_Keyval_free(ikey, ierr)

  wsize = 64
  call MPI_Win_allocate(wsize, 8, MPI_INFO_NULL, MPI_COMM_WORLD, base, win, ierr)
  call MPI_Win_get_attr(win, MPI_WIN_SIZE, got, flag, ierr)
  call check(flag .and. got == 64, 'MPI_WIN_SIZE')
  call MPI_Win_get_attr(win, MPI_WIN_BASE, got, flag, ierr)
  call check(flag .and. got == base, 'MPI_WIN_BASE')
  call MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, count_delete, wkey, extra, ierr)
  val = 99
  call MPI_Win_set_attr(win, wkey, val, ierr)
  call MPI_Win_get_attr(win, wkey, got, flag, ierr)
  call check(flag .and. got == 99, 'a window attribute')
  call MPI_Win_free(win, ierr)
  call check(deletes == 3, 'the delete callback at MPI_Win_free')
  call MPI_Win_free_keyval(wkey, ierr)

  print '(a,i0,a)', 'rank ', rank, ': fortran attributes ok'
  call MPI_Finalize(ierr)
contains
  subroutine check(ok, what)
    logical :: ok
    character(*) :: what
    integer :: e
    if (.not. ok) then
      print '(a,i0,2a)', 'rank ', rank, ': wrong: ', what
      call MPI_Abort(MPI_COMM_WORLD, 1, e)
    end if
  end subroutine
end program
