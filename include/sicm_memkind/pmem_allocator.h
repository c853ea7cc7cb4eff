/* SPDX-License-Identifier: BSD-3-Clause */
/* pmem_allocator.h of libsicm's memkind-compatible library:
 * libmemkind::pmem::allocator<T>(dir, max_size[, policy]), a C++ allocator
 * over a file-backed kind of its own (memkind_create_pmem_with_config), with
 * memkind's names.  Copies share the kind, which is destroyed, with its
 * memory, when the last copy goes.  The constructor throws
 * std::invalid_argument for MEMKIND_ERROR_INVALID and std::runtime_error for
 * the other errors; allocate() throws std::bad_alloc when the kind is full. */
#ifndef SICM_PMEM_ALLOCATOR_H
#define SICM_PMEM_ALLOCATOR_H

#include <cstddef>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "memkind.h"

namespace libmemkind {

enum class allocation_policy {
  DEFAULT = MEMKIND_MEM_USAGE_POLICY_DEFAULT,
  CONSERVATIVE = MEMKIND_MEM_USAGE_POLICY_CONSERVATIVE,
  MAX
};

namespace pmem {
namespace internal {

/* Owns one file-backed kind. */
class kind_wrapper_t {
 public:
  kind_wrapper_t(const char *dir, std::size_t max_size,
                 libmemkind::allocation_policy policy = libmemkind::allocation_policy::DEFAULT) {
    struct memkind_config *cfg = memkind_config_new();
    if (cfg == nullptr)
      throw std::runtime_error("An error occurred while creating pmem config");
    memkind_config_set_path(cfg, dir);
    memkind_config_set_size(cfg, max_size);
    memkind_config_set_memory_usage_policy(cfg, static_cast<memkind_mem_usage_policy>(policy));
    int err = memkind_create_pmem_with_config(cfg, &kind_);
    memkind_config_delete(cfg);
    if (err == MEMKIND_ERROR_INVALID)
      throw std::invalid_argument("An invalid argument was passed to create pmem kind; error code: " +
                                  std::to_string(err));
    if (err != 0)
      throw std::runtime_error("An error occurred while creating pmem kind; error code: " +
                               std::to_string(err));
  }
  kind_wrapper_t(const kind_wrapper_t &) = delete;
  void operator=(const kind_wrapper_t &) = delete;
  ~kind_wrapper_t() { memkind_destroy_kind(kind_); }
  memkind_t get() const { return kind_; }

 private:
  memkind_t kind_ = nullptr;
};

}  // namespace internal

template <typename T>
class allocator {
  std::shared_ptr<internal::kind_wrapper_t> kind_;

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

  explicit allocator(const char *dir, size_type max_size)
      : kind_(std::make_shared<internal::kind_wrapper_t>(dir, max_size)) {}
  explicit allocator(const std::string &dir, size_type max_size) : allocator(dir.c_str(), max_size) {}
  explicit allocator(const char *dir, size_type max_size, libmemkind::allocation_policy policy)
      : kind_(std::make_shared<internal::kind_wrapper_t>(dir, max_size, policy)) {}
  explicit allocator(const std::string &dir, size_type max_size, libmemkind::allocation_policy policy)
      : allocator(dir.c_str(), max_size, policy) {}
  allocator(const allocator &other) = default;
  allocator(allocator &&other) = default;
  template <typename U>
  allocator(const allocator<U> &other) noexcept : kind_(other.kind_) {}
  template <typename U>
  allocator(allocator<U> &&other) noexcept : kind_(std::move(other.kind_)) {}
  allocator &operator=(const allocator &other) = default;
  allocator &operator=(allocator &&other) = default;
  template <typename U>
  allocator &operator=(const allocator<U> &other) noexcept {
    kind_ = other.kind_;
    return *this;
  }
  template <typename U>
  allocator &operator=(allocator<U> &&other) noexcept {
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

  template <typename U, typename V>
  friend bool operator==(const allocator<U> &a, const allocator<V> &b);
  template <typename U, typename V>
  friend bool operator!=(const allocator<U> &a, const allocator<V> &b);
};

template <typename U, typename V>
bool operator==(const allocator<U> &a, const allocator<V> &b) {
  return a.kind_->get() == b.kind_->get();
}
template <typename U, typename V>
bool operator!=(const allocator<U> &a, const allocator<V> &b) {
  return !(a == b);
}

}  // namespace pmem
}  // namespace libmemkind

#endif /* SICM_PMEM_ALLOCATOR_H */
