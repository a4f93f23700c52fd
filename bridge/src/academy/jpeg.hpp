// SPDX-License-Identifier: Apache-2.0
#pragma once
/// @file jpeg.hpp
/// An image's pixels as a JPEG file, by libjpeg-turbo (Debian 12:
/// libjpeg62-turbo-dev), for the academy's GUI frames.

#include <gecko/msgs/sensors.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace gecko::bridge::academy {

/// The JPEG of `image` (encodings rgb8, bgr8, rgba8, bgra8, mono8) at
/// `quality` (1-100).
/// @throws std::invalid_argument naming what is wrong with the image
/// (another encoding, a size its data does not hold).
std::vector<std::uint8_t> encode_jpeg(const gecko::msgs::Image& image, int quality = 80);

}  // namespace gecko::bridge::academy
