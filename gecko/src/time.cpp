#include "gecko/time.hpp"

#include <stdexcept>
#include <thread>

#include "gecko/error.hpp"

namespace gecko {

std::int64_t now_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::int64_t steady_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

Rate::Rate(double hz) {
    if (!(hz > 0.0)) throw Error(Errc::invalid_argument, "gecko::Rate: frequency must be > 0 Hz");
    period_ = std::chrono::nanoseconds(static_cast<std::int64_t>(1e9 / hz));
    reset();
}

void Rate::reset() { next_ = std::chrono::steady_clock::now() + period_; }

bool Rate::sleep() {
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_) {
        ++overruns_;
        // More than a whole period late: restart rather than burst to catch up.
        next_ = (now - next_ > period_) ? now + period_ : next_ + period_;
        return false;
    }
    std::this_thread::sleep_until(next_);
    next_ += period_;
    return true;
}

}  // namespace gecko
