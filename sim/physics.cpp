// SPDX-License-Identifier: Apache-2.0
// The demo simulator's physics; the model is described atop physics.hpp.
//
// Determinism: every loop runs in a fixed order, nothing depends on addresses,
// time or randomness, and there is no threading, so one build gives the same
// bits for the same scene and controls.

#include "physics.hpp"

#include <gecko/error.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>
#include <utility>

namespace gecko::sim {

// ------------------------------------------------------------------ names

const char* to_string(ControlType type) noexcept {
    switch (type) {
        case ControlType::angle: return "angle";
        case ControlType::angular_velocity: return "angular_velocity";
        case ControlType::torque: return "torque";
    }
    return "unknown";
}

std::optional<ControlType> control_type_from_string(std::string_view name) noexcept {
    for (ControlType t : {ControlType::angle, ControlType::angular_velocity, ControlType::torque}) {
        if (name == to_string(t)) return t;
    }
    return std::nullopt;
}

namespace {

// ------------------------------------------------------------------ small math

Vec3 add(const Vec3& a, const Vec3& b) { return {a[0] + b[0], a[1] + b[1], a[2] + b[2]}; }
Vec3 sub(const Vec3& a, const Vec3& b) { return {a[0] - b[0], a[1] - b[1], a[2] - b[2]}; }
Vec3 scale(const Vec3& a, double s) { return {a[0] * s, a[1] * s, a[2] * s}; }
double dot(const Vec3& a, const Vec3& b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
Vec3 cross(const Vec3& a, const Vec3& b) {
    return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}

Quaternion mul(const Quaternion& a, const Quaternion& b) {
    return {a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
            a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
            a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
            a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0]};
}

Quaternion normalized(const Quaternion& q) {
    const double n = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    return {q[0] / n, q[1] / n, q[2] / n, q[3] / n};
}

/// Rotation about the world y axis by `angle`.
Quaternion about_y(double angle) { return {std::cos(0.5 * angle), 0.0, std::sin(0.5 * angle), 0.0}; }

Quaternion from_rpy(const Vec3& rpy) {
    const Quaternion qx{std::cos(0.5 * rpy[0]), std::sin(0.5 * rpy[0]), 0.0, 0.0};
    const Quaternion qy{std::cos(0.5 * rpy[1]), 0.0, std::sin(0.5 * rpy[1]), 0.0};
    const Quaternion qz{std::cos(0.5 * rpy[2]), 0.0, 0.0, std::sin(0.5 * rpy[2])};
    return normalized(mul(qz, mul(qy, qx)));
}

Vec3 to_rpy(const Quaternion& q) {
    const double w = q[0], x = q[1], y = q[2], z = q[3];
    const double roll = std::atan2(2.0 * (w * x + y * z), 1.0 - 2.0 * (x * x + y * y));
    const double pitch = std::asin(std::clamp(2.0 * (w * y - z * x), -1.0, 1.0));
    const double yaw = std::atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z));
    return {roll, pitch, yaw};
}

using Matrix3 = std::array<Vec3, 3>;  // rows

Matrix3 rotation(const Quaternion& q) {
    const double w = q[0], x = q[1], y = q[2], z = q[3];
    return {{{1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)},
             {2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)},
             {2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)}}};
}
Vec3 apply(const Matrix3& r, const Vec3& v) { return {dot(r[0], v), dot(r[1], v), dot(r[2], v)}; }
Vec3 apply_transposed(const Matrix3& r, const Vec3& v) {
    return {r[0][0] * v[0] + r[1][0] * v[1] + r[2][0] * v[2], r[0][1] * v[0] + r[1][1] * v[1] + r[2][1] * v[2],
            r[0][2] * v[0] + r[1][2] * v[1] + r[2][2] * v[2]};
}

Vec3 box_inertia(const BoxConfig& box) {  // principal moments of a solid box
    const double x2 = box.size[0] * box.size[0], y2 = box.size[1] * box.size[1], z2 = box.size[2] * box.size[2];
    return {box.mass * (y2 + z2) / 12.0, box.mass * (x2 + z2) / 12.0, box.mass * (x2 + y2) / 12.0};
}

// ------------------------------------------------------------------ planar arm

using detail::Body;
using detail::Kinematics;
using detail::Scratch;

/// Fills `k` (its memory is reused).
void forward(const std::vector<JointConfig>& joints, const std::vector<double>& q, const std::vector<double>& qd,
             Kinematics& k) {
    const std::size_t n = joints.size();
    k.theta.resize(n);
    k.omega.resize(n);
    k.px.assign(n + 1, 0.0);
    k.pz.assign(n + 1, 0.0);
    k.vx.assign(n + 1, 0.0);
    k.vz.assign(n + 1, 0.0);
    double theta = 0.0, omega = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
        theta += q[j];
        omega += qd[j];
        k.theta[j] = theta;
        k.omega[j] = omega;
        const double c = std::cos(theta), s = std::sin(theta), l = joints[j].length;
        k.px[j + 1] = k.px[j] + l * c;
        k.pz[j + 1] = k.pz[j] + l * s;
        k.vx[j + 1] = k.vx[j] - omega * l * s;
        k.vz[j + 1] = k.vz[j] + omega * l * c;
    }
}

/// The part of inverse_dynamics() that depends on the joint angles alone, once
/// per substep: each link's direction (c, s) and its joint's position (px, pz).
void link_geometry(const std::vector<JointConfig>& joints, const std::vector<double>& q, Scratch& w) {
    const std::size_t n = joints.size();
    w.c.resize(n);
    w.s.resize(n);
    w.px.resize(n);
    w.pz.resize(n);
    double theta = 0.0, x = 0.0, z = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
        theta += q[j];
        w.c[j] = std::cos(theta);
        w.s[j] = std::sin(theta);
        w.px[j] = x;
        w.pz[j] = z;
        const double l = joints[j].length;
        x += l * w.c[j];
        z += l * w.s[j];
    }
}

/// Joint torques that produce accelerations qdd at (q, qd) under gravity g,
/// excluding rotor inertia and damping: for each joint, the rate of change of
/// the angular momentum of every body beyond it, about the joint (gravity enters
/// as an upward acceleration of the base). The angles q enter through
/// link_geometry(), which must have filled `w` for them.
void inverse_dynamics(const std::vector<JointConfig>& joints, const std::vector<Body>& bodies,
                      const std::vector<double>& qd, const std::vector<double>& qdd, double g,
                      std::vector<double>& tau, Scratch& w) {
    const std::size_t n = joints.size();
    const std::vector<double>& c = w.c;
    const std::vector<double>& s = w.s;
    const std::vector<double>& px = w.px;
    const std::vector<double>& pz = w.pz;
    std::vector<double>& omega = w.omega;
    std::vector<double>& alpha = w.alpha;
    std::vector<double>& ax = w.ax;
    std::vector<double>& az = w.az;
    omega.resize(n);
    alpha.resize(n);
    ax.resize(n);
    az.resize(n);
    double wsum = 0.0, a = 0.0, accx = 0.0, accz = g;
    for (std::size_t j = 0; j < n; ++j) {
        wsum += qd[j];
        a += qdd[j];
        omega[j] = wsum;
        alpha[j] = a;
        ax[j] = accx;
        az[j] = accz;
        const double l = joints[j].length;
        // a(p_j+1) = a(p_j) + α·l·n - ω²·l·u, with u = (c, s), n = (-s, c)
        accx += -a * l * s[j] - wsum * wsum * l * c[j];
        accz += a * l * c[j] - wsum * wsum * l * s[j];
    }
    tau.assign(n, 0.0);
    for (const Body& b : bodies) {
        const std::size_t j = b.link;
        const double ux = c[j], uz = s[j], nx = -s[j], nz = c[j];
        const double bx = px[j] + b.along * ux + b.across * nx;
        const double bz = pz[j] + b.along * uz + b.across * nz;
        const double w2 = omega[j] * omega[j];
        // a = a(p_j) + α·(along·n - across·u) - ω²·(along·u + across·n)
        const double abx = ax[j] + alpha[j] * (b.along * nx - b.across * ux) - w2 * (b.along * ux + b.across * nx);
        const double abz = az[j] + alpha[j] * (b.along * nz - b.across * uz) - w2 * (b.along * uz + b.across * nz);
        const double fx = b.mass * abx, fz = b.mass * abz;
        const double spin = b.inertia * alpha[j];
        for (std::size_t i = 0; i <= j; ++i) {
            const double rx = bx - px[i], rz = bz - pz[i];
            tau[i] += spin + (rx * fz - rz * fx);
        }
    }
}

/// Solves A·x = b for a symmetric positive-definite A (row-major n×n) in place.
void solve_spd(std::vector<double>& a, std::vector<double>& b, std::size_t n) {
    for (std::size_t j = 0; j < n; ++j) {  // Cholesky: A = L·Lᵀ, L stored in the lower triangle
        double d = a[j * n + j];
        for (std::size_t k = 0; k < j; ++k) d -= a[j * n + k] * a[j * n + k];
        d = std::sqrt(d);
        a[j * n + j] = d;
        for (std::size_t i = j + 1; i < n; ++i) {
            double v = a[i * n + j];
            for (std::size_t k = 0; k < j; ++k) v -= a[i * n + k] * a[j * n + k];
            a[i * n + j] = v / d;
        }
    }
    for (std::size_t i = 0; i < n; ++i) {  // L·y = b
        double v = b[i];
        for (std::size_t k = 0; k < i; ++k) v -= a[i * n + k] * b[k];
        b[i] = v / a[i * n + i];
    }
    for (std::size_t i = n; i-- > 0;) {  // Lᵀ·x = y
        double v = b[i];
        for (std::size_t k = i + 1; k < n; ++k) v -= a[k * n + i] * b[k];
        b[i] = v / a[i * n + i];
    }
}

[[noreturn]] void fail(const std::string& message) { throw gecko::Error(gecko::Errc::invalid_argument, message); }

std::string number(double v) {
    char buf[64];
    const auto result = std::to_chars(buf, buf + sizeof buf, v);  // shortest text that reads back exactly
    return std::string(buf, result.ptr);
}

}  // namespace

// ------------------------------------------------------------------ scene

SceneConfig SceneConfig::demo() {
    SceneConfig scene;
    for (int i = 0; i < 2; ++i) {
        RobotConfig robot;
        robot.name = "robot" + std::to_string(i + 1);
        robot.base = {0.0, 1.0 * i, 0.5};
        JointConfig shoulder;
        shoulder.name = "joint1";
        shoulder.length = 0.5;
        shoulder.mass = 2.0;
        JointConfig elbow;
        elbow.name = "joint2";
        elbow.length = 0.4;
        elbow.mass = 1.0;
        elbow.max_torque = 20.0;
        elbow.kp = 100.0;
        elbow.ki = 200.0;
        elbow.kd = 5.0;
        robot.joints = {shoulder, elbow};
        scene.robots.push_back(robot);
    }
    BoxConfig box;
    box.position = {0.6, 0.0, 0.3};
    box.rpy = {0.0, 0.0, 0.3};
    scene.boxes.push_back(box);
    return scene;
}

void SceneConfig::validate() const {
    auto positive = [](double v) { return std::isfinite(v) && v > 0.0; };
    auto non_negative = [](double v) { return std::isfinite(v) && v >= 0.0; };
    auto finite = [](const Vec3& v) { return std::isfinite(v[0]) && std::isfinite(v[1]) && std::isfinite(v[2]); };

    if (!positive(time_step)) fail("scene: time_step must be > 0 s (got " + number(time_step) + ")");
    if (substeps < 1) fail("scene: substeps must be at least 1");
    if (!non_negative(gravity)) fail("scene: gravity must be >= 0 m/s² (got " + number(gravity) + ")");
    if (robots.empty()) fail("scene: at least one robot is needed");

    std::vector<std::string> names;
    auto unique = [&](const std::string& name, const char* what) {
        if (name.empty()) fail(std::string("scene: a ") + what + " has an empty name");
        if (std::find(names.begin(), names.end(), name) != names.end()) {
            fail("scene: the name '" + name + "' is used twice (robot and box names must be unique)");
        }
        names.push_back(name);
    };
    for (const RobotConfig& r : robots) {
        unique(r.name, "robot");
        const std::string where = "scene: robot '" + r.name + "'";
        if (r.joints.empty()) fail(where + ": needs at least one joint");
        if (!finite(r.base)) fail(where + ": base must be finite");
        if (!non_negative(r.grasp_distance)) fail(where + ": grasp_distance must be >= 0 m");
        std::vector<std::string> joint_names;
        for (const JointConfig& j : r.joints) {
            const std::string at = where + " joint '" + j.name + "'";
            if (j.name.empty()) fail(where + ": a joint has an empty name");
            if (std::find(joint_names.begin(), joint_names.end(), j.name) != joint_names.end()) {
                fail(at + ": the name is used twice in this robot");
            }
            joint_names.push_back(j.name);
            if (!control_type_from_string(to_string(j.control))) fail(at + ": unknown control type");
            if (!positive(j.length)) fail(at + ": length must be > 0 m (got " + number(j.length) + ")");
            if (!positive(j.mass)) fail(at + ": mass must be > 0 kg (got " + number(j.mass) + ")");
            if (!positive(j.max_torque)) fail(at + ": max_torque must be > 0 N·m (got " + number(j.max_torque) + ")");
            const std::pair<const char*, double> gains[] = {{"rotor_inertia", j.rotor_inertia},
                                                            {"damping", j.damping},
                                                            {"kp", j.kp},
                                                            {"ki", j.ki},
                                                            {"kd", j.kd},
                                                            {"kv", j.kv},
                                                            {"kvi", j.kvi}};
            for (const auto& [key, value] : gains) {
                if (!non_negative(value)) fail(at + ": " + key + " must be >= 0 (got " + number(value) + ")");
            }
            if (!std::isfinite(j.initial_angle)) fail(at + ": initial angle must be finite");
            if (j.limited) {
                if (!std::isfinite(j.min_angle) || !std::isfinite(j.max_angle) || !(j.min_angle < j.max_angle)) {
                    fail(at + ": limits must be finite with min < max");
                }
                if (j.initial_angle < j.min_angle || j.initial_angle > j.max_angle) {
                    fail(at + ": initial angle " + number(j.initial_angle) + " is outside its limits");
                }
            }
        }
    }
    for (const BoxConfig& b : boxes) {
        unique(b.name, "box");
        const std::string where = "scene: box '" + b.name + "'";
        if (!positive(b.size[0]) || !positive(b.size[1]) || !positive(b.size[2])) fail(where + ": size must be > 0 m");
        if (!positive(b.mass)) fail(where + ": mass must be > 0 kg (got " + number(b.mass) + ")");
        if (!finite(b.position)) fail(where + ": position must be finite");
        if (!finite(b.rpy)) fail(where + ": rpy must be finite");
        if (!non_negative(b.friction)) fail(where + ": friction must be >= 0");
    }
}

namespace {

class SceneParser {
public:
    SceneParser(std::string_view text, std::string_view source) : text_(text), source_(source) {}

    SceneConfig parse() {
        std::size_t pos = 0;
        while (pos <= text_.size()) {
            const std::size_t eol = std::min(text_.find('\n', pos), text_.size());
            ++line_;
            line(text_.substr(pos, eol - pos));
            pos = eol + 1;
        }
        try {
            scene_.validate();
        } catch (const gecko::Error& e) {
            fail(std::string(source_) + ": " + e.what());
        }
        return std::move(scene_);
    }

private:
    [[noreturn]] void error(const std::string& what) const {
        fail(std::string(source_) + ":" + std::to_string(line_) + ": " + what);
    }

    void line(std::string_view text) {
        if (const auto hash = text.find('#'); hash != std::string_view::npos) text = text.substr(0, hash);
        words_.clear();
        std::size_t i = 0;
        while (i < text.size()) {
            while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r')) ++i;
            std::size_t j = i;
            while (j < text.size() && text[j] != ' ' && text[j] != '\t' && text[j] != '\r') ++j;
            if (j > i) words_.push_back(text.substr(i, j - i));
            i = j;
        }
        if (words_.empty()) return;
        const std::string_view key = words_[0];

        if (key == "time_step") { scene_.time_step = one(); return; }
        if (key == "substeps") {
            const double v = one();
            if (v < 1 || v > 1e6 || v != std::floor(v)) error("substeps must be a whole number from 1 to 1000000");
            scene_.substeps = static_cast<unsigned>(v);
            return;
        }
        if (key == "gravity") { scene_.gravity = one(); return; }
        if (key == "robot") {
            scene_.robots.emplace_back();
            scene_.robots.back().name = name_argument("robot");
            block_ = Block::robot;
            return;
        }
        if (key == "box") {
            scene_.boxes.emplace_back();
            scene_.boxes.back().name = name_argument("box");
            block_ = Block::box;
            return;
        }
        if (key == "base" || key == "gripper" || key == "grasp_distance" || key == "joint") {
            if (block_ != Block::robot) error("'" + std::string(key) + "' belongs in a robot block (after 'robot NAME')");
            RobotConfig& robot = scene_.robots.back();
            if (key == "base") { robot.base = three(); return; }
            if (key == "grasp_distance") { robot.grasp_distance = one(); return; }
            if (key == "gripper") {
                count(2);
                if (words_[1] == "on") robot.gripper = true;
                else if (words_[1] == "off") robot.gripper = false;
                else error("gripper is 'on' or 'off', not '" + std::string(words_[1]) + "'");
                return;
            }
            return joint(robot);
        }
        if (key == "size" || key == "mass" || key == "position" || key == "rpy" || key == "friction") {
            if (block_ != Block::box) {
                error("'" + std::string(key) + "' belongs in a box block (after 'box NAME'); joint masses go on the joint line");
            }
            BoxConfig& box = scene_.boxes.back();
            if (key == "size") { box.size = three(); return; }
            if (key == "mass") { box.mass = one(); return; }
            if (key == "position") { box.position = three(); return; }
            if (key == "rpy") { box.rpy = three(); return; }
            box.friction = one();  // friction
            return;
        }
        error("unknown keyword '" + std::string(key) + "'");
    }

    void joint(RobotConfig& robot) {
        if (words_.size() < 3) error("a joint line is 'joint NAME TYPE [KEY VALUE]...'");
        JointConfig j;
        j.name = std::string(words_[1]);
        const auto type = control_type_from_string(words_[2]);
        if (!type) {
            error("unknown control type '" + std::string(words_[2]) + "' (angle, angular_velocity or torque)");
        }
        j.control = *type;
        for (std::size_t i = 3; i < words_.size();) {
            const std::string_view key = words_[i];
            auto value = [&](std::size_t k) {
                if (i + k >= words_.size()) error("joint key '" + std::string(key) + "' lacks a value");
                return to_number(words_[i + k]);
            };
            if (key == "limits") {
                j.limited = true;
                j.min_angle = value(1);
                j.max_angle = value(2);
                i += 3;
                continue;
            }
            double* field = nullptr;
            if (key == "length") field = &j.length;
            else if (key == "mass") field = &j.mass;
            else if (key == "rotor_inertia") field = &j.rotor_inertia;
            else if (key == "damping") field = &j.damping;
            else if (key == "max_torque") field = &j.max_torque;
            else if (key == "kp") field = &j.kp;
            else if (key == "ki") field = &j.ki;
            else if (key == "kd") field = &j.kd;
            else if (key == "kv") field = &j.kv;
            else if (key == "kvi") field = &j.kvi;
            else if (key == "initial") field = &j.initial_angle;
            else error("unknown joint key '" + std::string(key) + "'");
            *field = value(1);
            i += 2;
        }
        robot.joints.push_back(std::move(j));
    }

    std::string name_argument(const char* what) {
        if (words_.size() != 2) error(std::string("'") + what + "' takes one name: '" + what + " NAME'");
        return std::string(words_[1]);
    }

    void count(std::size_t n) const {
        if (words_.size() != n) {
            error("'" + std::string(words_[0]) + "' takes " + std::to_string(n - 1) + " value(s), got " +
                  std::to_string(words_.size() - 1));
        }
    }

    double to_number(std::string_view word) const {
        double v = 0.0;
        const auto result = std::from_chars(word.data(), word.data() + word.size(), v);
        if (result.ec != std::errc() || result.ptr != word.data() + word.size() || !std::isfinite(v)) {
            error("'" + std::string(word) + "' is not a number");
        }
        return v;
    }

    double one() {
        count(2);
        return to_number(words_[1]);
    }

    Vec3 three() {
        count(4);
        return {to_number(words_[1]), to_number(words_[2]), to_number(words_[3])};
    }

    enum class Block { none, robot, box };

    std::string_view text_;
    std::string_view source_;
    std::size_t line_{0};
    std::vector<std::string_view> words_;
    Block block_{Block::none};
    SceneConfig scene_;
};

}  // namespace

SceneConfig parse_scene(std::string_view text, std::string_view source) {
    return SceneParser(text, source).parse();
}

std::string format_scene(const SceneConfig& scene) {
    std::ostringstream out;
    auto vec = [](const Vec3& v) { return number(v[0]) + " " + number(v[1]) + " " + number(v[2]); };
    out << "# Gecko demo simulator scene\n";
    out << "time_step " << number(scene.time_step) << "\n";
    out << "substeps " << scene.substeps << "\n";
    out << "gravity " << number(scene.gravity) << "\n";
    for (const RobotConfig& r : scene.robots) {
        out << "\nrobot " << r.name << "\n";
        out << "base " << vec(r.base) << "\n";
        out << "gripper " << (r.gripper ? "on" : "off") << "\n";
        out << "grasp_distance " << number(r.grasp_distance) << "\n";
        for (const JointConfig& j : r.joints) {
            out << "joint " << j.name << " " << to_string(j.control) << " length " << number(j.length) << " mass "
                << number(j.mass) << " rotor_inertia " << number(j.rotor_inertia) << " damping " << number(j.damping)
                << " max_torque " << number(j.max_torque) << " kp " << number(j.kp) << " ki " << number(j.ki)
                << " kd " << number(j.kd) << " kv " << number(j.kv) << " kvi " << number(j.kvi) << " initial "
                << number(j.initial_angle);
            if (j.limited) out << " limits " << number(j.min_angle) << " " << number(j.max_angle);
            out << "\n";
        }
    }
    for (const BoxConfig& b : scene.boxes) {
        out << "\nbox " << b.name << "\n";
        out << "size " << vec(b.size) << "\n";
        out << "mass " << number(b.mass) << "\n";
        out << "position " << vec(b.position) << "\n";
        out << "rpy " << vec(b.rpy) << "\n";
        out << "friction " << number(b.friction) << "\n";
    }
    return out.str();
}

// ------------------------------------------------------------------ simulation

Simulation::Simulation(SceneConfig scene) : scene_(std::move(scene)) {
    scene_.validate();
    for (const RobotConfig& config : scene_.robots) {
        Robot r;
        const std::size_t n = config.joints.size();
        r.state.angles.resize(n);
        r.state.angular_velocities.assign(n, 0.0);
        r.state.torques.assign(n, 0.0);
        r.control.values.assign(n, 0.0);
        r.integral.assign(n, 0.0);
        for (std::size_t j = 0; j < n; ++j) {
            r.state.angles[j] = config.joints[j].initial_angle;
            if (config.joints[j].control == ControlType::angle) r.control.values[j] = config.joints[j].initial_angle;
        }
        robots_.push_back(std::move(r));
    }
    for (const BoxConfig& config : scene_.boxes) {
        BoxState b;
        b.position = config.position;
        b.orientation = from_rpy(config.rpy);
        b.rpy = to_rpy(b.orientation);
        boxes_.push_back(b);
    }
    for (std::size_t r = 0; r < robots_.size(); ++r) update_tip(r);
    initial_robots_ = robots_;
    initial_boxes_ = boxes_;
}

void Simulation::reset() {
    robots_ = initial_robots_;
    boxes_ = initial_boxes_;
    steps_ = 0;
}

double Simulation::time() const noexcept { return static_cast<double>(steps_) * scene_.time_step; }

const RobotState& Simulation::robot(std::size_t index) const {
    if (index >= robots_.size()) {
        fail("sim: robot index " + std::to_string(index) + " out of range (" + std::to_string(robots_.size()) + " robots)");
    }
    return robots_[index].state;
}

const RobotControl& Simulation::control(std::size_t index) const {
    robot(index);  // range check
    return robots_[index].control;
}

const BoxState& Simulation::box(std::size_t index) const {
    if (index >= boxes_.size()) {
        fail("sim: box index " + std::to_string(index) + " out of range (" + std::to_string(boxes_.size()) + " boxes)");
    }
    return boxes_[index];
}

std::optional<std::size_t> Simulation::robot_index(std::string_view name) const noexcept {
    for (std::size_t i = 0; i < scene_.robots.size(); ++i) {
        if (scene_.robots[i].name == name) return i;
    }
    return std::nullopt;
}

std::optional<std::size_t> Simulation::box_index(std::string_view name) const noexcept {
    for (std::size_t i = 0; i < scene_.boxes.size(); ++i) {
        if (scene_.boxes[i].name == name) return i;
    }
    return std::nullopt;
}

void Simulation::set_control(std::size_t robot, const RobotControl& control) {
    this->robot(robot);  // range check
    const RobotConfig& config = scene_.robots[robot];
    if (control.values.size() != config.joints.size()) {
        fail("sim: robot '" + config.name + "' has " + std::to_string(config.joints.size()) + " joints, control has " +
             std::to_string(control.values.size()) + " values");
    }
    for (std::size_t j = 0; j < control.values.size(); ++j) {
        if (!std::isfinite(control.values[j])) {
            fail("sim: robot '" + config.name + "' joint '" + config.joints[j].name + "': control value is not finite");
        }
    }
    if (control.gripper_activated && !config.gripper) fail("sim: robot '" + config.name + "' has no gripper");
    robots_[robot].control = control;
    robots_[robot].state.gripper_activated = control.gripper_activated;
}

void Simulation::set_gripper(std::size_t robot, bool activated) {
    this->robot(robot);
    if (activated && !scene_.robots[robot].gripper) {
        fail("sim: robot '" + scene_.robots[robot].name + "' has no gripper");
    }
    robots_[robot].control.gripper_activated = activated;
    robots_[robot].state.gripper_activated = activated;
}

void Simulation::step() {
    const double dt = scene_.time_step / static_cast<double>(scene_.substeps);
    for (unsigned i = 0; i < scene_.substeps; ++i) substep(dt);
    ++steps_;
}

void Simulation::substep(double dt) {
    update_grippers();
    for (std::size_t r = 0; r < robots_.size(); ++r) {
        step_arm(r, dt);
        if (robots_[r].grip) place_held_box(r);
        update_tip(r);
    }
    for (std::size_t b = 0; b < boxes_.size(); ++b) {
        if (!boxes_[b].held_by) step_box(boxes_[b], scene_.boxes[b], dt);
    }
}

void Simulation::update_tip(std::size_t r) {
    const RobotConfig& config = scene_.robots[r];
    RobotState& s = robots_[r].state;
    Kinematics& k = scratch_.kinematics;
    forward(config.joints, s.angles, s.angular_velocities, k);
    const std::size_t n = config.joints.size();
    s.tip_position = {config.base[0] + k.px[n], config.base[1], config.base[2] + k.pz[n]};
}

void Simulation::update_grippers() {
    for (std::size_t r = 0; r < robots_.size(); ++r) {
        Robot& robot = robots_[r];
        const RobotConfig& config = scene_.robots[r];
        if (!robot.control.gripper_activated && robot.grip) {
            // Release: the box leaves with the velocity it had in the gripper (set by place_held_box).
            boxes_[*robot.state.held_box].held_by.reset();
            robot.state.held_box.reset();
            robot.grip.reset();
            continue;
        }
        if (!robot.control.gripper_activated || robot.grip) continue;

        Kinematics& k = scratch_.kinematics;
        forward(config.joints, robot.state.angles, robot.state.angular_velocities, k);
        const std::size_t n = config.joints.size();
        const Vec3 tip{config.base[0] + k.px[n], config.base[1], config.base[2] + k.pz[n]};
        for (std::size_t b = 0; b < boxes_.size(); ++b) {
            BoxState& box = boxes_[b];
            if (box.held_by) continue;
            const BoxConfig& bc = scene_.boxes[b];
            const Matrix3 rot = rotation(box.orientation);
            const Vec3 local = apply_transposed(rot, sub(tip, box.position));
            Vec3 outside{};
            for (int i = 0; i < 3; ++i) {
                const double half = 0.5 * bc.size[i];
                outside[i] = local[i] - std::clamp(local[i], -half, half);
            }
            if (std::sqrt(dot(outside, outside)) > config.grasp_distance) continue;

            // Grasp: remember where the box sits on the last link.
            const std::size_t last = n - 1;
            const double theta = k.theta[last];
            const Vec3 joint{config.base[0] + k.px[last], config.base[1], config.base[2] + k.pz[last]};
            const Vec3 u{std::cos(theta), 0.0, std::sin(theta)};
            const Vec3 nrm{-std::sin(theta), 0.0, std::cos(theta)};
            const Vec3 d = sub(box.position, joint);
            Grip grip;
            grip.along = dot(d, u);
            grip.across = dot(d, nrm);
            grip.off_plane = box.position[1] - config.base[1];
            grip.relative = normalized(mul(about_y(theta), box.orientation));  // link frame is about_y(-θ)
            const Vec3 inertia = box_inertia(bc);
            grip.inertia = rot[1][0] * rot[1][0] * inertia[0] + rot[1][1] * rot[1][1] * inertia[1] +
                           rot[1][2] * rot[1][2] * inertia[2];
            robot.grip = grip;
            robot.state.held_box = b;
            box.held_by = r;
            place_held_box(r);
            break;
        }
    }
}

void Simulation::place_held_box(std::size_t r) {
    const Robot& robot = robots_[r];
    const RobotConfig& config = scene_.robots[r];
    const Grip& grip = *robot.grip;
    BoxState& box = boxes_[*robot.state.held_box];
    Kinematics& k = scratch_.kinematics;
    forward(config.joints, robot.state.angles, robot.state.angular_velocities, k);
    const std::size_t last = config.joints.size() - 1;
    const double theta = k.theta[last], omega = k.omega[last];
    const double ux = std::cos(theta), uz = std::sin(theta), nx = -uz, nz = ux;
    box.position = {config.base[0] + k.px[last] + grip.along * ux + grip.across * nx, config.base[1] + grip.off_plane,
                    config.base[2] + k.pz[last] + grip.along * uz + grip.across * nz};
    box.linear_velocity = {k.vx[last] + omega * (grip.along * nx - grip.across * ux), 0.0,
                           k.vz[last] + omega * (grip.along * nz - grip.across * uz)};
    box.angular_velocity = {0.0, -omega, 0.0};  // the plane's +θ turns about -y
    box.orientation = normalized(mul(about_y(-theta), grip.relative));
    box.rpy = to_rpy(box.orientation);
}

void Simulation::step_arm(std::size_t r, double dt) {
    Robot& robot = robots_[r];
    const RobotConfig& config = scene_.robots[r];
    const std::vector<JointConfig>& joints = config.joints;
    const std::size_t n = joints.size();
    std::vector<double>& q = robot.state.angles;
    std::vector<double>& qd = robot.state.angular_velocities;

    Scratch& w = scratch_;
    std::vector<Body>& bodies = w.bodies;
    bodies.clear();
    for (std::size_t j = 0; j < n; ++j) {
        const double l = joints[j].length, m = joints[j].mass;
        bodies.push_back({j, 0.5 * l, 0.0, m, m * l * l / 12.0});
    }
    if (robot.grip) {
        const BoxConfig& held = scene_.boxes[*robot.state.held_box];
        bodies.push_back({n - 1, robot.grip->along, robot.grip->across, held.mass, robot.grip->inertia});
    }

    // Bias torques (Coriolis, centrifugal, gravity) and the mass matrix.
    std::vector<double>& bias = w.bias;
    std::vector<double>& column = w.column;
    std::vector<double>& zero = w.zero;
    std::vector<double>& a = w.mass;
    std::vector<double>& unit = w.unit;
    zero.assign(n, 0.0);
    link_geometry(joints, q, w);
    inverse_dynamics(joints, bodies, qd, zero, scene_.gravity, bias, w);
    a.assign(n * n, 0.0);
    unit.assign(n, 0.0);
    for (std::size_t j = 0; j < n; ++j) {
        unit[j] = 1.0;
        inverse_dynamics(joints, bodies, zero, unit, 0.0, column, w);
        unit[j] = 0.0;
        for (std::size_t i = 0; i < n; ++i) a[i * n + j] = column[i];
        a[j * n + j] += joints[j].rotor_inertia;
    }

    // Actuators. `implicit` collects each joint's velocity gain, integrated implicitly.
    std::vector<double>& rhs = w.rhs;
    rhs.resize(n);
    for (std::size_t j = 0; j < n; ++j) {
        const JointConfig& jc = joints[j];
        const double target = robot.control.values[j];
        double implicit = jc.damping;
        double u = 0.0;
        switch (jc.control) {
            case ControlType::angle: {
                const double e = target - q[j];
                u = jc.kp * e + jc.ki * robot.integral[j] - jc.kd * qd[j];
                if (std::abs(u) <= jc.max_torque) {
                    robot.integral[j] += e * dt;
                    implicit += jc.kd;
                }
                if (jc.ki > 0.0) robot.integral[j] = std::clamp(robot.integral[j], -jc.max_torque / jc.ki, jc.max_torque / jc.ki);
                break;
            }
            case ControlType::angular_velocity: {
                const double e = target - qd[j];
                u = jc.kv * e + jc.kvi * robot.integral[j];
                if (std::abs(u) <= jc.max_torque) {
                    robot.integral[j] += e * dt;
                    implicit += jc.kv;
                }
                if (jc.kvi > 0.0) {
                    robot.integral[j] = std::clamp(robot.integral[j], -jc.max_torque / jc.kvi, jc.max_torque / jc.kvi);
                }
                break;
            }
            case ControlType::torque:
                u = target;
                break;
        }
        u = std::clamp(u, -jc.max_torque, jc.max_torque);
        robot.state.torques[j] = u;
        rhs[j] = u - jc.damping * qd[j] - bias[j];
        a[j * n + j] += dt * implicit;
    }

    // (M + dt·D)·q̈ = τ - h, then semi-implicit Euler.
    solve_spd(a, rhs, n);
    for (std::size_t j = 0; j < n; ++j) {
        qd[j] += dt * rhs[j];
        q[j] += dt * qd[j];
        const JointConfig& jc = joints[j];
        if (jc.limited) {
            if (q[j] < jc.min_angle) {
                q[j] = jc.min_angle;
                if (qd[j] < 0.0) qd[j] = 0.0;
            } else if (q[j] > jc.max_angle) {
                q[j] = jc.max_angle;
                if (qd[j] > 0.0) qd[j] = 0.0;
            }
        }
    }
}

void Simulation::step_box(BoxState& box, const BoxConfig& config, double dt) const {
    const double m = config.mass;
    const double g = scene_.gravity;
    // Ground contact: per-corner spring-damper, critically damped for the whole
    // box on four corners, as stiff as the substep allows (sinks g/ω² at rest).
    const double omega_c = std::min(200.0, 0.2 / dt);
    const double k = m * omega_c * omega_c / 4.0;
    const double c = m * omega_c / 2.0;
    const double v_eps = std::max(0.02, 5.0 * config.friction * g * dt);  // friction regularisation, m/s

    const Matrix3 rot = rotation(box.orientation);
    Vec3 force{0.0, 0.0, -m * g};
    Vec3 torque{0.0, 0.0, 0.0};
    for (int corner = 0; corner < 8; ++corner) {
        const Vec3 local{((corner & 1) ? 0.5 : -0.5) * config.size[0], ((corner & 2) ? 0.5 : -0.5) * config.size[1],
                         ((corner & 4) ? 0.5 : -0.5) * config.size[2]};
        const Vec3 offset = apply(rot, local);
        const double height = box.position[2] + offset[2];
        if (height >= 0.0) continue;
        const Vec3 v = add(box.linear_velocity, cross(box.angular_velocity, offset));
        const double normal = k * (-height) - c * v[2];
        if (normal <= 0.0) continue;
        const double slip = std::sqrt(v[0] * v[0] + v[1] * v[1]);
        const double friction = config.friction * normal / std::max(slip, v_eps);
        const Vec3 f{-friction * v[0], -friction * v[1], normal};
        force = add(force, f);
        torque = add(torque, cross(offset, f));
    }

    box.linear_velocity = add(box.linear_velocity, scale(force, dt / m));
    const Vec3 inertia = box_inertia(config);
    Vec3 w = apply_transposed(rot, box.angular_velocity);  // body frame
    const Vec3 t = apply_transposed(rot, torque);
    const Vec3 gyro = cross(w, {inertia[0] * w[0], inertia[1] * w[1], inertia[2] * w[2]});
    for (int i = 0; i < 3; ++i) w[i] += dt * (t[i] - gyro[i]) / inertia[i];
    box.angular_velocity = apply(rot, w);

    box.position = add(box.position, scale(box.linear_velocity, dt));
    const double speed = std::sqrt(dot(box.angular_velocity, box.angular_velocity));
    if (speed > 0.0) {
        const double half = 0.5 * speed * dt;
        const double s = std::sin(half) / speed;
        const Quaternion turn{std::cos(half), box.angular_velocity[0] * s, box.angular_velocity[1] * s,
                              box.angular_velocity[2] * s};
        box.orientation = normalized(mul(turn, box.orientation));
    }
    box.rpy = to_rpy(box.orientation);
}

}  // namespace gecko::sim
