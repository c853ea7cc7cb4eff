! SPDX-License-Identifier: BSD-3-Clause
! fortran_place.f90: libsicm from Fortran (`use sicm`).  An 8 MiB array
! goes on the highest-bandwidth device (the HBM node of the 4-node guest),
! moves to this CPU's DRAM with one call, keeps its values; then a shared
! arena is created, attached again and unlinked.  Prints where the pages
! were at each step; stops with a nonzero code on any failure.
program fortran_place
  use sicm
  implicit none
  integer, parameter :: n = 1024 * 1024
  integer(c_size_t), parameter :: nbytes = int(n, c_size_t) * 8
  type(c_ptr) :: fast, local, arena, p, shared, again, q
  type(sicm_device), pointer :: fast_dev, local_dev
  real(c_double), pointer :: a(:)
  integer(c_int), pointer :: counts(:)
  integer(c_size_t) :: bytes(64)
  integer :: i
  integer(c_int) :: rc

  if (sicm_init() /= 0) call fail('sicm_init')
  print '(a,i0,a)', 'fortran: ', sicm_device_count(), ' devices'
  fast = sicm_device_best(SICM_RANK_BANDWIDTH, SICM_INITIATOR_SELF)
  local = sicm_device_of_node(sicm_node_self(), 0_c_size_t)
  if (.not. c_associated(fast) .or. .not. c_associated(local)) call fail('devices')
  fast_dev => sicm_device_info(fast)
  local_dev => sicm_device_info(local)

  arena = sicm_arena_create(0_c_size_t, fast)
  if (.not. c_associated(arena)) call fail('sicm_arena_create')
  p = sicm_arena_alloc(arena, nbytes)
  if (.not. c_associated(p)) call fail('sicm_arena_alloc')
  call c_f_pointer(p, a, [n])
  do i = 1, n
     a(i) = real(i, c_double) * 0.5d0
  end do
  call where_is(arena, fast_dev%node, 'placed')

  if (sicm_arena_set_device(arena, local) /= 0) call fail('sicm_arena_set_device')
  call where_is(arena, local_dev%node, 'moved')
  do i = 1, n
     if (a(i) /= real(i, c_double) * 0.5d0) call fail('values after the move')
  end do
  print '(a)', 'fortran: values intact after the move'
  call sicm_free(p)
  if (sicm_arena_destroy(arena) /= 0) call fail('sicm_arena_destroy')

  rc = sicm_arena_unlink('/sicm-fortran-example')  ! left by an earlier run that failed, if any
  shared = sicm_arena_create_shared('/sicm-fortran-example', 1048576_c_size_t, fast, 0_c_int)
  if (.not. c_associated(shared)) call fail('sicm_arena_create_shared')
  q = sicm_arena_alloc(shared, 4096_c_size_t)
  if (.not. c_associated(q)) call fail('shared alloc')
  call c_f_pointer(q, counts, [1024])
  counts = 7
  again = sicm_arena_attach('/sicm-fortran-example')
  if (.not. c_associated(again, shared)) call fail('sicm_arena_attach gives the same handle')
  if (sicm_node_of_ptr(q) /= fast_dev%node) call fail('shared arena page on the device')
  print '(a,i0)', 'fortran: shared arena on node ', fast_dev%node
  call sicm_free(q)
  if (sicm_arena_detach(shared) /= 0) call fail('sicm_arena_detach')  ! one detach for both
  if (sicm_arena_unlink('/sicm-fortran-example') /= 0) call fail('sicm_arena_unlink')
  if (sicm_fini() /= 0) call fail('sicm_fini')
  print '(a)', 'fortran: ok'

contains

  ! Every resident byte of the array's arena is on `node`.
  subroutine where_is(arena, node, what)
    type(c_ptr), intent(in) :: arena
    integer(c_int), intent(in) :: node
    character(len=*), intent(in) :: what
    bytes = 0
    if (sicm_arena_residency(arena, bytes, 64_c_size_t) /= 0) call fail('sicm_arena_residency')
    print '(a,a,a,i0,a,i0,a)', 'fortran: ', what, ': ', bytes(node + 1) / 1024, ' KiB on node ', &
         node, ' of the arena'
    if (bytes(node + 1) < nbytes .or. sum(bytes) /= bytes(node + 1)) call fail(what)
  end subroutine where_is

  subroutine fail(what)
    character(len=*), intent(in) :: what
    print '(a,a,a,a)', 'fortran: FAILED: ', what, ': ', sicm_error_message()
    error stop 1
  end subroutine fail
end program fortran_place
