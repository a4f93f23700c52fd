// SPDX-License-Identifier: Apache-2.0
#include "academy/brain_runner.hpp"

#include "academy/academy.hpp"
#include "academy/process.hpp"
#include "json_text.hpp"

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>

#include <deque>
#include <iostream>
#include <istream>

namespace gecko::bridge::academy {

namespace asio = boost::asio;
using nlohmann::json;

/// The runner process and its pipes; shared with the pending reads and
/// writes, which find `owner` null once the BrainRunner is gone.
struct BrainRunner::Link {
    explicit Link(asio::io_context& io) : in(io), out(io) {}
    BrainRunner* owner = nullptr;
    ChildProcess process;
    asio::posix::stream_descriptor in, out;  // its stdin, its stdout
    asio::streambuf buffer{1 << 20};          // a line longer than 1 MiB ends the link
    std::deque<std::string> writes;
    bool writing = false;

    void close() {
        boost::system::error_code ec;
        in.close(ec);
        out.close(ec);
    }
};

namespace {

void read_next(const std::shared_ptr<BrainRunner::Link>& link, std::function<void(std::string)> on_line,
               std::function<void()> on_end) {
    asio::async_read_until(link->out, link->buffer, '\n',
                           [link, on_line, on_end](const boost::system::error_code& ec, std::size_t) {
                               if (!link->owner) return;
                               if (ec) {
                                   on_end();
                                   return;
                               }
                               std::istream s(&link->buffer);
                               std::string line;
                               std::getline(s, line);
                               on_line(line);
                               if (link->owner) read_next(link, on_line, on_end);
                           });
}

void write_next(const std::shared_ptr<BrainRunner::Link>& link) {
    if (link->writing || link->writes.empty()) return;
    link->writing = true;
    asio::async_write(link->in, asio::buffer(link->writes.front()),
                      [link](const boost::system::error_code& ec, std::size_t) {
                          link->writing = false;
                          if (ec || !link->owner) return;  // a runner that died: its stdout's end says so
                          link->writes.pop_front();
                          write_next(link);
                      });
}

}  // namespace

BrainRunner::BrainRunner(asio::io_context& io, Academy& academy, BrainRunnerOptions options)
    : io_(io), academy_(academy), options_(std::move(options)), stop_timer_(io) {}

BrainRunner::~BrainRunner() {
    stop_timer_.cancel();
    if (link_) {
        link_->owner = nullptr;
        link_->close();
        link_->process.end(std::chrono::milliseconds(2000));
    }
}

bool BrainRunner::ensure_started() {
    if (link_) return true;
    auto link = std::make_shared<Link>(io_);
    try {
        ProcessOptions p;
        p.argv = options_.argv;
        p.environment = options_.environment;
        p.pipe_stdin = p.pipe_stdout = true;
        link->process = ChildProcess(p);
    } catch (const std::exception& e) {
        academy_.counters().refused_code.fetch_add(1, std::memory_order_relaxed);
        academy_.to_code_pages("#erro" + json_text(json{{"message", std::string("cannot start the brain runner: ") + e.what()}}));
        return false;
    }
    link->in.assign(link->process.take_stdin());
    link->out.assign(link->process.take_stdout());
    link->owner = this;
    link_ = link;
    std::clog << "gecko-bridge: brain runner started (pid " << link->process.pid() << ")\n";
    read_next(
        link, [link](std::string line) { link->owner->on_line(line); }, [link] { link->owner->on_exit(); });
    if (brain_hz_ != 10.0) write(json_text(json{{"op", "frequency"}, {"hz", brain_hz_}}));
    return true;
}

void BrainRunner::write(std::string line) {
    if (!link_) return;
    link_->writes.push_back(std::move(line) + "\n");
    write_next(link_);
}

void BrainRunner::load(std::string code) {
    if (!ensure_started()) return;
    loaded_ = false;
    write(json_text(json{{"op", "load"}, {"code", std::move(code)}}));
}

std::string BrainRunner::play() {
    if (!link_ || !loaded_) return "no code is loaded: send #code first";
    write(R"({"op": "play"})");
    return "";
}

void BrainRunner::stop() {
    if (!link_ || !playing_) {
        academy_.to_code_pages("#stop");  // nothing runs
        return;
    }
    if (stopping_) return;
    stopping_ = true;
    write(R"({"op": "stop"})");
    stop_timer_.expires_after(options_.stop_grace);
    stop_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) stop_timed_out();
    });
}

void BrainRunner::reset() {
    if (!link_) {
        academy_.to_code_pages("#rest");
        return;
    }
    write(R"({"op": "reset"})");
}

void BrainRunner::set_frequency(double hz) {
    brain_hz_ = hz;
    if (link_) write(json_text(json{{"op", "frequency"}, {"hz", hz}}));
    else report_frequencies();
}

void BrainRunner::report_frequencies() {
    academy_.to_code_pages("#freq" + json_text(json{{"brain", measured_brain_},
                                                    {"gui", academy_.gui_frequency()},
                                                    {"rtf", rtf_},
                                                    {"brain_target", brain_hz_},
                                                    {"gui_target", gui_hz_}}));
}

void BrainRunner::on_line(const std::string& line) {
    const json event = json::parse(line, nullptr, false);
    if (!event.is_object() || !event.contains("event") || !event["event"].is_string()) {
        std::clog << "gecko-bridge: the brain runner wrote a line that is no event: " << line.substr(0, 200) << "\n";
        return;
    }
    const std::string name = event["event"].get<std::string>();
    if (name == "loaded") {
        loaded_ = true;
        playing_ = false;
        academy_.to_code_pages("#exec");
    } else if (name == "playing") {
        playing_ = true;
        academy_.to_code_pages("#play");
    } else if (name == "stopped" || name == "reset") {
        playing_ = stopping_ = false;
        stop_timer_.cancel();
        measured_brain_ = 0.0;
        academy_.to_code_pages(name == "stopped" ? "#stop" : "#rest");
    } else if (name == "error") {
        if (event.value("phase", "") != "run") loaded_ = false;  // a brain that raised stays loaded
        playing_ = stopping_ = false;
        stop_timer_.cancel();
        json error = event;
        error.erase("event");
        academy_.to_code_pages("#erro" + json_text(error));
    } else if (name == "frequency") {
        measured_brain_ = event.value("brain", 0.0);
        rtf_ = event.value("rtf", 0.0);
        report_frequencies();
    }
}

void BrainRunner::on_exit() {
    auto link = std::move(link_);
    link->owner = nullptr;
    link->close();
    link->process.end(std::chrono::milliseconds(500));
    const bool expected = stopping_;
    loaded_ = playing_ = stopping_ = false;
    measured_brain_ = 0.0;
    stop_timer_.cancel();
    if (expected) {
        academy_.to_code_pages("#stop");
        return;
    }
    std::clog << "gecko-bridge: the brain runner exited\n";
    academy_.to_code_pages(
        "#erro" + json_text(json{{"message", "the brain runner exited (the bridge's log says why); send #code again"}}));
}

// The brain ignored the stop (it caught the runner's interruption, or sits in
// a call that cannot be interrupted): the runner goes, and with it the brain.
void BrainRunner::stop_timed_out() {
    if (!link_ || !stopping_) return;
    std::clog << "gecko-bridge: the brain did not stop within " << options_.stop_grace.count()
              << " ms; its runner is killed\n";
    link_->process.end(std::chrono::milliseconds(0));
    on_exit();
}

}  // namespace gecko::bridge::academy
