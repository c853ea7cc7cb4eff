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
#include <stdexcept>
#include <string>

#include "memkind.h"
#include "owned_kind_allocator.h"

namespace libmemkind {

enum class allocation_policy {
  DEFAULT = MEMKIND_MEM_USAGE_POLICY_DEFAULT,
  CONSERVATIVE = MEMKIND_MEM_USAGE_POLICY_CONSERVATIVE,
  MAX
};

namespace pmem {
namespace internal {

/* Owns one file-backed kind: the allocator's kind. */
class kind_wrapper_t : public libmemkind::internal::kind_owner {
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
    check(err, "pmem");
  }
  kind_wrapper_t(const std::string &dir, std::size_t max_size,
                 libmemkind::allocation_policy policy = libmemkind::allocation_policy::DEFAULT)
      : kind_wrapper_t(dir.c_str(), max_size, policy) {}
};

}  // namespace internal

template <typename T>
using allocator = libmemkind::internal::owned_kind_allocator<T, internal::kind_wrapper_t>;

}  // namespace pmem
}  // namespace libmemkind

#endif /* SICM_PMEM_ALLOCATOR_H */
