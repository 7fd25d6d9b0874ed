// Input-pipeline micro-benchmark: decode + preprocess images held in memory,
// the work of the pipeline's worker threads without the file reading.
//
//   input_bench make_jpegs DIR N   N photograph-like 500x375 JPEGs (q90, 4:2:0)
//   input_bench make_pngs DIR N    N CIFAR-like 32x32 RGB PNGs
//   input_bench run DIR NAME SIZE THREADS SECONDS [FAST]
//       the train variant of preprocessing NAME to SIZE x SIZE on every
//       *.jpg / *.png in DIR, round robin, THREADS threads, for SECONDS;
//       FAST (default 1) is hparams fast_jpeg_decode; "cached" decodes every
//       file once beforehand and times the preprocessing of the decoded
//       images (datasets_use_caching's later epochs). Prints images/sec
//       (wall clock) and images per CPU-second (per core actually used).
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "preprocessing/preprocessing_factory.h"
#include "src/io/atomic_file.h"
#include "src/io/image.h"

namespace {
namespace fs = std::filesystem;
using fastnn::io::Image;

// Smooth illumination gradient, a textured background (a few random
// sinusoids), random ellipses and rectangles with hard edges and their own
// shading, and sensor-like noise. Not flat color: JPEG blocks carry AC
// energy at every frequency, as in photographs.
Image photo(int height, int width, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::normal_distribution<float> noise(0.0f, 5.0f);
  Image img;
  img.height = height;
  img.width = width;
  img.channels = 3;
  img.pixels.resize(size_t(height) * width * 3);
  float base[3], grad[3][2], wave[6][4];
  for (int c = 0; c < 3; ++c) {
    base[c] = 40 + 150 * u(rng);
    grad[c][0] = (u(rng) - 0.5f) * 120 / height;
    grad[c][1] = (u(rng) - 0.5f) * 120 / width;
  }
  for (auto& w : wave) {
    w[0] = 0.02f + 1.2f * u(rng) * u(rng);  // frequency, mostly low
    w[1] = 6.28f * u(rng);                  // direction
    w[2] = 6.28f * u(rng);                  // phase
    w[3] = 4 + 14 * u(rng);                 // amplitude
  }
  struct Shape {
    bool ellipse;
    float cy, cx, ry, rx, color[3], shade;
  };
  std::vector<Shape> shapes(3 + rng() % 6);
  for (auto& s : shapes) {
    s.ellipse = u(rng) < 0.5f;
    s.cy = height * u(rng);
    s.cx = width * u(rng);
    s.ry = height * (0.05f + 0.3f * u(rng));
    s.rx = width * (0.05f + 0.3f * u(rng));
    for (float& c : s.color) c = 255 * u(rng);
    s.shade = 0.3f + 0.7f * u(rng);
  }
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      float texture = 0;
      for (const auto& w : wave) {
        texture += w[3] * std::sin(w[0] * (x * std::cos(w[1]) + y * std::sin(w[1])) + w[2]);
      }
      float v[3];
      for (int c = 0; c < 3; ++c) v[c] = base[c] + grad[c][0] * y + grad[c][1] * x + texture;
      for (const auto& s : shapes) {
        const float dy = (y - s.cy) / s.ry, dx = (x - s.cx) / s.rx;
        const bool inside =
            s.ellipse ? dy * dy + dx * dx < 1 : std::abs(dy) < 1 && std::abs(dx) < 1;
        if (!inside) continue;
        const float light = 1 - s.shade * 0.5f * (dy + 1);
        for (int c = 0; c < 3; ++c) v[c] = s.color[c] * light + 0.3f * texture;
      }
      for (int c = 0; c < 3; ++c) {
        img.pixels[(size_t(y) * width + x) * 3 + c] =
            static_cast<uint8_t>(std::clamp(v[c] + noise(rng), 0.0f, 255.0f));
      }
    }
  }
  return img;
}

int make(const std::string& dir, int n, bool jpeg) {
  fs::create_directories(dir);
  size_t bytes = 0;
  for (int i = 0; i < n; ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "img%05d.%s", i, jpeg ? "jpg" : "png");
    const Image img = jpeg ? photo(375, 500, i) : photo(32, 32, i);
    const std::string data = jpeg ? fastnn::io::encode_jpeg(img, 90) : fastnn::io::encode_png(img);
    bytes += data.size();
    fastnn::io::write_file_atomic((fs::path(dir) / name).string(), data);
  }
  std::printf("wrote %d %s files, mean %.1f KB\n", n, jpeg ? "JPEG" : "PNG",
              bytes / 1024.0 / std::max(n, 1));
  return 0;
}

// CPU seconds (user + system) this process has used, all threads.
double cpu_seconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  auto sec = [](const timeval& t) { return t.tv_sec + t.tv_usec * 1e-6; };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

int run(const std::string& dir, const std::string& name, int size, int threads, double seconds,
        const std::string& mode) {
  const bool fast = mode != "0";
  const bool cached = mode == "cached";
  std::vector<std::string> blobs;
  std::vector<fs::path> paths;
  for (const auto& e : fs::directory_iterator(dir)) {
    const auto ext = e.path().extension();
    if (ext == ".jpg" || ext == ".png") paths.push_back(e.path());
  }
  std::sort(paths.begin(), paths.end());
  for (const auto& p : paths) blobs.push_back(fastnn::io::read_file(p.string()));
  if (blobs.empty()) {
    std::fprintf(stderr, "input_bench: no .jpg/.png in %s\n", dir.c_str());
    return 2;
  }
  const fastnn::preprocessing::OutputShape shape{3, size, size};
  fastnn::preprocessing::PreprocessOptions po;
  po.fast_jpeg_decode = fast;
  const auto fn = fastnn::preprocessing::get_preprocessing(name, shape, true, po);
  const auto from_pixels = fastnn::preprocessing::get_decoded_preprocessing(name, shape, true, po);
  std::vector<Image> decoded;
  if (cached) {
    for (const auto& b : blobs) decoded.push_back(fastnn::io::decode_image(b, 3));
  }
  std::atomic<bool> stop{false};
  std::vector<int64_t> counts(threads, 0);
  auto work = [&](int t) {
    std::vector<float> out(shape.numel());
    std::mt19937_64 rng(t);
    int64_t done = 0;  // local: a shared counter line would ping-pong
    for (size_t i = t; !stop.load(std::memory_order_relaxed); i += threads) {
      if (cached) {
        from_pixels(decoded[i % decoded.size()], rng, out.data());
      } else {
        fn({blobs[i % blobs.size()], 3}, rng, out.data());
      }
      ++done;
    }
    counts[t] = done;
  };
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = cpu_seconds();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(work, t);
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& th : pool) th.join();
  const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu = cpu_seconds() - cpu_start;
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  // images_per_cpu_sec: per core actually used, which stays meaningful when
  // other jobs take the machine's cores away (then cpu_share < threads).
  std::printf(
      "input_bench %s size=%d threads=%d fast_jpeg_decode=%s images=%lld "
      "images_per_sec=%.1f images_per_cpu_sec=%.1f cpu_share=%.2f\n",
      name.c_str(), size, threads,
      cached ? "cached"
      : fast ? "1"
             : "0",
      static_cast<long long>(total), total / dt, total / cpu, cpu / dt);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> a(argv + 1, argv + argc);
  try {
    if (a.size() == 3 && (a[0] == "make_jpegs" || a[0] == "make_pngs")) {
      return make(a[1], std::stoi(a[2]), a[0] == "make_jpegs");
    }
    if ((a.size() == 6 || a.size() == 7) && a[0] == "run") {
      return run(a[1], a[2], std::stoi(a[3]), std::stoi(a[4]), std::stod(a[5]),
                 a.size() == 6 ? "1" : a[6]);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "input_bench: %s\n", e.what());
    return 3;
  }
  std::fprintf(stderr,
               "usage: input_bench make_jpegs DIR N | make_pngs DIR N |\n"
               "       input_bench run DIR NAME SIZE THREADS SECONDS [1|0|cached]\n");
  return 2;
}
