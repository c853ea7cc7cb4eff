/* SPDX-License-Identifier: BSD-3-Clause */
/* fixed_allocator.h of libsicm's memkind-compatible library:
 * libmemkind::fixed::allocator<T>(addr, size), a C++ allocator over a
 * fixed kind of its own (memkind_create_fixed: the caller's memory), with
 * memkind's names.  Copies share the kind, which is destroyed when the
 * last copy goes; the memory stays the caller's.  The constructor throws
 * std::invalid_argument for MEMKIND_ERROR_INVALID and std::runtime_error
 * for the other errors; allocate() throws std::bad_alloc when the memory
 * is full. */
#ifndef SICM_FIXED_ALLOCATOR_H
#define SICM_FIXED_ALLOCATOR_H

#include <cstddef>

#include "memkind.h"
#include "owned_kind_allocator.h"

namespace libmemkind {
namespace fixed {
namespace internal {

/* Owns one fixed kind: the allocator's kind. */
class kind_wrapper_t : public libmemkind::internal::kind_owner {
 public:
  kind_wrapper_t(void *addr, std::size_t size) {
    check(memkind_create_fixed(addr, size, &kind_), "fixed");
  }
};

}  // namespace internal

template <typename T>
using allocator = libmemkind::internal::owned_kind_allocator<T, internal::kind_wrapper_t>;

}  // namespace fixed
}  // namespace libmemkind

#endif /* SICM_FIXED_ALLOCATOR_H */
