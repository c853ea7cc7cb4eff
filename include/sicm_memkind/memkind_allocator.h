/* SPDX-License-Identifier: BSD-3-Clause */
/* memkind_allocator.h of libsicm's memkind-compatible library: a C++
 * allocator (the standard library's Allocator requirements) over one of
 * memkind's static kinds, with memkind's names —
 * libmemkind::static_kind::allocator<T>(libmemkind::kinds::HBW) — so that
 * containers written for memkind build and run unchanged.  allocate()
 * throws std::bad_alloc when the kind has no room; two allocators compare
 * equal when they name the same kind. */
#ifndef SICM_MEMKIND_ALLOCATOR_H
#define SICM_MEMKIND_ALLOCATOR_H

#include <cstddef>
#include <new>
#include <stdexcept>
#include <utility>

#include "memkind.h"

namespace libmemkind {

/* memkind's numbering. */
enum class kinds {
  DEFAULT = 0,
  HUGETLB = 1,
  INTERLEAVE = 2,
  HBW = 3,
  HBW_ALL = 4,
  HBW_HUGETLB = 5,
  HBW_ALL_HUGETLB = 6,
  HBW_PREFERRED = 7,
  HBW_PREFERRED_HUGETLB = 8,
  HBW_INTERLEAVE = 9,
  REGULAR = 10,
  DAX_KMEM = 11,
  DAX_KMEM_ALL = 12,
  DAX_KMEM_PREFERRED = 13,
  DAX_KMEM_INTERLEAVE = 14,
  HIGHEST_CAPACITY = 15,
  HIGHEST_CAPACITY_PREFERRED = 16,
  HIGHEST_CAPACITY_LOCAL = 17,
  HIGHEST_CAPACITY_LOCAL_PREFERRED = 18,
  LOWEST_LATENCY_LOCAL = 19,
  LOWEST_LATENCY_LOCAL_PREFERRED = 20,
  HIGHEST_BANDWIDTH_LOCAL = 21,
  HIGHEST_BANDWIDTH_LOCAL_PREFERRED = 22
};

namespace static_kind {

/* The kind of each libmemkind::kinds value; throws std::runtime_error for
 * any other value. */
inline memkind_t kind_of(kinds k) {
  memkind_t *const table[] = {
      &MEMKIND_DEFAULT, &MEMKIND_HUGETLB, &MEMKIND_INTERLEAVE, &MEMKIND_HBW, &MEMKIND_HBW_ALL,
      &MEMKIND_HBW_HUGETLB, &MEMKIND_HBW_ALL_HUGETLB, &MEMKIND_HBW_PREFERRED,
      &MEMKIND_HBW_PREFERRED_HUGETLB, &MEMKIND_HBW_INTERLEAVE, &MEMKIND_REGULAR, &MEMKIND_DAX_KMEM,
      &MEMKIND_DAX_KMEM_ALL, &MEMKIND_DAX_KMEM_PREFERRED, &MEMKIND_DAX_KMEM_INTERLEAVE,
      &MEMKIND_HIGHEST_CAPACITY, &MEMKIND_HIGHEST_CAPACITY_PREFERRED, &MEMKIND_HIGHEST_CAPACITY_LOCAL,
      &MEMKIND_HIGHEST_CAPACITY_LOCAL_PREFERRED, &MEMKIND_LOWEST_LATENCY_LOCAL,
      &MEMKIND_LOWEST_LATENCY_LOCAL_PREFERRED, &MEMKIND_HIGHEST_BANDWIDTH_LOCAL,
      &MEMKIND_HIGHEST_BANDWIDTH_LOCAL_PREFERRED};
  unsigned i = static_cast<unsigned>(k);
  if (i >= sizeof table / sizeof table[0])
    throw std::runtime_error("Unknown libmemkind::kinds");
  return *table[i];
}

template <typename T>
class allocator {
 public:
  using value_type = T;
  using pointer = T *;
  using const_pointer = const T *;
  using reference = T &;
  using const_reference = const T &;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  template <class U>
  struct rebind {
    using other = allocator<U>;
  };
  template <typename U>
  friend class allocator;

  explicit allocator(libmemkind::kinds kind) : kind_(kind_of(kind)) {}
  allocator(const allocator &other) = default;
  allocator(allocator &&other) = default;
  template <typename U>
  allocator(const allocator<U> &other) noexcept : kind_(other.kind_) {}
  template <typename U>
  allocator(allocator<U> &&other) noexcept : kind_(other.kind_) {}
  allocator &operator=(const allocator &other) = default;
  allocator &operator=(allocator &&other) = default;
  template <typename U>
  allocator &operator=(const allocator<U> &other) noexcept {
    kind_ = other.kind_;
    return *this;
  }
  template <typename U>
  allocator &operator=(allocator<U> &&other) noexcept {
    kind_ = other.kind_;
    return *this;
  }

  pointer allocate(size_type n) const {
    if (n > static_cast<size_type>(-1) / sizeof(T))
      throw std::bad_alloc();
    pointer p = static_cast<pointer>(memkind_malloc(kind_, n * sizeof(T)));
    if (p == nullptr)
      throw std::bad_alloc();
    return p;
  }
  void deallocate(pointer p, size_type) const { memkind_free(kind_, p); }
  template <class U, class... Args>
  void construct(U *p, Args &&...args) const {
    ::new (static_cast<void *>(p)) U(std::forward<Args>(args)...);
  }
  void destroy(pointer p) const { p->~T(); }

  template <typename U, typename V>
  friend bool operator==(const allocator<U> &a, const allocator<V> &b);
  template <typename U, typename V>
  friend bool operator!=(const allocator<U> &a, const allocator<V> &b);

 private:
  memkind_t kind_;
};

template <typename U, typename V>
bool operator==(const allocator<U> &a, const allocator<V> &b) {
  return a.kind_ == b.kind_;
}
template <typename U, typename V>
bool operator!=(const allocator<U> &a, const allocator<V> &b) {
  return a.kind_ != b.kind_;
}

}  // namespace static_kind
}  // namespace libmemkind

#endif /* SICM_MEMKIND_ALLOCATOR_H */
