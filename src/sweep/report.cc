#include "src/sweep/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "fastnn/byte_source.h"
#include "fastnn/event.pb.h"
#include "fastnn/tfrecord.h"

namespace fastnn::sweep {
namespace fs = std::filesystem;
namespace {

std::string esc(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string fixed(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

bool parse_number(const std::string& s, double* v) {
  char* end = nullptr;
  *v = std::strtod(s.c_str(), &end);
  return !s.empty() && end && *end == '\0' && std::isfinite(*v);
}

// Colour of a metric value in [lo, hi]: dark blue (worst) to yellow (best).
std::string colour(double v, double lo, double hi) {
  const double t = hi > lo ? std::clamp((v - lo) / (hi - lo), 0.0, 1.0) : 1.0;
  const int r = static_cast<int>(68 + t * (253 - 68));
  const int g = static_cast<int>(1 + t * (231 - 1));
  const int b = static_cast<int>(84 + t * (37 - 84));
  char buf[16];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", r, g, b);
  return buf;
}

// One axis of a parameter: numeric (linear or log) or categorical.
struct Axis {
  bool numeric = true;
  bool log = false;
  double lo = 0, hi = 1;
  std::vector<std::string> categories;
  // Position in [0, 1]; nullopt for a trial without the parameter.
  std::optional<double> at(const std::string& value) const {
    if (value.empty()) return std::nullopt;
    if (!numeric) {
      auto it = std::find(categories.begin(), categories.end(), value);
      if (it == categories.end()) return std::nullopt;
      return categories.size() == 1
                 ? 0.5
                 : static_cast<double>(it - categories.begin()) / (categories.size() - 1);
    }
    double v = 0;
    if (!parse_number(value, &v)) return std::nullopt;
    if (hi <= lo) return 0.5;
    // A failed trial's value outside the others' range sits at the edge.
    v = std::clamp(v, lo, hi);
    return log ? (std::log(v) - std::log(lo)) / (std::log(hi) - std::log(lo))
               : (v - lo) / (hi - lo);
  }
  std::string label(double t) const {
    if (!numeric) return "";
    return num(log ? std::exp(std::log(lo) + t * (std::log(hi) - std::log(lo)))
                   : lo + t * (hi - lo));
  }
};

// The axis spans the trials with a metric (a diverged trial's huge learning
// rate would squash the rest), or every trial when none has one.
Axis axis_for(const std::string& name, const std::vector<TrialResult>& results) {
  Axis a;
  std::vector<double> values;
  std::vector<std::string> seen;
  const bool any_metric = std::any_of(results.begin(), results.end(),
                                      [](const TrialResult& r) { return r.has_metric; });
  for (const auto& r : results) {
    if (any_metric && !r.has_metric) continue;
    auto it = r.params.find(name);
    if (it == r.params.end()) continue;
    double v = 0;
    if (parse_number(it->second, &v)) {
      values.push_back(v);
    } else {
      a.numeric = false;
    }
    if (std::find(seen.begin(), seen.end(), it->second) == seen.end()) seen.push_back(it->second);
  }
  if (!a.numeric || values.empty()) {
    a.numeric = false;
    a.categories = seen;
    std::sort(a.categories.begin(), a.categories.end());
    return a;
  }
  a.lo = *std::min_element(values.begin(), values.end());
  a.hi = *std::max_element(values.begin(), values.end());
  a.log = a.lo > 0 && a.hi / a.lo >= 20;  // spans decades: log scale
  return a;
}

std::vector<std::string> param_names(const std::vector<TrialResult>& results) {
  std::set<std::string> names;
  for (const auto& r : results) {
    for (const auto& [k, v] : r.params) names.insert(k);
  }
  return {names.begin(), names.end()};
}

// The metric against one parameter.
std::string scatter(const std::string& name, const std::vector<TrialResult>& results, double mlo,
                    double mhi, const std::string& metric) {
  const Axis axis = axis_for(name, results);
  const double width = 300, height = 200, margin_left = 48, margin_bottom = 36, margin_top = 12,
               margin_right = 12;
  const double pw = width - margin_left - margin_right, ph = height - margin_top - margin_bottom;
  std::ostringstream svg;
  svg << "<figure><svg viewBox='0 0 " << width << " " << height << "' width='" << width
      << "' height='" << height << "' role='img'><title>" << esc(metric + " against " + name)
      << "</title>";
  svg << "<rect x='" << margin_left << "' y='" << margin_top << "' width='" << pw << "' height='"
      << ph << "' class='plot'/>";
  for (int i = 0; i <= 2; ++i) {
    const double pos = i / 2.0;
    const double py = margin_top + ph * (1 - pos);
    svg << "<text x='" << margin_left - 4 << "' y='" << py + 4
        << "' class='tick' text-anchor='end'>" << num(mlo + pos * (mhi - mlo)) << "</text>";
  }
  if (axis.numeric) {
    for (int i = 0; i <= 2; ++i) {
      const double pos = i / 2.0;
      svg << "<text x='" << margin_left + pw * pos << "' y='" << height - margin_bottom + 14
          << "' class='tick' text-anchor='middle'>" << axis.label(pos) << "</text>";
    }
  } else {
    for (const auto& category : axis.categories) {
      const double pos = *axis.at(category);
      svg << "<text x='" << margin_left + 10 + (pw - 20) * pos << "' y='"
          << height - margin_bottom + 14 << "' class='tick' text-anchor='middle'>" << esc(category)
          << "</text>";
    }
  }
  svg << "<text x='" << margin_left + pw / 2 << "' y='" << height - 4
      << "' class='label' text-anchor='middle'>" << esc(name) << (axis.log ? " (log)" : "")
      << "</text>";
  for (const auto& trial : results) {
    auto it = trial.params.find(name);
    if (it == trial.params.end()) continue;
    const auto pos = axis.at(it->second);
    if (!pos) continue;
    const double px = axis.numeric ? margin_left + pw * *pos : margin_left + 10 + (pw - 20) * *pos;
    if (trial.has_metric) {
      const double py =
          margin_top + ph * (1 - (mhi > mlo ? (trial.metric - mlo) / (mhi - mlo) : 0.5));
      svg << "<circle cx='" << px << "' cy='" << py << "' r='4' fill='"
          << colour(trial.metric, mlo, mhi) << "'><title>" << trial_name(trial.index) << ": "
          << num(trial.metric) << "</title></circle>";
    } else {
      const double py = margin_top + ph + 6;
      svg << "<text x='" << px << "' y='" << py + 4
          << "' class='fail' text-anchor='middle'>×<title>" << trial_name(trial.index) << ": "
          << esc(trial.status) << "</title></text>";
    }
  }
  svg << "</svg></figure>";
  return svg.str();
}

std::string parallel(const std::vector<std::string>& names, const std::vector<TrialResult>& results,
                     double mlo, double mhi, const std::string& metric) {
  const double width = 900, height = 300, margin_left = 40, margin_right = 60, margin_top = 24,
               margin_bottom = 40;
  const size_t axis_count = names.size() + 1;
  const double step = axis_count > 1 ? (width - margin_left - margin_right) / (axis_count - 1) : 0;
  std::vector<Axis> axes;
  for (const auto& name : names) axes.push_back(axis_for(name, results));
  std::ostringstream svg;
  svg << "<svg viewBox='0 0 " << width << " " << height << "' width='" << width << "' height='"
      << height << "' role='img'><title>parallel coordinates</title>";
  // Worst first, so the best lines are drawn on top.
  std::vector<const TrialResult*> order;
  for (const auto& trial : results) {
    if (trial.has_metric) order.push_back(&trial);
  }
  std::sort(order.begin(), order.end(), [](const TrialResult* lhs, const TrialResult* rhs) {
    return lhs->metric < rhs->metric;
  });
  for (const TrialResult* trial : order) {
    std::ostringstream pts;
    for (size_t i = 0; i < names.size(); ++i) {
      auto it = trial->params.find(names[i]);
      const auto pos = it == trial->params.end() ? std::nullopt : axes[i].at(it->second);
      if (!pos) continue;
      pts << margin_left + step * i << ","
          << margin_top + (height - margin_top - margin_bottom) * (1 - *pos) << " ";
    }
    const double mt = mhi > mlo ? (trial->metric - mlo) / (mhi - mlo) : 0.5;
    pts << margin_left + step * names.size() << ","
        << margin_top + (height - margin_top - margin_bottom) * (1 - mt);
    svg << "<polyline points='" << pts.str() << "' fill='none' stroke='"
        << colour(trial->metric, mlo, mhi) << "' stroke-width='2' opacity='0.85'><title>"
        << trial_name(trial->index) << ": " << num(trial->metric) << "</title></polyline>";
  }
  for (size_t i = 0; i < axis_count; ++i) {
    const double px = margin_left + step * i;
    svg << "<line x1='" << px << "' y1='" << margin_top << "' x2='" << px << "' y2='"
        << height - margin_bottom << "' class='axis'/>";
    const std::string name = i < names.size() ? names[i] : metric;
    svg << "<text x='" << px << "' y='" << height - margin_bottom + 16
        << "' class='label' text-anchor='middle'>" << esc(name) << "</text>";
    if (i < names.size() && !axes[i].numeric) {
      for (const auto& category : axes[i].categories) {
        svg << "<text x='" << px + 4 << "' y='"
            << margin_top + (height - margin_top - margin_bottom) * (1 - *axes[i].at(category)) + 4
            << "' class='tick'>" << esc(category) << "</text>";
      }
    } else {
      const std::string top = i < names.size() ? axes[i].label(1) : num(mhi);
      const std::string bottom = i < names.size() ? axes[i].label(0) : num(mlo);
      svg << "<text x='" << px + 4 << "' y='" << margin_top + 4 << "' class='tick'>" << top
          << "</text>";
      svg << "<text x='" << px + 4 << "' y='" << height - margin_bottom << "' class='tick'>"
          << bottom << "</text>";
    }
  }
  svg << "</svg>";
  return svg.str();
}

std::string curves_chart(const std::string& tag, const std::vector<const TrialResult*>& top,
                         const std::vector<Curve>& curves) {
  const double width = 440, height = 240, margin_left = 66, margin_right = 12, margin_top = 12,
               margin_bottom = 36;
  int64_t smax = 1;
  double vlo = INFINITY, vhi = -INFINITY;
  for (const auto& curve : curves) {
    for (const auto& [step, value] : curve) {
      if (!std::isfinite(value)) continue;
      smax = std::max(smax, step);
      vlo = std::min(vlo, value);
      vhi = std::max(vhi, value);
    }
  }
  std::ostringstream svg;
  svg << "<figure><svg viewBox='0 0 " << width << " " << height << "' width='" << width
      << "' height='" << height << "' role='img'><title>" << esc(tag)
      << " of the best trials</title>";
  svg << "<rect x='" << margin_left << "' y='" << margin_top << "' width='"
      << width - margin_left - margin_right << "' height='" << height - margin_top - margin_bottom
      << "' class='plot'/>";
  if (!(vhi >= vlo)) {
    svg << "<text x='" << width / 2 << "' y='" << height / 2
        << "' text-anchor='middle' class='label'>"
        << "no " << esc(tag) << " summaries</text></svg></figure>";
    return svg.str();
  }
  if (vhi == vlo) vhi = vlo + 1;
  // A diverging loss spans decades: log scale then.
  const bool log = vlo > 0 && vhi / vlo > 100;
  auto y_of = [&](double value) {
    const double pos = log ? (std::log(value) - std::log(vlo)) / (std::log(vhi) - std::log(vlo))
                           : (value - vlo) / (vhi - vlo);
    return margin_top + (height - margin_top - margin_bottom) * (1 - pos);
  };
  const char* palette[] = {"#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e"};
  for (size_t k = 0; k < curves.size(); ++k) {
    std::ostringstream pts;
    for (const auto& [step, value] : curves[k]) {
      if (!std::isfinite(value)) continue;
      pts << margin_left + (width - margin_left - margin_right) * static_cast<double>(step) / smax
          << "," << y_of(value) << " ";
    }
    svg << "<polyline points='" << pts.str() << "' fill='none' stroke='" << palette[k % 5]
        << "' stroke-width='2'><title>" << trial_name(top[k]->index) << "</title></polyline>";
    svg << "<text x='" << margin_left + 6 << "' y='" << margin_top + 14 + 13 * k
        << "' class='tick' fill='" << palette[k % 5] << "'>" << trial_name(top[k]->index)
        << "</text>";
  }
  svg << "<text x='" << margin_left - 4 << "' y='" << margin_top + 8
      << "' class='tick' text-anchor='end'>" << num(vhi) << "</text><text x='" << margin_left - 4
      << "' y='" << height - margin_bottom << "' class='tick' text-anchor='end'>" << num(vlo)
      << "</text>";
  svg << "<text x='" << width - margin_right << "' y='" << height - margin_bottom + 14
      << "' class='tick' text-anchor='end'>" << smax << "</text>";
  svg << "<text x='" << margin_left + (width - margin_left - margin_right) / 2 << "' y='"
      << height - 4 << "' class='label' text-anchor='middle'>" << esc(tag) << " by step"
      << (log ? " (log)" : "") << "</text>";
  svg << "</svg></figure>";
  return svg.str();
}

}  // namespace

Curve read_scalar(const std::string& train_dir, const std::string& tag) {
  std::map<int64_t, double> by_step;
  std::error_code ec;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(train_dir, ec)) {
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0) {
      files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    try {
      io::TFRecordReader reader(io::open_file(f.string()));
      std::string record;
      while (reader.next(&record)) {
        tfproto::Event event;
        if (!event.ParseFromString(record) || !event.has_summary()) continue;
        for (const auto& v : event.summary().value()) {
          if (v.tag() == tag) by_step[event.step()] = v.simple_value();
        }
      }
    } catch (const std::exception&) {
      // A torn or foreign file: whatever was read before stays.
    }
  }
  return {by_step.begin(), by_step.end()};
}

std::string report_html(const std::vector<TrialResult>& results, const std::string& metric,
                        const std::string& title) {
  const auto names = param_names(results);
  double mlo = INFINITY, mhi = -INFINITY;
  std::map<std::string, int> statuses;
  for (const auto& trial : results) {
    ++statuses[trial.status];
    if (!trial.has_metric) continue;
    mlo = std::min(mlo, trial.metric);
    mhi = std::max(mhi, trial.metric);
  }
  if (!(mhi >= mlo)) mlo = 0, mhi = 1;
  std::ostringstream html;
  html << "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>" << esc(title)
       << "</title><style>"
          "body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:960px;color:#222}"
          "h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}"
          "figure{display:inline-block;margin:6px}svg{background:#fff}"
          ".plot{fill:#fafafa;stroke:#ccc}.axis{stroke:#888}.tick{font-size:10px;fill:#555}"
          ".label{font-size:12px;fill:#222}.fail{font-size:13px;fill:#c0392b}"
          "pre{background:#f4f4f4;padding:10px;border:1px solid #ddd;user-select:all}"
          "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ddd;padding:3px "
          "6px}"
          "th{background:#f0f0f0}tr.best{background:#fff7d6}.st-ok{color:#1e8449}"
          ".st-diverged,.st-failed,.st-no_metric{color:#c0392b}"
          "</style></head><body>";
  html << "<h1>" << esc(title) << "</h1><p>" << results.size() << " trials";
  for (const auto& [status, count] : statuses) html << " · " << count << " " << esc(status);
  html << " · ranked by <b>" << esc(metric) << "</b> (higher is better).</p>";
  const TrialResult* best = nullptr;
  for (const auto& trial : results) {
    if (trial.has_metric) {
      best = &trial;
      break;
    }
  }
  if (best) {
    html << "<h2>Best configuration</h2><p>" << trial_name(best->index) << ": " << esc(metric)
         << " = <b>" << num(best->metric) << "</b> after " << best->final_step << " steps, "
         << fixed(best->wall_secs) << " s. Its parameters, to paste into a config file:</p><pre>";
    for (const auto& [key, value] : best->params) html << esc(key) << "=" << esc(value) << "\n";
    html << "</pre>";
  }
  html << "<h2>" << esc(metric) << " against each parameter</h2>";
  for (const auto& name : names) html << scatter(name, results, mlo, mhi, metric);
  if (!names.empty()) {
    html << "<h2>Parallel coordinates</h2>" << parallel(names, results, mlo, mhi, metric);
  }
  std::vector<const TrialResult*> top;
  for (const auto& trial : results) {
    if (trial.has_metric && top.size() < 5) top.push_back(&trial);
  }
  if (!top.empty()) {
    html << "<h2>Training curves of the best " << top.size() << "</h2>";
    for (const char* tag : {"loss", "accuracy"}) {
      std::vector<Curve> curves;
      for (const auto* trial : top) curves.push_back(read_scalar(trial->dir, tag));
      html << curves_chart(tag, top, curves);
    }
  }
  html << "<h2>Every trial</h2><table><tr><th>trial</th><th>status</th><th>" << esc(metric)
       << "</th>";
  for (const auto& param : names) html << "<th>" << esc(param) << "</th>";
  html << "<th>steps</th><th>wall s</th><th>exit</th></tr>";
  for (const auto& trial : results) {
    html << "<tr" << (&trial == best ? " class='best'" : "") << "><td>" << trial_name(trial.index)
         << "</td><td class='st-" << esc(trial.status) << "'>" << esc(trial.status) << "</td><td>"
         << (trial.has_metric ? num(trial.metric) : "") << "</td>";
    for (const auto& param : names) {
      auto it = trial.params.find(param);
      html << "<td>" << (it == trial.params.end() ? "" : esc(it->second)) << "</td>";
    }
    html << "<td>" << trial.final_step << "</td><td>" << fixed(trial.wall_secs) << "</td><td>"
         << trial.exit_code << "</td></tr>";
  }
  html << "</table></body></html>\n";
  return html.str();
}

}  // namespace fastnn::sweep
