#include "flopscope/cpu_info.hpp"

#include <cstdio>
#include <optional>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <sched.h>

namespace flopscope {

std::string CpuInfo::vector_isa() const {
  if (avx512f) return "avx512";
  if (avx2 && fma) return "avx2";
  return "scalar";
}

int CpuInfo::vector_bits() const {
  if (avx512f) return 512;
  if (avx2 && fma) return 256;
  return 64;
}

int CpuInfo::fma_datapath_bits() const {
  if (const char* text = std::getenv("FLOPSCOPE_CPU_FMA_BITS")) {
    const int bits = std::atoi(text);
    if (bits == 64 || bits == 128 || bits == 256 || bits == 512) return std::min(bits, vector_bits());
  }
  if (avx512f && vendor == "AuthenticAMD" && family == 25) return 256;  // Zen 4: double-pumped
  return vector_bits();
}

bool CpuInfo::amd_caches() const { return vendor == "AuthenticAMD"; }

namespace {

std::size_t read_cache_size(int index) {
  std::ifstream file("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
  std::string text;
  if (!(file >> text) || text.empty()) return 0;
  std::size_t value = std::strtoull(text.c_str(), nullptr, 10);
  switch (text.back()) {
    case 'K': return value << 10;
    case 'M': return value << 20;
    case 'G': return value << 30;
    default: return value;
  }
}

int read_cache_level(int index, std::string* type) {
  std::string base = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
  std::ifstream level_file(base + "/level"), type_file(base + "/type");
  int level = 0;
  if (!(level_file >> level)) return 0;
  type_file >> *type;
  return level;
}

}  // namespace

CpuInfo detect_cpu() {
  CpuInfo cpu;
  __builtin_cpu_init();
  cpu.avx2 = __builtin_cpu_supports("avx2");
  cpu.fma = __builtin_cpu_supports("fma");
  cpu.avx512f = __builtin_cpu_supports("avx512f");
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    const auto value = [&] { return line.substr(line.find(':') + 2); };
    if (cpu.model_name.empty() && line.starts_with("model name")) {
      cpu.model_name = value();
    } else if (cpu.vendor.empty() && line.starts_with("vendor_id")) {
      cpu.vendor = value();
    } else if (cpu.family == 0 && line.starts_with("cpu family")) {
      cpu.family = std::atoi(value().c_str());
    } else if (line.starts_with("flags")) {
      std::istringstream flags(line.substr(line.find(':') + 1));
      std::string flag;
      while (flags >> flag) {
        cpu.flags.insert(flag);
        if (flag == "f16c") cpu.f16c = true;
        if (flag == "avx512_bf16") cpu.avx512_bf16 = true;
        if (flag == "avx512_fp16") cpu.avx512_fp16 = true;
        if (flag == "amx_bf16") cpu.amx_bf16 = true;
      }
      break;  // one CPU's flags are everyone's
    }
  }
  if (cpu.model_name.empty()) cpu.model_name = "unknown CPU";
  cpu_set_t set;
  cpu.cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set)
                                                          : static_cast<int>(std::thread::hardware_concurrency());
  for (int index = 0; index < 8; ++index) {
    std::string type;
    int level = read_cache_level(index, &type);
    if (level == 0) break;
    std::size_t size = read_cache_size(index);
    if (level == 1 && type == "Data") cpu.l1d_bytes = size;
    if (level == 2) cpu.l2_bytes = size;
    if (level == 3) cpu.l3_bytes = size;
  }
  return cpu;
}

bool CpuInfo::has(std::string_view flag) const { return flags.count(std::string(flag)) > 0; }

const CpuInfo& this_cpu() {
  static const CpuInfo cpu = detect_cpu();
  return cpu;
}

std::optional<std::string> cpu_lacks(std::initializer_list<std::string_view> flags) {
  std::string missing;
  for (std::string_view flag : flags)
    if (!this_cpu().has(flag)) missing += (missing.empty() ? "" : ", ") + std::string(flag);
  if (missing.empty()) return std::nullopt;
  return "this CPU lacks " + missing;
}

}  // namespace flopscope
