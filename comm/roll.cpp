#include "comm/roll.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "comm/tags.hpp"

namespace pipebench::comm {

namespace {

// What an arrival carries: the member's value and its host name (cut; enough to find the machine).
struct Arrival {
  std::int64_t value = 0;
  char host[56] = {};
};

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

void copy_text(char* dst, std::size_t size, const std::string& text) {
  std::memcpy(dst, text.data(), std::min(text.size(), size - 1));
}

std::string text_of(const char* src, std::size_t size) { return std::string(src, strnlen(src, size)); }

}  // namespace

Roll::Roll(Communicator& world, std::string host) : world_(world), host_(std::move(host)) {
  host_.resize(std::min(host_.size(), sizeof(Arrival::host) - 1));  // as the others hear it
  hosts_.assign(world_.rank() == 0 ? static_cast<std::size_t>(world_.size()) : 1, "unknown");
  hosts_[0] = world_.rank() == 0 ? host_ : "unknown";
  if (world_.size() < 2) return;
  if (world_.rank() == 0)
    alarm_recv_ = world_.irecv(&alarm_in_, sizeof alarm_in_, Communicator::kAnySource, tags::kRollAlarm);
  else
    call_recv_ = world_.irecv(&call_in_, 1, 0, tags::kRollCall);
  Communicator::set_idle_hook([this] { idle(); });
}

Roll::~Roll() { Communicator::set_idle_hook(nullptr); }

// Between two polls of any wait: rank 0 looks for an alarm, the others for a roll call, which they
// answer at once.
void Roll::idle() {
  if (in_hook_) return;
  in_hook_ = true;
  struct Leave {
    bool& flag;
    ~Leave() { flag = false; }
  } leave{in_hook_};
  if (world_.rank() == 0) {
    if (!alarm_recv_.done() && alarm_recv_.poll()) call_roll(alarm_in_);
    return;
  }
  if (!call_recv_.done() && call_recv_.poll()) answers_.push_back(world_.isend(&answer_, 1, 0, tags::kRollAnswer));
  for (Request& a : answers_) a.poll();
}

std::vector<int> Roll::silent_among(const std::vector<int>& ranks) {
  in_hook_ = true;  // rank 0's own waits below must not call the roll again; the job ends after it
  std::vector<char> answers(ranks.size());
  std::vector<Request> calls, got;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    calls.push_back(world_.isend(&call_in_, 1, ranks[i], tags::kRollCall));
    got.push_back(world_.irecv(&answers[i], 1, ranks[i], tags::kRollAnswer));
  }
  std::vector<int> silent;
  try {
    world_.wait_all(got, roll_window());
  } catch (const TimeoutError&) {
    for (std::size_t i = 0; i < ranks.size(); ++i)
      if (!got[i].done()) silent.push_back(ranks[i]);
  }
  return silent;
}

std::chrono::duration<double> Roll::roll_window() const { return world_.wait_policy().timeout / 2; }

void Roll::call_roll(const Alarm& alarm) {
  std::vector<int> all;
  for (int r = 1; r < world_.size(); ++r) all.push_back(r);
  const std::vector<int> silent = silent_among(all);
  const std::string phase = text_of(alarm.phase, sizeof alarm.phase);
  const std::string what = text_of(alarm.what, sizeof alarm.what);
  if (!silent.empty())
    throw Error(name_ranks(silent) + " stopped answering during " + phase + ": no answer to rank 0's roll call within " +
                seconds_text(roll_window().count()) + " after a wait timed out " + within() +
                " (stopped, hung or dead); the wait: " + what);
  throw Error("every rank answered rank 0's roll call during " + phase + ", but a wait timed out " + within() +
              ": " + what);
}

void Roll::alarm(const std::string& phase, const std::string& what) {
  if (world_.rank() == 0 || world_.size() < 2) {
    Alarm a;
    copy_text(a.phase, sizeof a.phase, phase);
    copy_text(a.what, sizeof a.what, what);
    call_roll(a);
  }
  Alarm a;
  a.rank = world_.rank();
  copy_text(a.phase, sizeof a.phase, phase);
  copy_text(a.what, sizeof a.what, what);
  Request sent = world_.isend(&a, sizeof a, 0, tags::kRollAlarm);
  // Rank 0 calls the roll and ends the job; meanwhile this member answers from the wait below.
  Request never = world_.irecv(&call_in_ + 0, 0, 0, tags::kRollNever);
  try {
    world_.wait(never, root_limit());
  } catch (const TimeoutError&) {
  }
  (void)sent;
  throw Error(name_ranks({0}) + " did not act on the alarm of rank " + std::to_string(world_.rank()) + " " +
              within() + " (it calls the roll: stopped, hung or dead); rank " + std::to_string(world_.rank()) +
              " had waited during " + phase + ": " + what);
}

std::chrono::duration<double> Roll::root_limit() const {
  return world_.wait_policy().timeout * (world_.rank() == 1 ? 2 : 3);
}

std::chrono::duration<double> Roll::release_limit() const {
  return world_.rank() == 0 ? world_.wait_policy().timeout : root_limit();
}

int Roll::members_on_root_host() const {
  if (world_.rank() != 0) return 0;
  return static_cast<int>(std::count(hosts_.begin(), hosts_.end(), host_));
}

std::string Roll::within() const { return "within --timeout " + seconds_text(world_.wait_policy().timeout.count()); }

std::string Roll::name_ranks(const std::vector<int>& ranks) const {
  constexpr std::size_t kShown = 8;  // a job of 16k ranks that lost a node must still print one line
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size() && i < kShown; ++i) {
    const auto r = static_cast<std::size_t>(ranks[i]);
    const std::string& host = world_.rank() == 0 && r < hosts_.size() ? hosts_[r] : r == 0 ? hosts_[0] : "unknown";
    s += (i ? ", " : "") + std::to_string(ranks[i]) + " (host " + host + ")";
  }
  if (ranks.size() > kShown) s += " and " + std::to_string(ranks.size() - kShown) + " more";
  return s;
}

std::vector<std::int64_t> Roll::collect(const std::string& phase, std::int64_t value, std::chrono::duration<double> grace) {
  const int n = world_.size();
  if (world_.rank() != 0) {
    Arrival mine;
    mine.value = value;
    std::memcpy(mine.host, host_.data(), std::min(host_.size(), sizeof mine.host - 1));
    Request sent = world_.isend(&mine, sizeof mine, 0, tags::kRollArrive);
    try {
      world_.wait(sent, root_limit() + grace);
    } catch (const TimeoutError&) {
      throw Error(name_ranks({0}) + " did not take the arrival at " + phase + " " + within() +
                  " (it collects every rank's arrival: stopped, hung or dead)");
    }
    return {};
  }
  std::vector<Arrival> got(static_cast<std::size_t>(n));
  std::vector<Request> arrivals;
  for (int r = 1; r < n; ++r) arrivals.push_back(world_.irecv(&got[r], sizeof(Arrival), r, tags::kRollArrive));
  try {
    world_.wait_all(arrivals);
  } catch (const TimeoutError&) {
    std::vector<int> missing;
    for (int r = 1; r < n; ++r)
      if (!arrivals[static_cast<std::size_t>(r - 1)].done()) missing.push_back(r);
    // A missing rank may be alive, waiting for one that stopped: name only those that do not answer.
    const std::vector<int> silent = silent_among(missing);
    const int came = n - static_cast<int>(missing.size());
    const std::string others = "; the other " + std::to_string(came) + (came == 1 ? " rank" : " ranks") + " did";
    if (!silent.empty())
      throw Error(name_ranks(silent) + " did not reach " + phase + " " + within() + others +
                  (silent.size() < missing.size() ? " or still wait" : "") + " (stopped, hung or dead)");
    throw Error(name_ranks(missing) + " did not reach " + phase + " " + within() + others +
                ", and " + (missing.size() == 1 ? "it answers" : "they answer") +
                " rank 0's roll call (alive, waiting for something that does not come)");
  }
  std::vector<std::int64_t> values(static_cast<std::size_t>(n));
  values[0] = value;
  for (int r = 1; r < n; ++r) {
    const Arrival& a = got[static_cast<std::size_t>(r)];
    values[static_cast<std::size_t>(r)] = a.value;
    hosts_[static_cast<std::size_t>(r)].assign(a.host, strnlen(a.host, sizeof a.host));
  }
  return values;
}

std::int64_t Roll::release(const std::string& phase, std::int64_t value, std::chrono::duration<double> grace) {
  Arrival out;
  if (world_.rank() == 0) {
    out.value = value;
    std::memcpy(out.host, host_.data(), std::min(host_.size(), sizeof out.host - 1));
    std::vector<Request> sends;
    for (int r = 1; r < world_.size(); ++r) sends.push_back(world_.isend(&out, sizeof out, r, tags::kRollRelease));
    // Small messages: they leave at once, whether or not the member is still there to take them.
    world_.wait_all(sends);
    return value;
  }
  Request got = world_.irecv(&out, sizeof out, 0, tags::kRollRelease);
  try {
    world_.wait(got, root_limit() + grace);
  } catch (const TimeoutError&) {
    throw Error(name_ranks({0}) + " did not release " + phase + " " + within() +
                " (it collects every rank's arrival: stopped, hung or dead)");
  }
  hosts_[0].assign(out.host, strnlen(out.host, sizeof out.host));
  return out.value;
}

std::int64_t Roll::meet(const std::string& phase, std::int64_t value, std::chrono::duration<double> grace) {
  const auto values = collect(phase, value, grace);
  const std::int64_t top = values.empty() ? value : *std::max_element(values.begin(), values.end());
  return release(phase, top, grace);
}

}  // namespace pipebench::comm
