/* SPDX-License-Identifier: BSD-3-Clause */
// sicm.hpp: C++ wrappers over libsicm (header-only).
//   sicm::arena                 RAII owner of an arena (move-only)
//   sicm::arena_allocator<T>    STL allocator allocating from one arena
//   sicm::allocator             RAII owner of an OpenMP-style sicm_allocator
//   sicm::space_allocator<T>    STL allocator over a sicm::allocator
// Errors from the C API become std::system_error (std::bad_alloc for a
// failed allocation), carrying errno and sicm_error_detail().
#ifndef SICM_HPP
#define SICM_HPP

#include <cerrno>
#include <cstddef>
#include <initializer_list>
#include <cstdint>
#include <new>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>

#include "sicm.h"

namespace sicm {

[[noreturn]] inline void throw_errno(const char *what) {
  throw std::system_error(errno, std::generic_category(),
                          std::string(what) + ": " + sicm_error_detail());
}

// Owns one arena; destroys it (and everything allocated from it) at the end
// of its life.
class arena {
 public:
  arena(sicm_device *dev, size_t maxsize = 0) : handle_(sicm_arena_create(maxsize, dev)) {
    if (!handle_) throw_errno("sicm_arena_create");
  }
  arena(std::initializer_list<sicm_device *> devs, unsigned flags, size_t maxsize = 0)
      : handle_(sicm_arena_create_devices(maxsize, devs.begin(), (unsigned)devs.size(), flags)) {
    if (!handle_) throw_errno("sicm_arena_create_devices");
  }
  arena(arena &&other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  arena &operator=(arena &&other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  arena(const arena &) = delete;
  arena &operator=(const arena &) = delete;
  ~arena() { reset(); }

  sicm_arena get() const noexcept { return handle_; }
  // Moves every page of the arena to dev; throws on failure (rolled back).
  void set_device(sicm_device *dev) {
    if (sicm_arena_set_device(handle_, dev) != 0) throw_errno("sicm_arena_set_device");
  }
  size_t size() const noexcept { return sicm_arena_size(handle_); }

 private:
  void reset() noexcept {
    if (handle_) sicm_arena_destroy(handle_);
    handle_ = nullptr;
  }
  sicm_arena handle_;
};

// An STL allocator that allocates from one arena.  Any allocator can free
// any arena's memory (sicm_free finds the arena), but two allocators compare
// equal only if they allocate from the same arena, so that containers keep
// their elements in their own arena: copies stay in the destination's arena
// (no propagation on copy assignment), while move assignment and swap carry
// the arena along with the memory.
template <class T>
class arena_allocator {
 public:
  using value_type = T;
  using propagate_on_container_copy_assignment = std::false_type;
  using propagate_on_container_move_assignment = std::true_type;
  using propagate_on_container_swap = std::true_type;
  using is_always_equal = std::false_type;

  explicit arena_allocator(sicm_arena a) noexcept : arena_(a) {}
  explicit arena_allocator(const arena &a) noexcept : arena_(a.get()) {}
  template <class U>
  arena_allocator(const arena_allocator<U> &other) noexcept : arena_(other.get()) {}

  T *allocate(size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_array_new_length();
    void *p = alignof(T) > alignof(std::max_align_t)
                  ? sicm_arena_aligned_alloc(arena_, alignof(T), n * sizeof(T))
                  : sicm_arena_alloc(arena_, n * sizeof(T));
    if (!p) throw std::bad_alloc();
    return static_cast<T *>(p);
  }
  void deallocate(T *p, size_t) noexcept { sicm_free(p); }
  sicm_arena get() const noexcept { return arena_; }

 private:
  sicm_arena arena_;
};

template <class T, class U>
bool operator==(const arena_allocator<T> &a, const arena_allocator<U> &b) noexcept {
  return a.get() == b.get();
}
template <class T, class U>
bool operator!=(const arena_allocator<T> &a, const arena_allocator<U> &b) noexcept {
  return !(a == b);
}

// Owns an OpenMP-style allocator (memory space + traits).
class allocator {
 public:
  allocator(sicm_memspace space, std::initializer_list<sicm_alloctrait> traits = {})
      : handle_(sicm_allocator_create(space, (unsigned)traits.size(), traits.begin())) {
    if (!handle_) throw_errno("sicm_allocator_create");
  }
  allocator(allocator &&other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  allocator &operator=(allocator &&other) noexcept {
    if (this != &other) {
      if (handle_) sicm_allocator_destroy(handle_);
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  allocator(const allocator &) = delete;
  allocator &operator=(const allocator &) = delete;
  ~allocator() {
    if (handle_) sicm_allocator_destroy(handle_);
  }
  sicm_allocator *get() const noexcept { return handle_; }

 private:
  sicm_allocator *handle_;
};

// An STL allocator over an OpenMP-style allocator; its fallback rules apply
// (a NULL result becomes std::bad_alloc).
template <class T>
class space_allocator {
 public:
  using value_type = T;
  using propagate_on_container_copy_assignment = std::false_type;
  using propagate_on_container_move_assignment = std::true_type;
  using propagate_on_container_swap = std::true_type;
  using is_always_equal = std::false_type;

  explicit space_allocator(sicm_allocator *a) noexcept : alloc_(a) {}
  explicit space_allocator(const allocator &a) noexcept : alloc_(a.get()) {}
  template <class U>
  space_allocator(const space_allocator<U> &other) noexcept : alloc_(other.get()) {}

  T *allocate(size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_array_new_length();
    void *p = sicm_allocator_aligned_alloc(alloc_, alignof(T), n * sizeof(T));
    if (!p) throw std::bad_alloc();
    return static_cast<T *>(p);
  }
  void deallocate(T *p, size_t) noexcept { sicm_allocator_free(alloc_, p); }
  sicm_allocator *get() const noexcept { return alloc_; }

 private:
  sicm_allocator *alloc_;
};

template <class T, class U>
bool operator==(const space_allocator<T> &a, const space_allocator<U> &b) noexcept {
  return a.get() == b.get();
}
template <class T, class U>
bool operator!=(const space_allocator<T> &a, const space_allocator<U> &b) noexcept {
  return !(a == b);
}

}  // namespace sicm

#endif
