// SPDX-License-Identifier: Apache-2.0
#include "academy/jpeg.hpp"

#include <cstdio>  // jpeglib.h wants FILE declared first
#include <jpeglib.h>

#include <csetjmp>
#include <cstdlib>
#include <memory>
#include <stdexcept>

namespace gecko::bridge::academy {

namespace {

struct Failure {
    jpeg_error_mgr manager;
    std::jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
};

// libjpeg's default exits the process; this returns to encode_jpeg instead.
void on_error(j_common_ptr info) {
    auto* f = reinterpret_cast<Failure*>(info->err);
    (*info->err->format_message)(info, f->message);
    std::longjmp(f->jump, 1);
}

}  // namespace

std::vector<std::uint8_t> encode_jpeg(const gecko::msgs::Image& image, int quality) {
    const std::string& e = image.encoding;
    const int channels = e == "mono8" ? 1 : (e == "rgb8" || e == "bgr8") ? 3 : (e == "rgba8" || e == "bgra8") ? 4 : 0;
    if (channels == 0)
        throw std::invalid_argument("image encoding '" + e + "' is not one the GUI shows (rgb8, bgr8, rgba8, bgra8, mono8)");
    if (image.width == 0 || image.height == 0 || image.width > 16384 || image.height > 16384)
        throw std::invalid_argument("image of " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                                    " pixels");
    const std::size_t row = static_cast<std::size_t>(image.width) * static_cast<std::size_t>(channels);
    const std::size_t step = image.step ? image.step : row;
    if (step < row || image.data.size() < step * (image.height - 1) + row)
        throw std::invalid_argument("image data of " + std::to_string(image.data.size()) + " bytes is short of " +
                                    std::to_string(image.height) + " rows of " + std::to_string(step) + " bytes");
    const bool swap = e == "bgr8" || e == "bgra8";

    // Rows converted to what libjpeg takes: RGB or grayscale.
    const int out_channels = channels == 1 ? 1 : 3;
    std::vector<unsigned char> line(static_cast<std::size_t>(image.width) * static_cast<std::size_t>(out_channels));
    unsigned char* buffer = nullptr;
    unsigned long size = 0;

    jpeg_compress_struct info{};
    Failure failure{};
    info.err = jpeg_std_error(&failure.manager);
    failure.manager.error_exit = on_error;
    if (setjmp(failure.jump)) {
        jpeg_destroy_compress(&info);
        std::free(buffer);
        throw std::invalid_argument(std::string("JPEG encoding failed: ") + failure.message);
    }
    jpeg_create_compress(&info);
    jpeg_mem_dest(&info, &buffer, &size);
    info.image_width = image.width;
    info.image_height = image.height;
    info.input_components = out_channels;
    info.in_color_space = out_channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&info);
    jpeg_set_quality(&info, quality, TRUE);
    jpeg_start_compress(&info, TRUE);
    while (info.next_scanline < info.image_height) {
        const std::uint8_t* src = image.data.data() + step * info.next_scanline;
        if (out_channels == 1) {
            for (std::size_t x = 0; x < image.width; ++x) line[x] = src[x];
        } else {
            for (std::size_t x = 0; x < image.width; ++x) {
                const std::uint8_t* p = src + x * static_cast<std::size_t>(channels);
                line[3 * x] = swap ? p[2] : p[0];
                line[3 * x + 1] = p[1];
                line[3 * x + 2] = swap ? p[0] : p[2];
            }
        }
        JSAMPROW rows[1] = {line.data()};
        jpeg_write_scanlines(&info, rows, 1);
    }
    jpeg_finish_compress(&info);
    jpeg_destroy_compress(&info);
    std::vector<std::uint8_t> out(buffer, buffer + size);
    std::free(buffer);
    return out;
}

}  // namespace gecko::bridge::academy
