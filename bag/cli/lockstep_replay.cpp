// SPDX-License-Identifier: Apache-2.0
#include "lockstep_replay.hpp"

#include <gecko/bag/gecko_format.hpp>
#include <gecko/bag/reader.hpp>
#include <gecko/buffer.hpp>
#include <gecko/click/controller.hpp>
#include <gecko/error.hpp>
#include <gecko/wire/json.hpp>
#include <gecko/wire/value.hpp>

#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "common.hpp"

namespace gecko::bag::cli {

namespace {

using click::Answer;
using click::AnswerKind;
using click::Request;
using click::RequestKind;

// The first difference between two msgpack values, as "path: recorded X, replayed Y"; "" if none.
// Request ids differ between runs by design: keys naming them are not compared.
std::string first_difference(const wire::Value& a, const wire::Value& b, const std::string& path, double tolerance) {
    static const std::set<std::string> ignored{"answers", "request_id", "controller_id"};
    const auto show = [](const wire::Value& v) {
        std::string s = wire::to_json(v);
        return s.size() > 120 ? s.substr(0, 117) + "..." : s;
    };
    const auto here = path.empty() ? std::string("(the whole answer)") : path;
    const auto na = a.as_number(), nb = b.as_number();
    if (na && nb) {
        const bool same = (std::isnan(*na) && std::isnan(*nb)) || *na == *nb || std::fabs(*na - *nb) <= tolerance;
        return same ? "" : here + ": recorded " + show(a) + ", replayed " + show(b);
    }
    if (a.type() != b.type()) return here + ": recorded " + show(a) + ", replayed " + show(b);
    if (a.type() == wire::Type::map) {
        for (const auto& [key, value] : a.entries()) {
            const auto name = key.as_str();
            if (!name) continue;
            if (ignored.count(std::string(*name))) continue;
            const auto other = b.find(*name);
            const std::string sub = path.empty() ? std::string(*name) : path + "." + std::string(*name);
            if (!other) return sub + ": recorded " + show(value) + ", replayed (absent)";
            if (auto d = first_difference(value, *other, sub, tolerance); !d.empty()) return d;
        }
        for (const auto& [key, value] : b.entries())
            if (auto name = key.as_str(); name && !ignored.count(std::string(*name)) && !a.find(*name))
                return (path.empty() ? std::string(*name) : path + "." + std::string(*name)) + ": recorded (absent), replayed " +
                       show(value);
        return "";
    }
    if (a.type() == wire::Type::array) {
        if (a.count() != b.count())
            return here + ": recorded " + std::to_string(a.count()) + " items, replayed " + std::to_string(b.count());
        std::uint32_t i = 0;
        auto ib = b.items().begin();
        for (const wire::Value item : a.items()) {
            if (auto d = first_difference(item, *ib, path + "[" + std::to_string(i) + "]", tolerance); !d.empty()) return d;
            ++ib;
            ++i;
        }
        return "";
    }
    const auto ba = a.bytes(), bb = b.bytes();
    const bool same = ba.size() == bb.size() && std::equal(ba.data(), ba.data() + ba.size(), bb.data());
    return same ? "" : here + ": recorded " + show(a) + ", replayed " + show(b);
}

template <class T>
std::string difference(const T& recorded, const T& replayed, double tolerance) {
    Buffer x, y;
    wire::encode(x, recorded);
    wire::encode(y, replayed);
    return first_difference(wire::Value::parse(x.data(), x.size()), wire::Value::parse(y.data(), y.size()), "", tolerance);
}

struct Exchange {
    Request request;
    std::optional<Answer> answer;
};

}  // namespace

int replay_lockstep(Node& node, const LockstepSettings& s) {
    const auto topics = click::lockstep_topics(s.simulation);
    // The recorded exchanges, in the order the requests were made (re-sends once).
    std::vector<Exchange> run;
    std::map<std::pair<std::string, std::uint64_t>, std::size_t> by_id;
    std::uint64_t undecodable = 0;
    for (const auto& file : s.files) {
        Reader reader(file);
        MessageFilter f;
        f.topics = {topics.request, topics.answer};
        reader.read_messages(f, [&](const Channel& ch, const MessageView& m) {
            if (ch.message_encoding != msgpack_encoding) return true;
            try {
                if (ch.topic == topics.request) {
                    auto req = decode<Request>(m);
                    const auto key = std::make_pair(req.controller_id, req.request_id);
                    if (!by_id.count(key)) {
                        by_id[key] = run.size();
                        run.push_back({std::move(req), std::nullopt});
                    }
                } else {
                    auto ans = decode<Answer>(m);
                    auto it = by_id.find({ans.controller_id, ans.answers});
                    if (it != by_id.end() && !run[it->second].answer) run[it->second].answer = std::move(ans);
                }
            } catch (const Error&) {
                ++undecodable;
            }
            return true;
        });
        for (const auto& p : reader.problems()) std::fprintf(stderr, "gecko play: %s: %s\n", file.c_str(), p.to_string().c_str());
    }
    if (run.empty()) {
        std::fprintf(stderr, "gecko play --lockstep: no request on '%s' in the recording (another --sim?)\n",
                     topics.request.c_str());
        return exit_failure;
    }
    if (undecodable)
        std::fprintf(stderr, "gecko play --lockstep: %llu recorded messages were not Click envelopes (skipped)\n",
                     static_cast<unsigned long long>(undecodable));

    click::Controller controller(node, s.simulation);
    std::uint64_t steps = 0, compared = 0;
    for (std::size_t i = 0; i < run.size(); ++i) {
        const Exchange& x = run[i];
        const Request& req = x.request;
        if (req.kind == RequestKind::control) ++steps;
        const std::string where = "request " + std::to_string(i + 1) + " (" + click::to_string(req.kind) + ", step " +
                                  std::to_string(steps) + ")";
        if (!x.answer && req.kind != RequestKind::error) {
            if (!s.quiet) std::fprintf(stderr, "gecko play --lockstep: %s has no recorded answer: replayed, not compared\n", where.c_str());
        }
        std::string diff;
        std::optional<AnswerKind> got;
        try {
            // A recorder that linked to the controller late misses its handshake: make one, uncompared.
            if (req.kind != RequestKind::handshake_init && req.kind != RequestKind::error && !controller.has_handshake()) {
                if (!s.quiet)
                    std::fprintf(stderr, "gecko play --lockstep: the recording starts after the handshake: one is made first (not compared)\n");
                controller.handshake();
            }
            switch (req.kind) {
                case RequestKind::handshake_init: {
                    const auto& hs = controller.handshake();
                    got = AnswerKind::handshake;
                    if (x.answer && x.answer->handshake) diff = difference(*x.answer->handshake, hs, s.tolerance);
                    break;
                }
                case RequestKind::control:
                case RequestKind::sensor_request: {
                    if (req.kind == RequestKind::control && !req.control) {
                        diff = "the recorded Control request carries no control";
                        break;
                    }
                    const auto result = req.kind == RequestKind::control ? controller.step(*req.control) : controller.sensors();
                    got = result.is_sensor() ? AnswerKind::sensor : result.is_reset() ? AnswerKind::reset : AnswerKind::error;
                    if (x.answer && x.answer->kind == AnswerKind::sensor && result.is_sensor() && x.answer->sensor)
                        diff = difference(*x.answer->sensor, result.sensor(), s.tolerance);
                    break;
                }
                case RequestKind::reset:
                    controller.reset();
                    got = AnswerKind::reset;
                    break;
                case RequestKind::error:
                    controller.error(req.error ? req.error->reason : std::string("replay ended"));
                    got = std::nullopt;
                    break;
            }
        } catch (const Error& e) {
            if (e.code() == Errc::remote) {
                got = AnswerKind::error;
            } else {
                std::printf("lockstep replay: %s failed: %s\n", where.c_str(), e.what());
                return exit_failure;
            }
        }
        if (x.answer && got && *got != x.answer->kind)
            diff = std::string("the answer is a ") + click::to_string(*got) + ", recorded a " + click::to_string(x.answer->kind);
        if (x.answer) ++compared;
        if (!diff.empty()) {
            std::printf("lockstep replay: first difference at %s: %s\n", where.c_str(), diff.c_str());
            std::printf("lockstep replay: %llu of %zu recorded answers were equal before it\n",
                        static_cast<unsigned long long>(compared - 1), run.size());
            return exit_failure;
        }
    }
    std::printf("lockstep replay: %zu requests (%llu steps) replayed, %llu answers compared, all identical\n", run.size(),
                static_cast<unsigned long long>(steps), static_cast<unsigned long long>(compared));
    return exit_ok;
}

}  // namespace gecko::bag::cli
