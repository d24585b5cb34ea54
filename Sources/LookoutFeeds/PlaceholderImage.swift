/// Renders small deterministic PNG placeholder images for the demo data's thumbnails.
///
/// The encoder is deliberately minimal: truecolour, 8 bits per channel, no interlace, and a
/// zlib stream of *stored* deflate blocks. Placeholders are tiny and served rarely, so
/// skipping compression keeps this dependency-free and easy to verify.
public enum PlaceholderImage {
    /// Returns a valid PNG (RGB, 8-bit) of `width`×`height` whose colours derive deterministically from `name`.
    ///
    /// The image is a vertical gradient between two colours taken from an FNV-1a hash of
    /// `name`, so the same name always yields byte-identical output.
    /// - Parameters:
    ///   - name: Any string, typically the image's file name without extension (`"info-07"`).
    ///   - width: Width in pixels.
    ///   - height: Height in pixels.
    /// - Returns: The complete PNG file.
    /// - Precondition: 1...1024 for both dimensions.
    public static func png(named name: String, width: Int = 160, height: Int = 120) -> [UInt8] {
        precondition(
            (1...1024).contains(width) && (1...1024).contains(height),
            "PlaceholderImage dimensions must be within 1...1024")
        let hash = fnv1a(name)
        let top = colour(from: hash)
        let bottom = colour(from: hash >> 32)

        // Each scanline is a filter-type byte (0 = None) followed by the RGB triples.
        var scanlines: [UInt8] = []
        scanlines.reserveCapacity(height * (1 + 3 * width))
        for y in 0..<height {
            let t = height == 1 ? 0 : y * 255 / (height - 1)
            let row = (0..<3).map { UInt8((Int(top[$0]) * (255 - t) + Int(bottom[$0]) * t) / 255) }
            scanlines.append(0)
            for _ in 0..<width { scanlines.append(contentsOf: row) }
        }

        var header: [UInt8] = []
        header.appendBigEndian(UInt32(width))
        header.appendBigEndian(UInt32(height))
        // Bit depth 8, colour type 2 (RGB), deflate compression, adaptive filtering, no interlace.
        header += [8, 2, 0, 0, 0]

        var out: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        appendChunk("IHDR", header, to: &out)
        appendChunk("IDAT", zlibStored(scanlines), to: &out)
        appendChunk("IEND", [], to: &out)
        return out
    }

    // MARK: - Colour

    /// 64-bit FNV-1a: tiny, stable across runs and platforms (unlike `Hasher`, which is seeded per process).
    static func fnv1a(_ string: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in string.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }

    /// Maps hash bits to a mid-to-light colour; raw bytes can be near-black, which makes dull placeholders.
    static func colour(from bits: UInt64) -> [UInt8] {
        (0..<3).map { channel in
            let byte = (bits >> (8 * UInt64(channel))) & 0xFF
            return UInt8(64 + byte * 3 / 4)
        }
    }

    // MARK: - PNG / zlib framing

    /// Appends a chunk: big-endian length, type, data, then CRC-32 over type and data.
    static func appendChunk(_ type: String, _ data: [UInt8], to out: inout [UInt8]) {
        let typeAndData = Array(type.utf8) + data
        out.appendBigEndian(UInt32(data.count))
        out += typeAndData
        out.appendBigEndian(crc32(typeAndData))
    }

    /// Wraps `data` in a zlib stream of stored deflate blocks (RFC 1950/1951).
    static func zlibStored(_ data: [UInt8]) -> [UInt8] {
        // CMF 0x78 = deflate with a 32 KiB window; FLG 0x01 makes (CMF << 8 | FLG) a multiple of 31.
        var out: [UInt8] = [0x78, 0x01]
        out.reserveCapacity(data.count + data.count / 65_535 * 5 + 11)
        var start = 0
        repeat {
            // A stored block's length field is 16 bits, so larger payloads need several blocks.
            let end = min(start + 65_535, data.count)
            let length = UInt16(end - start)
            out.append(end == data.count ? 1 : 0)  // BFINAL bit, BTYPE 00 (stored)
            out += [UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8(~length >> 8)]
            out += data[start..<end]
            start = end
        } while start < data.count
        out.appendBigEndian(adler32(data))
        return out
    }

    static func adler32(_ data: [UInt8]) -> UInt32 {
        var a: UInt32 = 1, b: UInt32 = 0
        // 5552 is the largest run for which `b` cannot overflow 32 bits before reducing (zlib's NMAX).
        var index = 0
        while index < data.count {
            let end = min(index + 5552, data.count)
            for byte in data[index..<end] {
                a += UInt32(byte)
                b += a
            }
            a %= 65_521
            b %= 65_521
            index = end
        }
        return b << 16 | a
    }

    static func crc32(_ data: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in data {
            crc = crcTable[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8)
        }
        return ~crc
    }

    /// Lookup table for the reflected CRC-32 polynomial PNG uses; built once, on first use.
    static let crcTable: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 {
            c = c & 1 == 1 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1
        }
        return c
    }
}

extension Array where Element == UInt8 {
    fileprivate mutating func appendBigEndian(_ value: UInt32) {
        append(contentsOf: [
            UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF),
        ])
    }
}
