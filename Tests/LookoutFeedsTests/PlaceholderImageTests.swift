import LookoutFeeds
import Testing

/// A parsed PNG chunk: its four-character type, its data, and the CRC stored in the file.
private struct Chunk {
    var type: String
    var data: [UInt8]
    var storedCRC: UInt32
    var typeBytes: [UInt8]
}

private func bigEndian(_ bytes: [UInt8], at offset: Int) -> UInt32 {
    bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
}

/// Walks the chunk list after the signature; returns nil if the framing is malformed.
private func chunks(of png: [UInt8]) -> [Chunk]? {
    var result: [Chunk] = []
    var offset = 8
    while offset < png.count {
        guard offset + 12 <= png.count else { return nil }
        let length = Int(bigEndian(png, at: offset))
        guard offset + 12 + length <= png.count else { return nil }
        let typeBytes = Array(png[offset + 4..<offset + 8])
        let data = Array(png[offset + 8..<offset + 8 + length])
        let crc = bigEndian(png, at: offset + 8 + length)
        result.append(
            Chunk(
                type: String(decoding: typeBytes, as: UTF8.self), data: data,
                storedCRC: crc, typeBytes: typeBytes))
        offset += 12 + length
    }
    return result
}

/// Bitwise CRC-32 (no table), independent of the implementation under test.
private func referenceCRC32(_ bytes: [UInt8]) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes {
        crc ^= UInt32(byte)
        for _ in 0..<8 {
            crc = (crc & 1) != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1
        }
    }
    return ~crc
}

@Test func startsWithPNGSignature() {
    let png = PlaceholderImage.png(named: "pickup-01")
    #expect(Array(png.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
}

@Test func referenceCRCMatchesKnownValue() {
    // Check value from the CRC-32 catalogue, so the CRC test below is not self-confirming.
    #expect(referenceCRC32(Array("123456789".utf8)) == 0xCBF4_3926)
}

@Test(arguments: [(160, 120), (1, 1), (7, 300), (1024, 1024)])
func headerAndChunkLayout(size: (width: Int, height: Int)) throws {
    let png = PlaceholderImage.png(named: "info-07", width: size.width, height: size.height)
    let parsed = try #require(chunks(of: png))
    #expect(parsed.map(\.type) == ["IHDR", "IDAT", "IEND"])
    let ihdr = parsed[0].data
    #expect(ihdr.count == 13)
    #expect(bigEndian(ihdr, at: 0) == UInt32(size.width))
    #expect(bigEndian(ihdr, at: 4) == UInt32(size.height))
    #expect(Array(ihdr[8...]) == [8, 2, 0, 0, 0])  // 8-bit RGB, no interlace
    #expect(parsed[2].data.isEmpty)
}

@Test func everyChunkCRCIsCorrect() throws {
    for name in ["pickup-01", "gallery-24", "", "季節の和菓子"] {
        let parsed = try #require(chunks(of: PlaceholderImage.png(named: name, width: 300, height: 250)))
        for chunk in parsed {
            #expect(chunk.storedCRC == referenceCRC32(chunk.typeBytes + chunk.data), "\(name): \(chunk.type)")
        }
    }
}

@Test func largeImageSpansSeveralStoredBlocks() throws {
    // 1024×1024 RGB is ~3 MiB of scanlines, well past one 65535-byte stored block.
    let parsed = try #require(chunks(of: PlaceholderImage.png(named: "big", width: 1024, height: 1024)))
    let idat = parsed[1].data
    let raw = 1024 * (1 + 3 * 1024)
    let blocks = (raw + 65_534) / 65_535
    #expect(idat.count == 2 + raw + 5 * blocks + 4)  // zlib header, payload, block headers, Adler-32
}

@Test func sameNameGivesIdenticalBytes() {
    #expect(PlaceholderImage.png(named: "info-07") == PlaceholderImage.png(named: "info-07"))
}

@Test func differentNamesGiveDifferentBytes() {
    #expect(PlaceholderImage.png(named: "info-07") != PlaceholderImage.png(named: "info-08"))
    #expect(PlaceholderImage.png(named: "pickup-01") != PlaceholderImage.png(named: "gallery-01"))
}
