// pub_camera_loaned: publishes a 640x480 rgb8 image at 30 Hz on "camera",
// each written straight into the memory it is sent from (a loan): over shared
// memory, subscribers on this host read the pixels where they were drawn.
// Run:  geckocore --key dalek &   ./build/bin/pub_camera_loaned --key dalek [--count N]
//       gecko echo --key dalek camera --count 1   (or a Subscriber reading gecko::BytesView)
#include <gecko/gecko.hpp>

struct ImageOut {  // gecko.msgs.Image, its pixels filled after encoding
    static constexpr const char* type_name = "gecko.msgs.Image";
    std::int64_t stamp_ns = 0;
    std::string frame_id, encoding;
    std::uint32_t width = 0, height = 0, step = 0;
    gecko::BytesToFill data;  // room reserved in the loan, written in place
    GECKO_MSG_FIELDS(stamp_ns, frame_id, encoding, width, height, step, data)
};

int main(int argc, char** argv) {
    gecko::OptionParser args("pub_camera_loaned", "publishes a 640x480 rgb8 image at 30 Hz on \"camera\", in place");
    long count = -1;  // forever
    args.integer("--count", count, 1, 1000000000, "N", "stop after N images");
    gecko::Node node(gecko::NodeOptions::from_args(argc, argv, args, "camera_driver"));
    gecko::install_signal_handlers();
    auto camera = node.publisher<ImageOut>("camera");

    gecko::Rate rate(30.0);  // Hz
    for (long n = 0; gecko::ok() && n != count; ++n) {
        ImageOut image{gecko::now_ns(), "camera_link", "rgb8", 640, 480, 640 * 3, gecko::BytesToFill(640 * 480 * 3)};
        auto loan = camera.loan(image.data.size() + 128);  // the pixels plus the small fields
        loan.encode(image);                                // writes the small fields, reserves the pixels
        std::uint8_t* pixel = image.data.data();           // inside the loan
        for (std::size_t i = 0; i < image.data.size(); ++i) pixel[i] = static_cast<std::uint8_t>(i / 3 + n);
        camera.publish(std::move(loan));
        if (n % 30 == 0) {
            const auto s = camera.stats();
            node.logger().info("images sent: " + std::to_string(s.messages) + ", from shared memory without a copy: " +
                               std::to_string(s.loaned));
        }
        rate.sleep();
    }
}
