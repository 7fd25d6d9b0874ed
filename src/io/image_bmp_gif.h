// Decoding of BMP and GIF images, as TensorFlow's tf.io.decode_image reads them.
#pragma once

#include <string_view>

#include "src/io/image.h"

namespace fastnn::io {

/// True when bytes start like a BMP ("BM").
bool is_bmp(std::string_view bytes);
/// True when bytes start like a GIF ("GIF87a" or "GIF89a").
bool is_gif(std::string_view bytes);

/// Size and stored channels from the headers and the palette, no pixel decoding: channels 1 for
/// a BMP of 8 bits per pixel or less whose palette is all gray, else 3. Throws DataError on a
/// truncated, bad or unsupported header.
ImageInfo bmp_info(std::string_view bytes);
/// The logical screen's size (what decode_gif returns); channels 3. Throws DataError on a
/// truncated or bad header.
ImageInfo gif_info(std::string_view bytes);

/// Decodes a whole BMP: a BITMAPINFOHEADER (40 bytes, or 52 and 56 with the masks inside) or a
/// V4/V5 header; uncompressed 1, 4 and 8 bits per pixel (palette), 16 (5-5-5), 24 and 32, and
/// BI_BITFIELDS at 16 and 32; alpha is dropped. channels as decode_image's: 0 keeps the stored
/// channels (see bmp_info), 1 forces gray, 3 RGB. Throws DataError for RLE and other
/// compressions, OS/2 headers, a palette index outside the palette, and a file that ends before
/// its pixel rows (each padded to 4 bytes).
Image decode_bmp(std::string_view bytes, int channels);
/// Decodes the first frame only, composited onto the logical screen as TensorFlow's
/// decode_image(expand_animations=False) does: the screen starts black (0), the frame is placed
/// at its offset and clipped to the screen, and pixels of the transparent index (from the
/// Graphic Control Extension before the frame) stay black. channels: 0 and 3 give RGB, 1 gray.
/// Throws DataError when the frame's data ends before all its pixels, on a bad LZW code, a
/// color index outside the color table, or a truncated file.
Image decode_gif(std::string_view bytes, int channels);

}  // namespace fastnn::io
