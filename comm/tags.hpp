#pragma once
// Every MPI tag pipebench uses, in one place, so that two protocols on one communicator never match
// each other's messages. The executor's pipeline data travel on the pp communicator with tags from 0:
// (mb * stages + destination stage) * 2 + (1 for a gradient, 0 for an activation).
namespace pipebench::comm::tags {

// On the world communicator.
inline constexpr int kGatherBase = 7000;  // + piece index: records gathered to rank 0 (bench/run/gather.cpp)
inline constexpr int kClockTurn = 9001;   // clock alignment ping-pong (bench/run/clock_sync.cpp)
inline constexpr int kClockPing = 9002;
inline constexpr int kClockPong = 9003;
inline constexpr int kClockResult = 9004;
inline constexpr int kStepArrive = 9100;  // the named start barrier of a step (bench/run/executor.cpp)

}  // namespace pipebench::comm::tags
