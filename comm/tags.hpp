#pragma once
// Every MPI tag pipebench uses, in one place, so that two protocols on one communicator never match
// each other's messages. The executor's pipeline data travel on the pp communicator with tags from 0:
// (mb * stages + destination stage) * 2 + (1 for a gradient, 0 for an activation); the largest,
// 2 * m * stages - 1, must not pass the MPI library's MPI_TAG_UB (bench/run/executor.hpp,
// check_tags(): `run` refuses such a configuration before anything runs).
namespace pipebench::comm::tags {

// On the world communicator.
inline constexpr int kGatherBase = 7000;  // + piece index: records gathered to rank 0 (bench/run/gather.cpp)
inline constexpr int kClockTurn = 9001;   // clock alignment ping-pong (bench/run/clock_sync.cpp)
inline constexpr int kClockPing = 9002;
inline constexpr int kClockPong = 9003;
inline constexpr int kClockResult = 9004;
inline constexpr int kRollArrive = 9200;  // a member reaches a named meeting point (comm/roll.cpp)
inline constexpr int kRollRelease = 9201;  // rank 0 lets it go on
inline constexpr int kRollAlarm = 9202;    // a member's wait timed out: rank 0 calls the roll
inline constexpr int kRollCall = 9203;     // rank 0 asks every member to answer
inline constexpr int kRollAnswer = 9204;
inline constexpr int kRollNever = 9205;    // never sent: a member waits on it while it answers the roll call

// On a context-parallel communicator: the ring of keys and values and the ring of their gradients
// (bench/run/context_parallel.cpp; two tags, since a rank has one of each in flight at once in I).
inline constexpr int kCpRingKv = 9300;
inline constexpr int kCpRingGrad = 9301;

}  // namespace pipebench::comm::tags
