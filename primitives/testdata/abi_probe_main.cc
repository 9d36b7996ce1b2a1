// A user's translation unit for //primitives:abi_link_test: it uses the
// headers whose layout or writer protocol depends on the build
// configuration (U64Stat's seqcount path, the rseq writer mode).
#include <cstdio>

#include "primitives/rseq.h"
#include "primitives/u64_stats.h"

int main() {
  percpu::U64StatsSync sync;
  percpu::U64Stat stat;
  sync.UpdateBegin();
  stat.Add(41);
  stat.Inc();
  sync.UpdateEnd();
  std::printf("seqcount=%d value=%llu\n",
              static_cast<int>(percpu::kU64StatsUseSeqcount),
              static_cast<unsigned long long>(stat.Read()));
  return stat.Read() == 42 ? 0 : 1;
}
