// The tests' way to look at an error message: run the code, catch the one
// exception type the check is about, and hand back its what().
#pragma once

#include <functional>
#include <string>

namespace fastnn::testing {

/// The message of the `E` that `fn` throws, or `none` when it throws none.
/// Any other exception propagates (and fails the test).
template <typename E>
std::string error_of(const std::function<void()>& fn, const std::string& none = "") {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  return none;
}

}  // namespace fastnn::testing
