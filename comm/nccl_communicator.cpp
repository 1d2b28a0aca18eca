// NCCL backend: device buffers, one non-blocking CUDA stream, completion through a CUDA event per
// request (or per group) polled with cudaEventQuery under the common wait policy.
#include "comm/nccl_communicator.hpp"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "topology/mpi_grid.hpp"

namespace pipebench::comm {

namespace {

void cuda_check(cudaError_t e, const char* fn) {
  if (e != cudaSuccess)
    throw Error(std::string(fn) + " failed: " + cudaGetErrorName(e) + " (" + std::to_string(static_cast<int>(e)) +
                "): " + cudaGetErrorString(e));
}

void nccl_check(ncclResult_t r, const char* fn, ncclComm_t comm = nullptr) {
  if (r == ncclSuccess || r == ncclInProgress) return;
  std::string s = std::string(fn) + " failed: NCCL error " + std::to_string(static_cast<int>(r)) + ": " +
                  ncclGetErrorString(r);
  if (const char* last = ncclGetLastError(comm); last && *last) s += " (" + std::string(last) + ")";
  throw Error(s);
}

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::f32: return ncclFloat32;
    case DType::f64: return ncclFloat64;
    case DType::f16: return ncclFloat16;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
    case DType::bf16: return ncclBfloat16;
#endif
    case DType::i32: return ncclInt32;
    default: break;
  }
  throw UsageError(std::string("the NCCL backend of this build cannot handle ") + dtype_name(t));
}

ncclRedOp_t nccl_op(ReduceOp op) { return op == ReduceOp::sum ? ncclSum : op == ReduceOp::max ? ncclMax : ncclMin; }

// One event marks the completion of everything issued before it on the stream: one per request, or
// one shared by the requests of a group, recorded at group_end().
struct Event {
  cudaEvent_t ev = nullptr;
  bool recorded = false;
  Event() { cuda_check(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreateWithFlags"); }
  ~Event() { cudaEventDestroy(ev); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
};

class NcclOp final : public detail::PendingOp {
 public:
  NcclOp(std::shared_ptr<Event> ev, ncclComm_t comm) : ev_(std::move(ev)), comm_(comm) {}
  bool poll() override {
    if (!ev_->recorded) throw Error("an NCCL request was waited on inside its group: call group_end() first");
    const cudaError_t e = cudaEventQuery(ev_->ev);
    if (e == cudaSuccess) return true;
    if (e != cudaErrorNotReady) cuda_check(e, "cudaEventQuery");
    // A peer that died or a network failure shows up here rather than as a never-ending event.
    ncclResult_t async = ncclSuccess;
    nccl_check(ncclCommGetAsyncError(comm_, &async), "ncclCommGetAsyncError", comm_);
    nccl_check(async, "NCCL (asynchronous error)", comm_);
    return false;
  }

 private:
  std::shared_ptr<Event> ev_;
  ncclComm_t comm_;
};

int pick_device(int requested) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0)
    throw Error(std::string("NCCL backend: no usable CUDA device (cudaGetDeviceCount: ") +
                (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") + ")");
  if (requested >= 0) {
    if (requested >= n)
      throw UsageError("CUDA device " + std::to_string(requested) + " does not exist: allowed 0.." +
                       std::to_string(n - 1));
    return requested;
  }
  for (const char* var : {"MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"})
    if (const char* v = std::getenv(var)) return std::atoi(v) % n;
  int current = 0;
  cuda_check(cudaGetDevice(&current), "cudaGetDevice");
  return current;
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(MPI_Comm comm, std::string name, const WaitPolicy& policy, int device)
      : Communicator(std::move(name), policy) {
    MPI_Comm dup = MPI_COMM_NULL;
    MPI_Comm_dup(comm, &dup);
    mpi_ = topology::MpiComm(dup);
    rank_ = mpi_.rank();
    size_ = mpi_.size();
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_);
    world_ranks_.resize(static_cast<std::size_t>(size_));
    MPI_Allgather(&world_rank_, 1, MPI_INT, world_ranks_.data(), 1, MPI_INT, dup);

    // Agree before NCCL's own collective start-up, so that one rank without a GPU fails every rank
    // with a message instead of leaving the others waiting in ncclCommInitRank.
    std::string local_error;
    try {
      cuda_check(cudaSetDevice(pick_device(device)), "cudaSetDevice");
      cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    } catch (const Error& e) {
      local_error = e.what();
    }
    struct {
      int ok;
      ncclUniqueId id;
    } boot{local_error.empty() ? 1 : 0, {}};
    int all_ok = 0;
    MPI_Allreduce(&boot.ok, &all_ok, 1, MPI_INT, MPI_MIN, dup);
    if (!all_ok) {
      if (stream_) cudaStreamDestroy(stream_);
      throw Error(!local_error.empty() ? local_error
                                       : "NCCL backend: another rank of '" + this->name() + "' has no usable GPU");
    }
    if (rank_ == 0) boot.ok = ncclGetUniqueId(&boot.id) == ncclSuccess ? 1 : 0;
    MPI_Bcast(&boot, sizeof boot, MPI_BYTE, 0, dup);
    if (!boot.ok) {
      cudaStreamDestroy(stream_);
      throw Error("NCCL backend: ncclGetUniqueId failed on rank 0 of '" + this->name() + "'");
    }
    const ncclResult_t r = ncclCommInitRank(&nccl_, size_, boot.id, rank_);
    if (r != ncclSuccess) {
      cudaStreamDestroy(stream_);
      nccl_check(r, "ncclCommInitRank");
    }
  }

  ~NcclCommunicator() override {
    // A stream with work left means an abandoned wait: abort rather than block on it.
    if (cudaStreamQuery(stream_) == cudaSuccess)
      ncclCommDestroy(nccl_);
    else
      ncclCommAbort(nccl_);
    cudaStreamDestroy(stream_);
  }

  const char* backend() const override { return "nccl"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int world_rank() const override { return world_rank_; }
  int world_rank_of(int peer) const override {
    return peer >= 0 && peer < size_ ? world_ranks_[static_cast<std::size_t>(peer)] : -1;
  }

  Request isend(const void* buf, std::size_t bytes, int peer, int tag) override {
    check_peer(peer, "send");
    nccl_check(ncclSend(buf, bytes, ncclUint8, peer, nccl_, stream_), "ncclSend", nccl_);
    return issued({Op::send, peer, tag, bytes});
  }
  Request irecv(void* buf, std::size_t bytes, int peer, int tag) override {
    check_peer(peer, "recv");
    nccl_check(ncclRecv(buf, bytes, ncclUint8, peer, nccl_, stream_), "ncclRecv", nccl_);
    return issued({Op::recv, peer, tag, bytes});
  }
  Request iallreduce_sum(void* buf, std::size_t count, DType type) override {
    nccl_check(ncclAllReduce(buf, buf, count, nccl_type(type), ncclSum, nccl_, stream_), "ncclAllReduce", nccl_);
    return issued({Op::allreduce, -1, -1, count * dtype_size(type)});
  }
  Request iallgather(const void* send, void* recv, std::size_t bytes_per_rank) override {
    nccl_check(ncclAllGather(send, recv, bytes_per_rank, ncclUint8, nccl_, stream_), "ncclAllGather", nccl_);
    return issued({Op::allgather, -1, -1, bytes_per_rank * static_cast<std::size_t>(size_)});
  }
  Request ireduce_scatter_sum(const void* send, void* recv, std::size_t count_per_rank, DType type) override {
    nccl_check(ncclReduceScatter(send, recv, count_per_rank, nccl_type(type), ncclSum, nccl_, stream_),
               "ncclReduceScatter", nccl_);
    return issued({Op::reduce_scatter, -1, -1, count_per_rank * dtype_size(type) * static_cast<std::size_t>(size_)});
  }
  // NCCL has no barrier: an all-reduce of one float orders every member.
  Request ibarrier() override {
    if (!scratch_.data()) scratch_ = allocate(sizeof(float));
    nccl_check(ncclAllReduce(scratch_.data(), scratch_.data(), 1, ncclFloat32, ncclSum, nccl_, stream_),
               "ncclAllReduce (barrier)", nccl_);
    return issued({Op::barrier, -1, -1, 0});
  }

  bool supports(DType type, ReduceOp) const override {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
    (void)type;
    return true;
#else
    return type != DType::bf16;
#endif
  }
  Request iallreduce(const void* send, void* recv, std::size_t count, DType type, ReduceOp op) override {
    nccl_check(ncclAllReduce(send, recv, count, nccl_type(type), nccl_op(op), nccl_, stream_), "ncclAllReduce", nccl_);
    return issued({Op::allreduce, -1, -1, count * dtype_size(type)});
  }
  // In place is NCCL's: recv = send + rank * block (the caller passes send == recv for MPI's meaning).
  Request ireduce_scatter(const void* send, void* recv, std::size_t count_per_rank, DType type, ReduceOp op) override {
    void* out = send == recv ? static_cast<char*>(recv) + static_cast<std::size_t>(rank_) * count_per_rank * dtype_size(type)
                             : recv;
    nccl_check(ncclReduceScatter(send, out, count_per_rank, nccl_type(type), nccl_op(op), nccl_, stream_),
               "ncclReduceScatter", nccl_);
    return issued({Op::reduce_scatter, -1, -1, count_per_rank * dtype_size(type) * static_cast<std::size_t>(size_)});
  }
  Request ibroadcast(const void* send, void* recv, std::size_t count, DType type, int root) override {
    check_peer(root, "broadcast");
    nccl_check(ncclBroadcast(send, recv, count * dtype_size(type), ncclUint8, root, nccl_, stream_), "ncclBroadcast",
               nccl_);
    return issued({Op::broadcast, root, -1, count * dtype_size(type)});
  }
  Request ireduce(const void* send, void* recv, std::size_t count, DType type, ReduceOp op, int root) override {
    check_peer(root, "reduce");
    nccl_check(ncclReduce(send, recv, count, nccl_type(type), nccl_op(op), root, nccl_, stream_), "ncclReduce", nccl_);
    return issued({Op::reduce, root, -1, count * dtype_size(type)});
  }
  // NCCL's all-to-all is a group of sends and receives, as nccl-tests builds it.
  Request ialltoall(const void* send, void* recv, std::size_t count_per_rank, DType type) override {
    const std::size_t bytes = count_per_rank * dtype_size(type);
    const bool own_group = depth_ == 0;
    if (own_group) group_start();
    for (int peer = 0; peer < size_; ++peer) {
      nccl_check(ncclSend(static_cast<const char*>(send) + static_cast<std::size_t>(peer) * bytes, bytes, ncclUint8, peer,
                          nccl_, stream_), "ncclSend (alltoall)", nccl_);
      nccl_check(ncclRecv(static_cast<char*>(recv) + static_cast<std::size_t>(peer) * bytes, bytes, ncclUint8, peer,
                          nccl_, stream_), "ncclRecv (alltoall)", nccl_);
    }
    std::shared_ptr<Event> ev = group_event_;
    if (own_group) group_end();
    return Request({Op::alltoall, -1, -1, bytes * static_cast<std::size_t>(size_)}, std::make_unique<NcclOp>(std::move(ev), nccl_));
  }

  Request ialltoallv(const void* send, const std::vector<std::size_t>& send_bytes, void* recv,
                     const std::vector<std::size_t>& recv_bytes) override {
    if (send_bytes.size() != static_cast<std::size_t>(size_) || recv_bytes.size() != static_cast<std::size_t>(size_))
      throw Error("alltoallv on '" + name() + "': the counts do not give one block per member");
    const bool own_group = depth_ == 0;
    if (own_group) group_start();
    std::size_t sent = 0, received = 0;
    for (int peer = 0; peer < size_; ++peer) {
      const std::size_t out = send_bytes[static_cast<std::size_t>(peer)], in = recv_bytes[static_cast<std::size_t>(peer)];
      nccl_check(ncclSend(static_cast<const char*>(send) + sent, out, ncclUint8, peer, nccl_, stream_),
                 "ncclSend (alltoallv)", nccl_);
      nccl_check(ncclRecv(static_cast<char*>(recv) + received, in, ncclUint8, peer, nccl_, stream_),
                 "ncclRecv (alltoallv)", nccl_);
      sent += out, received += in;
    }
    std::shared_ptr<Event> ev = group_event_;
    if (own_group) group_end();
    return Request({Op::alltoallv, -1, -1, sent}, std::make_unique<NcclOp>(std::move(ev), nccl_));
  }

  void group_start() override {
    nccl_check(ncclGroupStart(), "ncclGroupStart");
    if (depth_++ == 0) group_event_ = std::make_shared<Event>();
  }
  void group_end() override {
    if (depth_ == 0) throw Error("group_end() on '" + name() + "' without group_start()");
    nccl_check(ncclGroupEnd(), "ncclGroupEnd", nccl_);
    if (--depth_ == 0) {
      cuda_check(cudaEventRecord(group_event_->ev, stream_), "cudaEventRecord");
      group_event_->recorded = true;
      group_event_.reset();
    }
  }

  Buffer allocate(std::size_t bytes) override {
    void* p = nullptr;
    cuda_check(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc");
    cuda_check(cudaMemset(p, 0, bytes ? bytes : 1), "cudaMemset");
    return Buffer(p, bytes, [](void* q) { cudaFree(q); });
  }
  void copy_to_buffer(void* dst, const void* host_src, std::size_t bytes) override {
    cuda_check(cudaMemcpy(dst, host_src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  void copy_from_buffer(void* host_dst, const void* src, std::size_t bytes) override {
    cuda_check(cudaMemcpy(host_dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
  }

 private:
  void check_peer(int peer, const char* op) const {
    if (peer < 0 || peer >= size_)
      throw Error(std::string(op) + " on '" + name() + "': peer " + std::to_string(peer) + " is outside 0.." +
                  std::to_string(size_ - 1));
  }
  Request issued(const RequestInfo& info) {
    std::shared_ptr<Event> ev = group_event_;
    if (!ev) {
      ev = std::make_shared<Event>();
      cuda_check(cudaEventRecord(ev->ev, stream_), "cudaEventRecord");
      ev->recorded = true;
    }
    return Request(info, std::make_unique<NcclOp>(std::move(ev), nccl_));
  }

  topology::MpiComm mpi_;
  int rank_ = 0, size_ = 0, world_rank_ = 0;
  std::vector<int> world_ranks_;
  ncclComm_t nccl_ = nullptr;
  cudaStream_t stream_ = nullptr;
  int depth_ = 0;
  std::shared_ptr<Event> group_event_;
  Buffer scratch_;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm comm, std::string name, const WaitPolicy& policy,
                                                     int device) {
  return std::make_unique<NcclCommunicator>(comm, std::move(name), policy, device);
}

CudaDevice current_cuda_device() {
  CudaDevice d;
  cuda_check(cudaGetDevice(&d.index), "cudaGetDevice");
  cudaDeviceProp prop{};
  cuda_check(cudaGetDeviceProperties(&prop, d.index), "cudaGetDeviceProperties");
  char bus[32];
  std::snprintf(bus, sizeof bus, "%04x:%02x:%02x", static_cast<unsigned>(prop.pciDomainID),
                static_cast<unsigned>(prop.pciBusID), static_cast<unsigned>(prop.pciDeviceID));
  d.pci_bus = bus;
  d.name = prop.name;
  return d;
}

}  // namespace pipebench::comm
