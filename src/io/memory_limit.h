// The memory this process may use: the machine's RAM, or less where a
// container's cgroup says so. Budgets sized from RAM alone (the decoded-image
// caches) end in the kernel's OOM kill inside a pod whose limit is lower.
#pragma once

#include <string>

namespace fastnn::io {

/// The smaller of physical memory and the memory limits of this process's
/// cgroup and its ancestors (v2 memory.max, v1 memory.limit_in_bytes), in
/// bytes; 0 when nothing can be read.
double usable_memory_bytes();

/// The same, from a cgroup file system mounted at `cgroup_root` (with v1's
/// controllers in subfolders, as /sys/fs/cgroup), the text of
/// /proc/self/cgroup and the physical memory: for tests.
double usable_memory_bytes(const std::string& cgroup_root, const std::string& self_cgroup,
                           double physical_bytes);

}  // namespace fastnn::io
