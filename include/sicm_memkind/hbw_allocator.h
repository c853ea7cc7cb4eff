/* SPDX-License-Identifier: BSD-3-Clause */
/* hbw_allocator.h of libsicm's memkind-compatible library: hbw::allocator<T>,
 * a C++ allocator over hbw_malloc()/hbw_free() (the process's hbw policy),
 * with memkind's names, so that containers written for memkind build and
 * run unchanged.  allocate() throws std::bad_alloc when no memory is left;
 * every hbw::allocator compares equal to every other. */
#ifndef SICM_HBW_ALLOCATOR_H
#define SICM_HBW_ALLOCATOR_H

#include <cstddef>
#include <new>

#include "hbwmalloc.h"

namespace hbw {

template <class T>
class allocator {
 public:
  typedef std::size_t size_type;
  typedef std::ptrdiff_t difference_type;
  typedef T *pointer;
  typedef const T *const_pointer;
  typedef T &reference;
  typedef const T &const_reference;
  typedef T value_type;
  template <class U>
  struct rebind {
    typedef hbw::allocator<U> other;
  };

  allocator() throw() {}
  template <class U>
  allocator(const allocator<U> &) throw() {}
  ~allocator() throw() {}

  pointer address(reference x) const { return &x; }
  const_pointer address(const_reference x) const { return &x; }
  pointer allocate(size_type n, const void * = 0) {
    if (n > max_size())
      throw std::bad_alloc();
    pointer p = static_cast<pointer>(hbw_malloc(n * sizeof(T)));
    if (p == 0)
      throw std::bad_alloc();
    return p;
  }
  void deallocate(pointer p, size_type) { hbw_free(p); }
  size_type max_size() const throw() { return static_cast<size_type>(-1) / sizeof(T); }
  void construct(pointer p, const_reference v) { ::new (static_cast<void *>(p)) T(v); }
  void destroy(pointer p) { p->~T(); }
};

template <class T, class U>
bool operator==(const allocator<T> &, const allocator<U> &) {
  return true;
}
template <class T, class U>
bool operator!=(const allocator<T> &, const allocator<U> &) {
  return false;
}

}  // namespace hbw

#endif /* SICM_HBW_ALLOCATOR_H */
