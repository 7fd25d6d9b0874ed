#include "src/train/tool_main.h"

#include <c10/util/Exception.h>

#include <iostream>

#include "fastnn/errors.h"
#include "src/io/protobuf_log.h"

namespace fastnn::train {

int tool_main(int argc,
              char** argv,
              const std::string& program,
              const std::string& usage,
              const std::function<int(LoadResult&)>& body,
              const std::vector<std::string>& extra_keys) {
  io::route_protobuf_log();
  try {
    LoadResult args = load_hparams(argc, argv, extra_keys);
    if (args.help) {
      std::cout << format_help(program, usage);
      return kExitOk;
    }
    if (args.version) {
      std::cout << program << " " << FASTNN_VERSION << "\n";
      return kExitOk;
    }
    for (const auto& w : args.warnings) std::cerr << "warning: " << w << "\n";
    return body(args);
  } catch (const ConfigError& e) {
    std::cerr << program << ": error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const DataError& e) {
    std::cerr << program << ": data error: " << e.what() << "\n";
    return kExitData;
  } catch (const DivergedError& e) {
    std::cerr << program << ": training diverged: " << e.what() << "\n";
    return kExitDiverged;
  } catch (const DistributedError& e) {
    std::cerr << program << ": distributed failure: " << e.what() << "\n";
    return kExitDistributed;
  } catch (const c10::Error& e) {
    std::cerr << program << ": internal error (LibTorch): "
              << e.what_without_backtrace() << "\n";
    return kExitInternal;
  } catch (const std::exception& e) {
    std::cerr << program << ": internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}

int exit_code_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const ConfigError&) {
    return kExitUsage;
  } catch (const DataError&) {
    return kExitData;
  } catch (const DivergedError&) {
    return kExitDiverged;
  } catch (const DistributedError&) {
    return kExitDistributed;
  } catch (...) {
    return kExitInternal;
  }
}

}  // namespace fastnn::train
