/* SPDX-License-Identifier: BSD-3-Clause */
/* owned_kind_allocator.h of libsicm's memkind-compatible library: the C++
 * allocator behind libmemkind::pmem::allocator and
 * libmemkind::fixed::allocator (pmem_allocator.h, fixed_allocator.h), over
 * a kind of its own that a Wrapper makes from the constructor's arguments
 * and destroys when the last copy goes.  allocate() throws std::bad_alloc
 * when the kind has no room; two allocators compare equal when they share
 * the kind.  Included by those headers, not by programs. */
#ifndef SICM_OWNED_KIND_ALLOCATOR_H
#define SICM_OWNED_KIND_ALLOCATOR_H

#include <cstddef>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "memkind.h"

namespace libmemkind {
namespace internal {

/* A kind of its own, destroyed with this object; what a Wrapper derives
 * from.  `check` turns a creation's error into memkind's exceptions. */
class kind_owner {
 public:
  kind_owner(const kind_owner &) = delete;
  void operator=(const kind_owner &) = delete;
  ~kind_owner() { memkind_destroy_kind(kind_); }
  memkind_t get() const { return kind_; }

 protected:
  kind_owner() = default;
  static void check(int err, const char *what) {
    if (err == MEMKIND_ERROR_INVALID)
      throw std::invalid_argument(std::string("An invalid argument was passed to create ") + what +
                                  " kind; error code: " + std::to_string(err));
    if (err != 0)
      throw std::runtime_error(std::string("An error occurred while creating ") + what +
                               " kind; error code: " + std::to_string(err));
  }
  memkind_t kind_ = nullptr;
};

template <typename T, typename Wrapper>
class owned_kind_allocator {
  std::shared_ptr<Wrapper> kind_;

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
    using other = owned_kind_allocator<U, Wrapper>;
  };
  template <typename U, typename W>
  friend class owned_kind_allocator;

  /* A new kind, from the Wrapper's arguments (two or more: never a copy). */
  template <typename A, typename B, typename... Rest,
            typename = typename std::enable_if<
                std::is_constructible<Wrapper, A, B, Rest...>::value>::type>
  explicit owned_kind_allocator(A &&a, B &&b, Rest &&...rest)
      : kind_(std::make_shared<Wrapper>(std::forward<A>(a), std::forward<B>(b),
                                        std::forward<Rest>(rest)...)) {}
  owned_kind_allocator(const owned_kind_allocator &other) = default;
  owned_kind_allocator(owned_kind_allocator &&other) = default;
  template <typename U>
  owned_kind_allocator(const owned_kind_allocator<U, Wrapper> &other) noexcept
      : kind_(other.kind_) {}
  template <typename U>
  owned_kind_allocator(owned_kind_allocator<U, Wrapper> &&other) noexcept
      : kind_(std::move(other.kind_)) {}
  owned_kind_allocator &operator=(const owned_kind_allocator &other) = default;
  owned_kind_allocator &operator=(owned_kind_allocator &&other) = default;
  template <typename U>
  owned_kind_allocator &operator=(const owned_kind_allocator<U, Wrapper> &other) noexcept {
    kind_ = other.kind_;
    return *this;
  }
  template <typename U>
  owned_kind_allocator &operator=(owned_kind_allocator<U, Wrapper> &&other) noexcept {
    kind_ = std::move(other.kind_);
    return *this;
  }

  pointer allocate(size_type n) const {
    if (n > static_cast<size_type>(-1) / sizeof(T))
      throw std::bad_alloc();
    pointer p = static_cast<pointer>(memkind_malloc(kind_->get(), n * sizeof(T)));
    if (p == nullptr)
      throw std::bad_alloc();
    return p;
  }
  void deallocate(pointer p, size_type) const { memkind_free(kind_->get(), p); }
  template <class U, class... Args>
  void construct(U *p, Args &&...args) const {
    ::new (static_cast<void *>(p)) U(std::forward<Args>(args)...);
  }
  void destroy(pointer p) const { p->~T(); }

  template <typename U, typename V, typename W>
  friend bool operator==(const owned_kind_allocator<U, W> &a, const owned_kind_allocator<V, W> &b);
};

template <typename U, typename V, typename W>
bool operator==(const owned_kind_allocator<U, W> &a, const owned_kind_allocator<V, W> &b) {
  return a.kind_->get() == b.kind_->get();
}
template <typename U, typename V, typename W>
bool operator!=(const owned_kind_allocator<U, W> &a, const owned_kind_allocator<V, W> &b) {
  return !(a == b);
}

}  // namespace internal
}  // namespace libmemkind

#endif /* SICM_OWNED_KIND_ALLOCATOR_H */
