! SPDX-License-Identifier: BSD-3-Clause
! sicm.f90: the Fortran interface of libsicm (`use sicm`), through
! ISO_C_BINDING.  Devices, ranking, arenas, allocation into Fortran arrays,
! migration, residency and shared arenas.  Most procedures are the C
! functions themselves (bind(c)); the few with strings are wrappers that
! add the NUL.  Handles and devices are type(c_ptr); read a device's fields
! with c_f_pointer(dev, d) into a type(sicm_device).  Allocate with
! sicm_arena_alloc and give the memory an array shape with c_f_pointer:
!   p = sicm_arena_alloc(arena, int(n * 8, c_size_t))
!   call c_f_pointer(p, a, [n])          ! real(c_double), pointer :: a(:)
! Errors are as in sicm.h (C errno is not visible here: test the return
! value, and sicm_error_message() says why).
module sicm
  use, intrinsic :: iso_c_binding
  implicit none
  private :: c_string

  ! sicm_device_kind
  integer(c_int), parameter :: SICM_KIND_UNKNOWN = 0, SICM_KIND_DRAM = 1, &
       SICM_KIND_HBM = 2, SICM_KIND_CAPACITY = 3
  ! sicm_rank_by
  integer(c_int), parameter :: SICM_RANK_BANDWIDTH = 0, SICM_RANK_LATENCY = 1, &
       SICM_RANK_CAPACITY = 2, SICM_RANK_NEAREST = 3
  integer(c_int), parameter :: SICM_INITIATOR_SELF = -1
  ! sicm_arena_flags
  integer(c_int), parameter :: SICM_ARENA_PREFERRED = 1, SICM_ARENA_INTERLEAVE = 2, &
       SICM_ARENA_HUGEPAGES = 4, SICM_ARENA_NOHUGEPAGES = 8, SICM_ARENA_FIRST_TOUCH = 64
  integer(c_int), parameter :: SICM_STATS_JSON = 1

  type, bind(c) :: sicm_perf
     integer(c_int64_t) :: read_bandwidth, write_bandwidth   ! MB/s (0: unknown)
     integer(c_int64_t) :: read_latency, write_latency       ! ns
     integer(c_int) :: initiator, source
  end type sicm_perf

  type, bind(c) :: sicm_device
     integer(c_int) :: index, node, kind, kind_source
     integer(c_size_t) :: page_size, capacity
     integer(c_int) :: has_cpus, huge
     type(sicm_perf) :: perf
  end type sicm_device

  type, bind(c) :: sicm_device_list
     integer(c_int) :: count
     type(c_ptr) :: devices
  end type sicm_device_list

  interface
     integer(c_int) function sicm_init() bind(c, name="sicm_init")
       import :: c_int
     end function sicm_init
     integer(c_int) function sicm_fini() bind(c, name="sicm_fini")
       import :: c_int
     end function sicm_fini
     type(c_ptr) function sicm_error_detail() bind(c, name="sicm_error_detail")
       import :: c_ptr
     end function sicm_error_detail

     ! Devices and ranking
     type(c_ptr) function sicm_devices() bind(c, name="sicm_devices")
       import :: c_ptr
     end function sicm_devices
     type(c_ptr) function sicm_device_of_node(node, page_size) bind(c, name="sicm_device_of_node")
       import :: c_ptr, c_int, c_size_t
       integer(c_int), value :: node
       integer(c_size_t), value :: page_size
     end function sicm_device_of_node
     integer(c_int) function sicm_device_get_free_bytes(dev, free_bytes) bind(c, name="sicm_device_get_free_bytes")
       import :: c_ptr, c_int, c_size_t
       type(c_ptr), value :: dev
       integer(c_size_t), intent(out) :: free_bytes
     end function sicm_device_get_free_bytes
     type(c_ptr) function sicm_device_best(by, initiator) bind(c, name="sicm_device_best")
       import :: c_ptr, c_int
       integer(c_int), value :: by, initiator
     end function sicm_device_best
     integer(c_int) function sicm_node_self() bind(c, name="sicm_node_self")
       import :: c_int
     end function sicm_node_self

     ! Arenas
     type(c_ptr) function sicm_arena_create(maxsize, dev) bind(c, name="sicm_arena_create")
       import :: c_ptr, c_size_t
       integer(c_size_t), value :: maxsize
       type(c_ptr), value :: dev
     end function sicm_arena_create
     type(c_ptr) function sicm_arena_create_devices(maxsize, devs, ndevs, flags) &
          bind(c, name="sicm_arena_create_devices")
       import :: c_ptr, c_size_t, c_int
       integer(c_size_t), value :: maxsize
       type(c_ptr), intent(in) :: devs(*)
       integer(c_int), value :: ndevs, flags
     end function sicm_arena_create_devices
     integer(c_int) function sicm_arena_destroy(arena) bind(c, name="sicm_arena_destroy")
       import :: c_ptr, c_int
       type(c_ptr), value :: arena
     end function sicm_arena_destroy
     type(c_ptr) function sicm_arena_alloc(arena, size) bind(c, name="sicm_arena_alloc")
       import :: c_ptr, c_size_t
       type(c_ptr), value :: arena
       integer(c_size_t), value :: size
     end function sicm_arena_alloc
     type(c_ptr) function sicm_arena_aligned_alloc(arena, alignment, size) &
          bind(c, name="sicm_arena_aligned_alloc")
       import :: c_ptr, c_size_t
       type(c_ptr), value :: arena
       integer(c_size_t), value :: alignment, size
     end function sicm_arena_aligned_alloc
     type(c_ptr) function sicm_arena_calloc(arena, n, size) bind(c, name="sicm_arena_calloc")
       import :: c_ptr, c_size_t
       type(c_ptr), value :: arena
       integer(c_size_t), value :: n, size
     end function sicm_arena_calloc
     type(c_ptr) function sicm_realloc(ptr, size) bind(c, name="sicm_realloc")
       import :: c_ptr, c_size_t
       type(c_ptr), value :: ptr
       integer(c_size_t), value :: size
     end function sicm_realloc
     subroutine sicm_free(ptr) bind(c, name="sicm_free")
       import :: c_ptr
       type(c_ptr), value :: ptr
     end subroutine sicm_free
     type(c_ptr) function sicm_arena_lookup(ptr) bind(c, name="sicm_arena_lookup")
       import :: c_ptr
       type(c_ptr), value :: ptr
     end function sicm_arena_lookup
     integer(c_size_t) function sicm_arena_size(arena) bind(c, name="sicm_arena_size")
       import :: c_ptr, c_size_t
       type(c_ptr), value :: arena
     end function sicm_arena_size
     type(c_ptr) function sicm_arena_get_device(arena) bind(c, name="sicm_arena_get_device")
       import :: c_ptr
       type(c_ptr), value :: arena
     end function sicm_arena_get_device
     ! bytes(n + 1) receives the bytes on node n (Fortran arrays start at 1).
     integer(c_int) function sicm_arena_residency(arena, bytes, nnodes) &
          bind(c, name="sicm_arena_residency")
       import :: c_ptr, c_int, c_size_t
       type(c_ptr), value :: arena
       integer(c_size_t), intent(inout) :: bytes(*)
       integer(c_size_t), value :: nnodes
     end function sicm_arena_residency
     integer(c_int) function sicm_node_of_ptr(ptr) bind(c, name="sicm_node_of_ptr")
       import :: c_ptr, c_int
       type(c_ptr), value :: ptr
     end function sicm_node_of_ptr
     integer(c_int) function sicm_stats_print(out, flags) bind(c, name="sicm_stats_print")
       import :: c_ptr, c_int
       type(c_ptr), value :: out   ! c_null_ptr: stderr
       integer(c_int), value :: flags
     end function sicm_stats_print

     ! Migration
     integer(c_int) function sicm_arena_set_device(arena, dev) bind(c, name="sicm_arena_set_device")
       import :: c_ptr, c_int
       type(c_ptr), value :: arena, dev
     end function sicm_arena_set_device

     ! Shared arenas (handles of the C API; names through the wrappers below)
     integer(c_int) function sicm_arena_detach(arena) bind(c, name="sicm_arena_detach")
       import :: c_ptr, c_int
       type(c_ptr), value :: arena
     end function sicm_arena_detach

     type(c_ptr) function sicm_c_create_shared(name, size, dev, mode) bind(c, name="sicm_arena_create_shared")
       import :: c_ptr, c_size_t, c_char, c_int
       character(kind=c_char), intent(in) :: name(*)
       integer(c_size_t), value :: size
       type(c_ptr), value :: dev
       integer(c_int), value :: mode
     end function sicm_c_create_shared
     type(c_ptr) function sicm_c_attach(name) bind(c, name="sicm_arena_attach")
       import :: c_ptr, c_char
       character(kind=c_char), intent(in) :: name(*)
     end function sicm_c_attach
     integer(c_int) function sicm_c_unlink(name) bind(c, name="sicm_arena_unlink")
       import :: c_int, c_char
       character(kind=c_char), intent(in) :: name(*)
     end function sicm_c_unlink
     integer(c_size_t) function sicm_c_strlen(s) bind(c, name="strlen")
       import :: c_ptr, c_size_t
       type(c_ptr), value :: s
     end function sicm_c_strlen
  end interface

contains

  ! The device at position i (1-based) of sicm_devices(), or c_null_ptr.
  type(c_ptr) function sicm_device_at(i) result(dev)
    integer, intent(in) :: i
    type(sicm_device_list), pointer :: list
    type(sicm_device), pointer :: all(:)
    dev = c_null_ptr
    if (.not. c_associated(sicm_devices())) return
    call c_f_pointer(sicm_devices(), list)
    if (i < 1 .or. i > list%count) return
    call c_f_pointer(list%devices, all, [list%count])
    dev = c_loc(all(i))
  end function sicm_device_at

  ! How many devices sicm_devices() lists (0 when not initialized).
  integer function sicm_device_count()
    type(sicm_device_list), pointer :: list
    sicm_device_count = 0
    if (.not. c_associated(sicm_devices())) return
    call c_f_pointer(sicm_devices(), list)
    sicm_device_count = list%count
  end function sicm_device_count

  ! The fields of a device handle.
  function sicm_device_info(dev) result(d)
    type(c_ptr), intent(in) :: dev
    type(sicm_device), pointer :: d
    call c_f_pointer(dev, d)
  end function sicm_device_info

  ! sicm_error_detail() as a Fortran string.
  function sicm_error_message() result(msg)
    character(len=:), allocatable :: msg
    character(kind=c_char), pointer :: chars(:)
    type(c_ptr) :: p
    integer :: n, i
    p = sicm_error_detail()
    n = int(sicm_c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate(character(len=n) :: msg)
    do i = 1, n
       msg(i:i) = chars(i)
    end do
  end function sicm_error_message

  function c_string(s) result(c)
    character(len=*), intent(in) :: s
    character(kind=c_char) :: c(len_trim(s) + 1)
    integer :: i
    do i = 1, len_trim(s)
       c(i) = s(i:i)
    end do
    c(len_trim(s) + 1) = c_null_char
  end function c_string

  ! sicm_arena_create_shared(name, size, dev, mode): mode 0 means 0600.
  type(c_ptr) function sicm_arena_create_shared(name, size, dev, mode)
    character(len=*), intent(in) :: name
    integer(c_size_t), intent(in) :: size
    type(c_ptr), intent(in) :: dev
    integer(c_int), intent(in) :: mode
    sicm_arena_create_shared = sicm_c_create_shared(c_string(name), size, dev, mode)
  end function sicm_arena_create_shared

  type(c_ptr) function sicm_arena_attach(name)
    character(len=*), intent(in) :: name
    sicm_arena_attach = sicm_c_attach(c_string(name))
  end function sicm_arena_attach

  integer(c_int) function sicm_arena_unlink(name)
    character(len=*), intent(in) :: name
    sicm_arena_unlink = sicm_c_unlink(c_string(name))
  end function sicm_arena_unlink
end module sicm
