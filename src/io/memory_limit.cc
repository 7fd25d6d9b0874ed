#include "src/io/memory_limit.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "fastnn/errors.h"
#include "src/io/atomic_file.h"

namespace fastnn::io {
namespace {

namespace fs = std::filesystem;

// The limit in `file`, or `none` when there is no file, it says "max" or
// its text is not a number.
double limit_in(const fs::path& file, double none) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return none;
  try {
    const std::string text = read_file(file.string(), 4096);
    size_t used = 0;
    const double v = std::stod(text, &used);
    return used > 0 && v > 0 ? v : none;
  } catch (const std::exception&) {
    return none;
  }
}

// The smallest `name` limit from `dir` up to `top`; a namespaced container
// sees its own cgroup at the top, so the top itself is always read.
double smallest_limit(fs::path dir, const fs::path& top, const char* name, double none) {
  double smallest = none;
  for (;;) {
    smallest = std::min(smallest, limit_in(dir / name, none));
    if (dir == top || !dir.has_parent_path() || dir.parent_path() == dir) break;
    dir = dir.parent_path();
  }
  return std::min(smallest, limit_in(top / name, none));
}

}  // namespace

double usable_memory_bytes(const std::string& cgroup_root, const std::string& self_cgroup,
                           double physical_bytes) {
  const fs::path root = cgroup_root;
  double usable = physical_bytes > 0 ? physical_bytes : 1e300;
  std::istringstream lines(self_cgroup);
  // "ID:CONTROLLERS:PATH": v2's one line is "0::PATH"; v1's memory line
  // names "memory" among its controllers.
  for (std::string line; std::getline(lines, line);) {
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const fs::path path = fs::path(line.substr(b + 1)).relative_path();
    if (controllers.empty()) {
      usable = std::min(usable, smallest_limit(root / path, root, "memory.max", usable));
    }
    std::istringstream names(controllers);
    for (std::string c; std::getline(names, c, ',');) {
      if (c != "memory") continue;
      const fs::path top = root / "memory";
      usable = std::min(usable, smallest_limit(top / path, top, "memory.limit_in_bytes", usable));
    }
  }
  return usable >= 1e300 ? 0 : usable;
}

double usable_memory_bytes() {
  const double physical =
      static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  std::string self;
  try {
    self = read_file("/proc/self/cgroup", 1 << 16);
  } catch (const DataError&) {
    return physical > 0 ? physical : 0;
  }
  return usable_memory_bytes("/sys/fs/cgroup", self, physical);
}

}  // namespace fastnn::io
