# SPDX-License-Identifier: Apache-2.0
"""What a brain shows on the page (docs/ACADEMY.md, "GUI"): an image and a
text, published on Gecko topics that gecko-bridge's GUI endpoint sends to
the page, with the robot's joints, at the GUI frequency.

    GUI.show_image(pixels, width=64, height=48)        # bytes, rgb8 rows, top row first
    GUI.show_image(array)                              # or anything with .shape (h, w[, 3]) and .tobytes(): uint8
    GUI.show_text("distance %.2f m" % d)
"""

import time

from ..msgs.sensors import Image
from ..msgs.std import String

ENCODINGS = {"rgb8": 3, "bgr8": 3, "rgba8": 4, "bgra8": 4, "mono8": 1}


class Gui:
    def __init__(self, node, image_topic="academy/image", text_topic="academy/text"):
        # Latched: a GUI page that comes later sees what is shown now.
        self._images = node.publisher(image_topic, Image, latched=True)
        self._texts = node.publisher(text_topic, String, latched=True)

    def show_image(self, image, width=None, height=None, encoding=None):
        """Shows `image`: bytes of `height` rows of `width` pixels, or an
        array of uint8 with .shape (height, width) (mono8) or (height,
        width, 3) (rgb8). encoding: rgb8 (default), bgr8, rgba8, bgra8, mono8."""
        if hasattr(image, "shape") and hasattr(image, "tobytes"):
            shape = tuple(image.shape)
            height, width = shape[0], shape[1]
            channels = shape[2] if len(shape) > 2 else 1
            encoding = encoding or {1: "mono8", 3: "rgb8", 4: "rgba8"}.get(channels)
            data = image.tobytes()
        else:
            data = bytes(image)
            encoding = encoding or "rgb8"
        if encoding not in ENCODINGS:
            raise ValueError("encoding %r: the GUI shows %s" % (encoding, ", ".join(ENCODINGS)))
        if not width or not height:
            raise ValueError("show_image(bytes) needs width= and height=")
        step = int(width) * ENCODINGS[encoding]
        if len(data) != step * int(height):
            raise ValueError("%d bytes are not %d rows of %d %s pixels" % (len(data), height, width, encoding))
        self._images.publish(Image(stamp_ns=time.time_ns(), width=int(width), height=int(height), encoding=encoding,
                                   step=step, data=data))

    def show_text(self, text):
        """Shows `text` beside the image."""
        self._texts.publish(String(data=str(text)))
