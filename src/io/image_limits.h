// What every image decoder of src/io checks before it allocates: the size
// bound and the channels argument.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace fastnn::io {

/// Upper bound on decoded pixels, so a forged header cannot demand gigabytes.
inline constexpr uint64_t kMaxImagePixels = uint64_t{1} << 28;

inline bool image_size_ok(int64_t width, int64_t height) {
  return width > 0 && height > 0 &&
         static_cast<uint64_t>(width) * static_cast<uint64_t>(height) <= kMaxImagePixels;
}

inline std::string image_size_error(int64_t width, int64_t height) {
  return "size " + std::to_string(width) + "x" + std::to_string(height) + " is empty or too large";
}

/// REQUIRES-style check of a decoder's channels argument (0, 1 or 3).
inline void check_channels(int channels, const char* fn) {
  if (channels != 0 && channels != 1 && channels != 3) {
    throw std::invalid_argument(std::string(fn) + ": channels must be 0, 1 or 3, got " +
                                std::to_string(channels));
  }
}

}  // namespace fastnn::io
