#include "analysis/transformer/context_parallel.hpp"

#include "analysis/transformer/count.hpp"

namespace pipebench::analysis::transformer {

std::uint64_t cp_kv_block_bytes(const Shape& m, const Split& split, std::uint64_t value_bytes) {
  const std::uint64_t rows = mul(u64(m.micro_batch), u64(m.seq / split.cp));
  return mul(mul(2, rows), mul(u64(m.kv_width()) / u64(split.t), value_bytes));
}

CpSent cp_sent_per_layer(const Shape& m, const Split& split, CpExchange x, Recompute r, Convention c,
                         std::uint64_t value_bytes) {
  if (split.cp <= 1) return {};
  const std::uint64_t b = cp_kv_block_bytes(m, split, value_bytes), others = mul(u64(split.cp - 1), b);
  CpSent s;
  s.forward = others;
  if (x == CpExchange::ring)
    s.backward = add(others, mul(u64(split.cp), b));
  else
    s.backward = c == Convention::megatron ? others : mul(2, others);
  if (r == Recompute::full) s.backward = add(s.backward, s.forward);
  return s;
}

std::uint64_t cp_buffer_bytes(const Shape& m, const Split& split, CpExchange x, std::uint64_t value_bytes) {
  if (split.cp <= 1) return 0;
  const std::uint64_t b = cp_kv_block_bytes(m, split, value_bytes);
  return x == CpExchange::ring ? mul(5, b) : mul(add(mul(2, u64(split.cp)), 2), b);
}

}  // namespace pipebench::analysis::transformer
