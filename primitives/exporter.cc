#include "primitives/exporter.h"

#include <cinttypes>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "primitives/internal/family.h"

namespace percpu {
namespace {

// HELP text escaping: backslash and line feed in both formats; OpenMetrics
// also escapes the double quote.
std::string EscapeHelp(const std::string& s, ExpositionFormat format) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && format == ExpositionFormat::kOpenMetrics) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

void AppendSample(std::string& out, const std::string& name, const char* cpu,
                  uint64_t value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%" PRIu64, value);
  out += name;
  out += "_total";
  if (cpu != nullptr) {
    out += "{cpu=\"";
    out += cpu;
    out += "\"}";
  }
  out += ' ';
  out += buf;
  out += '\n';
}

}  // namespace

const char* ContentType(ExpositionFormat format) {
  return format == ExpositionFormat::kOpenMetrics
             ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
             : "text/plain; version=0.0.4; charset=utf-8";
}

ExpositionFormat NegotiateFormat(const std::string& accept_header) {
  return accept_header.find("application/openmetrics-text") != std::string::npos
             ? ExpositionFormat::kOpenMetrics
             : ExpositionFormat::kPrometheusText;
}

std::string RenderMetrics(const ExportOptions& options) {
  const bool om = options.format == ExpositionFormat::kOpenMetrics;
  std::string out;
  std::lock_guard<std::mutex> lock(internal::RegistryMutex());
  // A family is read once (one fold for all its metrics), when its first
  // metric name comes up; its metrics are then rendered in name order.
  std::map<const internal::FamilyCore*, std::vector<uint64_t>> totals;
  std::map<const internal::FamilyCore*, std::vector<internal::PerCpuValues>>
      per_cpu;
  for (const auto& entry : internal::RegistryLocked()) {
    const internal::FamilyCore* family = entry.second;
    if (totals.count(family) == 0) {
      if (options.per_cpu) per_cpu[family] = family->PerCpu();
      totals[family] = family->Totals();
    }
    size_t index = 0;
    while (family->metrics()[index].name != entry.first) ++index;
    const internal::MetricInfo& metric = family->metrics()[index];
    const std::string family_name = om ? metric.name : metric.name + "_total";
    if (!metric.help.empty()) {  // no HELP line rather than an empty one
      out += "# HELP " + family_name + " " +
             EscapeHelp(metric.help, options.format) + "\n";
    }
    out += "# TYPE " + family_name + " counter\n";
    const uint64_t total = totals[family][index];
    if (!options.per_cpu) {
      AppendSample(out, metric.name, nullptr, total);
      continue;
    }
    const std::vector<internal::PerCpuValues>& rows = per_cpu[family];
    if (rows.empty()) {  // degraded: no per-CPU slots, all in "other"
      AppendSample(out, metric.name, "other", total);
      continue;
    }
    for (const internal::PerCpuValues& row : rows) {
      const std::string cpu = row.cpu < 0 ? "other" : std::to_string(row.cpu);
      AppendSample(out, metric.name, cpu.c_str(), row.values[index]);
    }
  }
  if (om) out += "# EOF\n";
  return out;
}

}  // namespace percpu
