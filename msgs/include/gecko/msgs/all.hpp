// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file all.hpp
/// Every message family at once (Click lockstep messages excepted: include
/// <gecko/msgs/click.hpp> for those).

#include <gecko/msgs/codec.hpp>
#include <gecko/msgs/geometry.hpp>
#include <gecko/msgs/sensors.hpp>
#include <gecko/msgs/sim.hpp>
#include <gecko/msgs/std.hpp>
#include <gecko/msgs/traits.hpp>
