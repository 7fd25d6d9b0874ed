// The Gloo communicator for CPU tensors: the network device it listens on
// (GLOO_SOCKET_IFNAME, else the address toward the coordinator), its
// rendezvous, and the exit code of a failure on one of Gloo's own threads.
#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <typeinfo>

#include "fastnn/errors.h"
#include "src/config/value_parse.h"
#include "src/dist/process_group.h"
#include "src/dist/process_group_collective.h"

namespace fastnn::dist {
namespace {

std::shared_ptr<::gloo::transport::Device> gloo_device(const std::string& host) {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname) {
    try {
      return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
    } catch (const std::exception& e) {
      throw ConfigError(
          "GLOO_SOCKET_IFNAME=" + config::quote_value(ifname) +
          " names no usable network interface: " + std::string(e.what()).substr(0, 200));
    }
  }
  std::string address = host.empty() ? "" : local_address_toward(host);
  if (address.empty()) address = "127.0.0.1";
  try {
    return c10d::ProcessGroupGloo::createDeviceForHostname(address);
  } catch (const std::exception& e) {
    throw DistributedError("Gloo cannot listen on " + address +
                           " (the address toward the "
                           "coordinator " +
                           host + "): " + std::string(e.what()).substr(0, 200));
  }
}

// Gloo fails some checks (a message longer than the buffer posted for it)
// on its own transport threads, where nothing can catch them: std::terminate
// would abort (exit 134). The job's contract is exit 5 with a message.
std::terminate_handler previous_terminate = nullptr;

[[noreturn]] void gloo_terminate() {
  // gloo::EnforceNotMet and gloo::Exception, told by their type's mangled
  // name: their type_info lives in libgloo, which a LibTorch build may hide.
  std::string what;
  try {
    if (auto e = std::current_exception()) std::rethrow_exception(e);
  } catch (const std::exception& e) {
    if (std::string(typeid(e).name()).rfind("N4gloo", 0) == 0) what = e.what();
  } catch (...) {
  }
  if (what.empty()) {
    if (previous_terminate) previous_terminate();
    std::abort();
  }
  std::fprintf(stderr,
               "%s: error: distributed failure: Gloo failed on one of its threads: %s (the "
               "workers' collectives differ in size, or a peer sent malformed data)\n",
               program_invocation_short_name, what.substr(0, 400).c_str());
  std::fflush(stderr);
  std::_Exit(kExitDistributed);
}

}  // namespace

std::string local_address_toward(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), "9", &hints, &found) != 0 || !found) return "";
  std::string result;
  // A UDP connect() sends nothing; it only asks the kernel for the route.
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
    sockaddr_in local{};
    socklen_t len = sizeof(local);
    char text[INET_ADDRSTRLEN] = {};
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0 &&
        inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text))) {
      result = text;
    }
  }
  if (fd >= 0) close(fd);
  freeaddrinfo(found);
  return result;
}

std::unique_ptr<Collective> connect_gloo(c10::intrusive_ptr<c10d::Store> store,
                                         const CommunicatorOptions& options) {
  static std::once_flag installed;
  std::call_once(installed, [] { previous_terminate = std::set_terminate(gloo_terminate); });
  auto o = c10d::ProcessGroupGloo::Options::create(options.timeout);
  o->devices.push_back(gloo_device(options.coordinator_host));
  // Two Gloo threads (c10d's default from Python): one bucket's transfer
  // proceeds while the previous one's reduction runs. Collectives still
  // match across ranks by their issue order (c10d tags them).
  o->threads = 2;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group;
  try {
    group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, options.rank, options.world_size, o);
  } catch (const DistributedError&) {
    throw;
  } catch (const std::exception& e) {
    throw DistributedError("Gloo rendezvous of " + std::to_string(options.world_size) +
                           " workers (rank " + std::to_string(options.rank) +
                           ") failed: " + std::string(e.what()).substr(0, 400));
  }
  return std::make_unique<ProcessGroupCollective>("Gloo", std::move(store), std::move(group),
                                                  options, torch::Device(torch::kCPU));
}

}  // namespace fastnn::dist
