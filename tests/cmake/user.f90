! SPDX-License-Identifier: BSD-3-Clause
! user.f90: the Fortran program of the CMake user project.
program user_fortran
  use sicm
  implicit none
  type(c_ptr) :: arena, p
  integer(c_int), pointer :: v(:)
  if (sicm_init() /= 0) error stop 1
  arena = sicm_arena_create(0_c_size_t, sicm_device_at(1))
  p = sicm_arena_alloc(arena, 400_c_size_t)
  call c_f_pointer(p, v, [100])
  v = 3
  if (sum(v) /= 300 .or. .not. c_associated(sicm_arena_lookup(p), arena)) error stop 2
  call sicm_free(p)
  if (sicm_arena_destroy(arena) /= 0 .or. sicm_fini() /= 0) error stop 3
  print '(a)', 'cmake fortran user: ok'
end program user_fortran
