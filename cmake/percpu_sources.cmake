# The one list of the library's files for the CMake build. Bazel is the
# primary build: //cmake:sources_test fails when this list and the files of
# the Bazel target //:percpu differ, with the lines to add or remove.
# Paths are relative to the repository root.

set(PERCPU_SOURCES
  primitives/contract.cc
  primitives/counter.cc
  primitives/cpu_slot.cc
  primitives/cpumask.cc
  primitives/domain.cc
  primitives/exporter.cc
  primitives/hotplug_monitor.cc
  primitives/internal/extent_map.cc
  primitives/per_thread.cc
  primitives/percpu_alloc.cc
  primitives/percpu_counter.cc
  primitives/rseq.cc
  primitives/status.cc
  primitives/topology.cc
)

set(PERCPU_HEADERS
  primitives/contract.h
  primitives/counter.h
  primitives/cpu_slot.h
  primitives/cpumask.h
  primitives/domain.h
  primitives/exporter.h
  primitives/fold.h
  primitives/hotplug_monitor.h
  primitives/internal/abi.h
  primitives/internal/atomic.h
  primitives/internal/mutex.h
  primitives/internal/atomic_ref.h
  primitives/internal/callable.h
  primitives/internal/cpu_writers.h
  primitives/internal/extent_map.h
  primitives/internal/family.h
  primitives/internal/rseq_asm.h
  primitives/internal/per_thread_registry.h
  primitives/lazy_percpu.h
  primitives/per_thread.h
  primitives/percpu_alloc.h
  primitives/percpu_counter.h
  primitives/percpu_mib.h
  primitives/percpu_pair.h
  primitives/percpu_stats.h
  primitives/rseq.h
  primitives/seqcount.h
  primitives/status.h
  primitives/topology.h
  primitives/u64_field.h
  primitives/u64_stats.h
)
