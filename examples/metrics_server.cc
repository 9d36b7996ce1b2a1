// A loopback HTTP endpoint for the exporter (primitives/exporter.h): serves
// GET /metrics in the Prometheus text format or OpenMetrics 1.0 (negotiated
// from the Accept header, or forced with --format), bound to 127.0.0.1 only.
// The library never starts a server; this example is the opt-in endpoint.
//
//   metrics_server [--port=N] [--port_file=PATH]
//   [--format=auto|text|openmetrics]
//                  [--per_cpu] [--requests=N] [--seconds=S] [--once]
//
// --port=0 (the default) picks a free port and prints it (and writes it to
// --port_file). --requests=N counts N demo requests (and N packets of 64
// bytes) at start, from 4 threads; --seconds=S exits after S seconds (0:
// never); --once prints one rendering to stdout and exits (for promtool).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "primitives/counter.h"
#include "primitives/exporter.h"

namespace {

percpu::Counter demo_requests("demo_requests", "Requests served by the demo.");
percpu::PacketCounter demo_rx("demo_rx", "Demo packets received");
percpu::CounterSet<2> demo_errors("demo_errors", "Demo errors.",
                                  {{"timeout", "Requests that timed out."},
                                   {"refused", "Requests refused."}});

bool Flag(const char* arg, const char* name, std::string* value) {
  const size_t n = std::strlen(name);
  if (std::strncmp(arg, name, n) != 0) return false;
  if (arg[n] == '\0') {
    *value = "";
    return true;
  }
  if (arg[n] != '=') return false;
  *value = arg + n + 1;
  return true;
}

std::string Lower(std::string s) {
  for (char& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Reads the request head (up to the blank line), at most 16 KiB.
std::string ReadHead(int fd) {
  std::string head;
  char buf[2048];
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < 16384) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    head.append(buf, static_cast<size_t>(n));
  }
  return head;
}

void SendAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

void Serve(int fd, const std::string& format, bool per_cpu) {
  const std::string head = ReadHead(fd);
  const std::string lower = Lower(head);
  std::string accept;
  const size_t a = lower.find("\r\naccept:");
  if (a != std::string::npos) {
    const size_t start = a + 9;
    accept = lower.substr(start, lower.find("\r\n", start) - start);
  }
  std::string response;
  if (head.compare(0, 13, "GET /metrics ") == 0 ||
      head.compare(0, 13, "GET /metrics?") == 0) {
    percpu::ExportOptions options;
    options.per_cpu = per_cpu;
    options.format =
        format == "openmetrics" ? percpu::ExpositionFormat::kOpenMetrics
        : format == "text"      ? percpu::ExpositionFormat::kPrometheusText
                                : percpu::NegotiateFormat(accept);
    const std::string body = percpu::RenderMetrics(options);
    std::fprintf(stderr, "GET /metrics -> %s\n",
                 options.format == percpu::ExpositionFormat::kOpenMetrics
                     ? "openmetrics"
                     : "text");
    response = std::string("HTTP/1.1 200 OK\r\nContent-Type: ") +
               percpu::ContentType(options.format) +
               "\r\nContent-Length: " + std::to_string(body.size()) +
               "\r\nConnection: close\r\n\r\n" + body;
  } else {
    const std::string body = "only GET /metrics is served\n";
    response =
        "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n"
        "Content-Length: " +
        std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  }
  SendAll(fd, response);
}

}  // namespace

int main(int argc, char** argv) {
  int port = 0;
  std::string port_file, format = "auto", value;
  bool per_cpu = false, once = false;
  uint64_t requests = 0;
  double seconds = 0;
  for (int i = 1; i < argc; ++i) {
    if (Flag(argv[i], "--port", &value)) {
      port = std::atoi(value.c_str());
    } else if (Flag(argv[i], "--port_file", &value)) {
      port_file = value;
    } else if (Flag(argv[i], "--format", &value)) {
      format = value;
    } else if (Flag(argv[i], "--per_cpu", &value)) {
      per_cpu = true;
    } else if (Flag(argv[i], "--requests", &value)) {
      requests = std::strtoull(value.c_str(), nullptr, 10);
    } else if (Flag(argv[i], "--seconds", &value)) {
      seconds = std::atof(value.c_str());
    } else if (Flag(argv[i], "--once", &value)) {
      once = true;
    } else {
      std::fprintf(stderr, "unknown argument: %s\n", argv[i]);
      return 2;
    }
  }
  if (format != "auto" && format != "text" && format != "openmetrics") {
    std::fprintf(stderr, "--format must be auto, text or openmetrics\n");
    return 2;
  }

  // The demo's writers: 4 threads share the requests exactly.
  std::vector<std::thread> writers;
  for (uint64_t t = 0; t < 4; ++t) {
    writers.emplace_back([t, requests] {
      for (uint64_t i = t; i < requests; i += 4) {
        demo_requests.Inc();
        demo_rx.Add(1, 64);
        if (i % 100 == 0) demo_errors.Inc(0);
      }
    });
  }
  for (std::thread& w : writers) w.join();

  if (once) {
    percpu::ExportOptions options;
    options.per_cpu = per_cpu;
    options.format = format == "openmetrics"
                         ? percpu::ExpositionFormat::kOpenMetrics
                         : percpu::ExpositionFormat::kPrometheusText;
    std::fputs(percpu::RenderMetrics(options).c_str(), stdout);
    return 0;
  }

  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0) {
    std::perror("socket");
    return 1;
  }
  const int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // loopback only
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listener, 16) != 0) {
    std::perror("bind/listen on 127.0.0.1");
    return 1;
  }
  socklen_t len = sizeof addr;
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  port = ntohs(addr.sin_port);
  std::printf("serving http://127.0.0.1:%d/metrics\n", port);
  std::fflush(stdout);
  if (!port_file.empty()) {
    const std::string tmp = port_file + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "w");
    if (f == nullptr || std::fprintf(f, "%d\n", port) < 0 ||
        std::fclose(f) != 0 ||
        std::rename(tmp.c_str(), port_file.c_str()) != 0) {
      std::perror("port_file");
      return 1;
    }
  }

  const auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  for (;;) {
    if (seconds > 0 && std::chrono::steady_clock::now() >= deadline) break;
    pollfd pfd{listener, POLLIN, 0};
    if (poll(&pfd, 1, 200) <= 0) continue;
    const int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    timeval tv{2, 0};  // a silent client cannot stall the loop for long
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    Serve(fd, format, per_cpu);
    close(fd);
  }
  close(listener);
  return 0;
}
