#include "src/log/failure.h"

#include <iostream>

#include "fastnn/errors.h"

namespace fastnn {

Failure failure_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const ConfigError& x) {
    return {kExitUsage, "error: ", x.what()};
  } catch (const DataError& x) {
    return {kExitData, "data error: ", x.what()};
  } catch (const DivergedError& x) {
    return {kExitDiverged, "training diverged: ", x.what()};
  } catch (const DistributedError& x) {
    return {kExitDistributed, "distributed failure: ", x.what()};
  } catch (const OutOfMemoryError& x) {
    return {kExitOutOfMemory, "", x.what()};
  } catch (const std::exception& x) {
    return {kExitInternal, "internal error: ", x.what()};
  } catch (...) {
    return {kExitInternal, "internal error: ", "an exception of unknown type"};
  }
}

int report_failure(const std::string& program, const Failure& failure) {
  std::cerr << program << ": " << failure.kind << failure.what << "\n";
  return failure.exit_code;
}

}  // namespace fastnn
