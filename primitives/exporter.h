// Renders every registered counter family (primitives/counter.h) in the
// Prometheus text exposition format 0.0.4 or OpenMetrics 1.0, for a scrape
// endpoint, a push gateway or a log line.
//
//   std::string body = percpu::RenderMetrics();               // Prometheus
//   std::string om = percpu::RenderMetrics(
//       {percpu::ExpositionFormat::kOpenMetrics});             // OpenMetrics
//
// Every family's items are counters: "# HELP" (omitted when the help text is
// empty), "# TYPE <name> counter" and
// one sample "<name>_total <value>" (Prometheus text names the family
// <name>_total, OpenMetrics names it <name> and ends the body with
// "# EOF"). Families are rendered in metric-name order. A PacketCounter's
// two series come from one fold (a consistent pair). With per_cpu, each
// series gets a label cpu="<id>" per present CPU plus cpu="other" (counts
// folded from CPUs that went offline, adds that found no CPU slot); they sum
// to the total up to the adds made during the render. A per-CPU series falls
// back to 0 when its CPU goes offline (Prometheus treats that as a counter
// reset; rate() copes) and cpu="other" grows by as much.
//
// The exporter never starts a server (see examples/metrics_server.cc for a
// loopback HTTP endpoint). Thread-safe; it takes the registry mutex, so it
// must not run inside a hotplug callback or a signal handler.
#ifndef PERCPU_PRIMITIVES_EXPORTER_H_
#define PERCPU_PRIMITIVES_EXPORTER_H_

#include <string>

namespace percpu {

enum class ExpositionFormat {
  kPrometheusText,  // text/plain; version=0.0.4
  kOpenMetrics,     // application/openmetrics-text; version=1.0.0
};

struct ExportOptions {
  ExpositionFormat format = ExpositionFormat::kPrometheusText;
  // A cpu label per present CPU (and cpu="other"); off: one series each.
  bool per_cpu = false;
};

std::string RenderMetrics(const ExportOptions& options = {});

// The Content-Type header value for a format.
const char* ContentType(ExpositionFormat format);

// The format to answer an HTTP Accept header with: OpenMetrics if the
// client accepts application/openmetrics-text, else the Prometheus text
// format.
ExpositionFormat NegotiateFormat(const std::string& accept_header);

}  // namespace percpu

#endif  // PERCPU_PRIMITIVES_EXPORTER_H_
