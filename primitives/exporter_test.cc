// The exporter's exact output in both formats, with and without the cpu
// label, on explicit simulated domains (every family of this binary is
// created by its test case, so the full text is known).
#include "primitives/exporter.h"

#include <string>

#include "doctest/doctest.h"
#include "primitives/counter.h"
#include "primitives/domain.h"
#include "primitives/status.h"

namespace percpu {
namespace {

TEST_CASE("Prometheus text format and OpenMetrics 1.0, exact text") {
  auto domain = Domain::Simulated(4, 4, 4);
  REQUIRE(domain.ok());
  Counter requests("requests", "Requests served.", domain->get());
  CounterSet<2> rx("rx", "Received.",
                   {{"packets", "Packets received."}, {"errors", ""}},
                   domain->get());
  PacketCounter tx("tx", "Transmitted", domain->get());
  requests.Add(41);
  requests.Inc();
  rx.Add(0, 7);
  rx.Add(1, 1);
  tx.Add(3, 300);

  CHECK(RenderMetrics() ==
        "# HELP requests_total Requests served.\n"
        "# TYPE requests_total counter\n"
        "requests_total 42\n"
        "# HELP rx_errors_total Received.\n"
        "# TYPE rx_errors_total counter\n"
        "rx_errors_total 1\n"
        "# HELP rx_packets_total Packets received.\n"
        "# TYPE rx_packets_total counter\n"
        "rx_packets_total 7\n"
        "# HELP tx_bytes_total Transmitted (bytes)\n"
        "# TYPE tx_bytes_total counter\n"
        "tx_bytes_total 300\n"
        "# HELP tx_packets_total Transmitted (packets)\n"
        "# TYPE tx_packets_total counter\n"
        "tx_packets_total 3\n");

  CHECK(RenderMetrics({ExpositionFormat::kOpenMetrics}) ==
        "# HELP requests Requests served.\n"
        "# TYPE requests counter\n"
        "requests_total 42\n"
        "# HELP rx_errors Received.\n"
        "# TYPE rx_errors counter\n"
        "rx_errors_total 1\n"
        "# HELP rx_packets Packets received.\n"
        "# TYPE rx_packets counter\n"
        "rx_packets_total 7\n"
        "# HELP tx_bytes Transmitted (bytes)\n"
        "# TYPE tx_bytes counter\n"
        "tx_bytes_total 300\n"
        "# HELP tx_packets Transmitted (packets)\n"
        "# TYPE tx_packets counter\n"
        "tx_packets_total 3\n"
        "# EOF\n");
}

TEST_CASE("cpu label: one series per present CPU plus cpu=\"other\"") {
  auto domain = Domain::Simulated(3, 3, 3);
  REQUIRE(domain.ok());
  Counter c("c", "C.", domain->get());
  PacketCounter p("p", "P.", domain->get());
  // The fallback writer with explicit CPU ids is internal to the types
  // underneath; Add() lands on whatever CPU runs this thread, so check the
  // per-CPU series sum to the total, and that offline CPUs move to "other".
  for (int i = 0; i < 10; ++i) c.Inc();
  p.Add(2, 20);
  std::string text = RenderMetrics({ExpositionFormat::kOpenMetrics, true});
  CHECK(text.find("c_total{cpu=\"0\"} ") != std::string::npos);
  CHECK(text.find("c_total{cpu=\"2\"} ") != std::string::npos);
  CHECK(text.find("c_total{cpu=\"other\"} ") != std::string::npos);
  CHECK(text.find("p_bytes_total{cpu=\"other\"} ") != std::string::npos);
  // Sum of c's series.
  auto sum_of = [&](const std::string& metric) {
    uint64_t sum = 0;
    size_t pos = 0;
    while ((pos = text.find("\n" + metric + "{", pos)) != std::string::npos) {
      const size_t space = text.find(' ', pos + 1);
      sum += std::stoull(text.substr(space + 1));
      pos = space;
    }
    return sum;
  };
  CHECK(sum_of("c_total") == 10);
  CHECK(sum_of("p_packets_total") == 2);
  CHECK(sum_of("p_bytes_total") == 20);
  // Take every CPU but 0 offline: their counts are folded into "other".
  for (int cpu = 1; cpu < 3; ++cpu) {
    REQUIRE((*domain)->topology()->Offline(cpu).ok());
    REQUIRE((*domain)->topology()->SetAbsent(cpu).ok());
  }
  text = RenderMetrics({ExpositionFormat::kPrometheusText, true});
  CHECK(text.find("c_total{cpu=\"1\"}") == std::string::npos);
  CHECK(sum_of("c_total") == 10);
  CHECK(sum_of("p_bytes_total") == 20);
}

TEST_CASE("help text is escaped per format") {
  auto domain = Domain::Simulated(1, 1, 1);
  REQUIRE(domain.ok());
  Counter c("esc", "a \\ b\nc \"q\"", domain->get());
  CHECK(RenderMetrics().find("# HELP esc_total a \\\\ b\\nc \"q\"\n") !=
        std::string::npos);
  CHECK(RenderMetrics({ExpositionFormat::kOpenMetrics})
            .find("# HELP esc a \\\\ b\\nc \\\"q\\\"\n") != std::string::npos);
}

TEST_CASE("a family without help text gets no HELP line") {
  auto domain = Domain::Simulated(1, 1, 1);
  REQUIRE(domain.ok());
  Counter c("nohelp", "", domain->get());
  CHECK(RenderMetrics() ==
        "# TYPE nohelp_total counter\n"
        "nohelp_total 0\n");
}

TEST_CASE("content negotiation") {
  CHECK(NegotiateFormat("application/openmetrics-text;version=1.0.0,"
                        "text/plain;version=0.0.4;q=0.5") ==
        ExpositionFormat::kOpenMetrics);
  CHECK(NegotiateFormat("text/plain") == ExpositionFormat::kPrometheusText);
  CHECK(NegotiateFormat("") == ExpositionFormat::kPrometheusText);
  CHECK(std::string(ContentType(ExpositionFormat::kOpenMetrics))
            .find("application/openmetrics-text; version=1.0.0") == 0);
  CHECK(std::string(ContentType(ExpositionFormat::kPrometheusText))
            .find("text/plain; version=0.0.4") == 0);
}

TEST_CASE("an empty registry renders nothing (and # EOF in OpenMetrics)") {
  CHECK(RenderMetrics().empty());
  CHECK(RenderMetrics({ExpositionFormat::kOpenMetrics}) == "# EOF\n");
}

}  // namespace
}  // namespace percpu
