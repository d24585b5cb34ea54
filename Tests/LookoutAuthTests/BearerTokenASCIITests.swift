import Testing

@testable import LookoutAuth

@Suite("Bearer token: the ASCII test")
struct BearerTokenASCIITests {
    @Test("text is ASCII unless some byte is 0x80 or above, wherever it is and however the bytes are aligned")
    func everyPosition() {
        // Eight bytes are tested at a time, from any address: a high byte in each lane of
        // each word and in the tail after the last word, from each of eight alignments.
        let storage = [UInt8](repeating: UInt8(ascii: "a"), count: 56)
        for offset in 0..<8 {
            for length in 0..<(storage.count - offset) {
                var bytes = Array(storage[offset..<(offset + length)])
                bytes.withUnsafeBufferPointer { #expect(BearerToken.isASCII($0), "length \(length)") }
                for position in 0..<length {
                    for high: UInt8 in [0x80, 0xC3, 0xFF] {
                        bytes[position] = high
                        let shifted = [UInt8](repeating: 0x7F, count: offset) + bytes
                        shifted.withUnsafeBufferPointer { all in
                            let text = UnsafeBufferPointer(rebasing: all[offset...])
                            #expect(
                                !BearerToken.isASCII(text),
                                "length \(length), 0x\(String(high, radix: 16)) at \(position)")
                        }
                    }
                    bytes[position] = UInt8(ascii: "a")
                }
            }
        }
    }
}
