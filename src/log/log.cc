#include "src/log/log.h"

#include <atomic>
#include <cstdio>

namespace fastnn::log {
namespace {

std::atomic<int> g_rank{0};
std::atomic<int> g_world{1};

}  // namespace

void set_rank(int rank, int world_size) {
  g_rank = rank;
  g_world = world_size;
}

Line::~Line() {
  if (sink_ == Sink::kNone) return;
  std::string text;
  if (g_world > 1) text = "[rank " + std::to_string(g_rank) + "] ";
  text += tag_;
  text += os_.str();
  text += '\n';
  std::FILE* f = sink_ == Sink::kStderr ? stderr : stdout;
  std::fwrite(text.data(), 1, text.size(), f);
  std::fflush(f);
}

Line info() { return Line(Line::Sink::kStdout, ""); }

Line chief() { return Line(g_rank == 0 ? Line::Sink::kStdout : Line::Sink::kNone, ""); }

Line warning() { return Line(Line::Sink::kStderr, "warning: "); }

}  // namespace fastnn::log
