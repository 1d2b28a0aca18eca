#include "bench/run/gather.hpp"

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "analysis/error.hpp"
#include "comm/tags.hpp"

namespace pipebench::bench {

namespace {

constexpr std::size_t kPiece = std::size_t{1} << 30;  // MPI counts are int: send large blobs in pieces

template <class T>
void put(std::vector<char>& out, const std::vector<T>& v) {
  static_assert(std::is_trivially_copyable_v<T>);
  const std::uint64_t n = v.size();
  out.insert(out.end(), reinterpret_cast<const char*>(&n), reinterpret_cast<const char*>(&n) + sizeof n);
  out.insert(out.end(), reinterpret_cast<const char*>(v.data()), reinterpret_cast<const char*>(v.data() + v.size()));
}

template <class T>
void get(const std::vector<char>& in, std::size_t& pos, std::vector<T>& v) {
  std::uint64_t n = 0;
  if (pos + sizeof n > in.size()) throw Error("gather: truncated records");
  std::memcpy(&n, in.data() + pos, sizeof n);
  pos += sizeof n;
  if (pos + n * sizeof(T) > in.size()) throw Error("gather: truncated records");
  v.resize(n);
  if (n) std::memcpy(static_cast<void*>(v.data()), in.data() + pos, n * sizeof(T));  // data() may be null when empty
  pos += n * sizeof(T);
}

std::vector<char> pack(const RankRecords& r) {
  std::vector<char> out;
  put(out, r.actions);
  put(out, r.comms);
  put(out, r.timing);
  put(out, std::vector<ClockOffset>{r.clock});
  put(out, std::vector<char>(r.host.begin(), r.host.end()));
  put(out, std::vector<char>(r.affinity.begin(), r.affinity.end()));
  put(out, r.figures);
  put(out, std::vector<double>{r.blas_rate});
  return out;
}

RankRecords unpack(const std::vector<char>& in) {
  RankRecords r;
  std::size_t pos = 0;
  get(in, pos, r.actions);
  get(in, pos, r.comms);
  get(in, pos, r.timing);
  std::vector<ClockOffset> clock;
  get(in, pos, clock);
  r.clock = clock.at(0);
  std::vector<char> host;
  get(in, pos, host);
  r.host.assign(host.begin(), host.end());
  get(in, pos, host);
  r.affinity.assign(host.begin(), host.end());
  get(in, pos, r.figures);
  std::vector<double> rate;
  get(in, pos, rate);
  r.blas_rate = rate.at(0);
  return r;
}

}  // namespace

std::vector<RankRecords> gather_records(comm::Roll& roll, const std::string& phase, const RankRecords& mine) {
  comm::Communicator& world = roll.world();
  const std::vector<char> blob = pack(mine);
  const int n = world.size(), me = world.rank();
  const auto sizes = roll.collect(phase, static_cast<std::int64_t>(blob.size()));
  if (me != 0) {
    std::vector<comm::Request> sends;
    for (std::size_t off = 0, k = 0; off < blob.size(); off += kPiece, ++k)
      sends.push_back(world.isend(blob.data() + off, std::min(kPiece, blob.size() - off), 0, comm::tags::kGatherBase + static_cast<int>(k)));
    world.wait_all(sends, roll.root_limit());
    return {};
  }
  std::vector<std::vector<char>> blobs(n);
  std::vector<comm::Request> recvs;
  blobs[0] = blob;
  for (int r = 1; r < n; ++r) {
    const auto size = static_cast<std::size_t>(sizes[static_cast<std::size_t>(r)]);
    blobs[r].resize(size);
    for (std::size_t off = 0, k = 0; off < size; off += kPiece, ++k)
      recvs.push_back(world.irecv(blobs[r].data() + off, std::min<std::size_t>(kPiece, size - off), r, comm::tags::kGatherBase + static_cast<int>(k)));
  }
  world.wait_all(recvs);
  std::vector<RankRecords> out;
  out.reserve(n);
  for (auto& b : blobs) {
    out.push_back(unpack(b));
    std::vector<char>().swap(b);
  }
  return out;
}

}  // namespace pipebench::bench
