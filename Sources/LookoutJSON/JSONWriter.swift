/// Writes JSON text as UTF-8 bytes: compact, members in order, non-ASCII text as is,
/// `/` not escaped.
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Returns the compact UTF-8 encoding of `value`.
    public static func encode(_ value: JSONValue) -> [UInt8] {
        var writer = JSONWriter()
        writer.write(value)
        // Renderings are kept (render caches, held polls): no more room than the text needs.
        // (A copy through `Array(bytes[...])` could keep the same storage.)
        let text = writer.bytes
        guard text.capacity - text.count > 64 else { return text }
        return text.withUnsafeBufferPointer { Array($0) }
    }

    public mutating func write(_ value: JSONValue) {
        switch value {
        case .null: writeRaw("null")
        case .bool(let flag): writeRaw(flag ? "true" : "false")
        case .int(let number): write(number)
        case .double(let number): write(number)
        case .string(let text): write(text)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                write(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let object):
            bytes.append(UInt8(ascii: "{"))
            for (index, member) in object.members.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                write(member.key)
                bytes.append(UInt8(ascii: ":"))
                write(member.value)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    public mutating func write(_ number: Double) {
        // JSON has no NaN or infinity; the parser never produces them.
        guard number.isFinite else { return writeRaw("null") }
        // Swift's description is the shortest text that round-trips ("4.5", "1e-07").
        writeRaw(number.description)
    }

    public mutating func write(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            // Copy runs that need no escaping in one go; most text has no escapes at all.
            var runStart = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                writeEscape(byte)
                runStart = index + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Writes an integer's decimal digits without making a `String`.
    public mutating func write(_ number: Int) {
        if number < 0 {
            bytes.append(UInt8(ascii: "-"))
        }
        var magnitude = number.magnitude
        // Digits come out least significant first: collect them, then append reversed.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { buffer in
            var count = 0
            repeat {
                buffer[count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
            for index in stride(from: count - 1, through: 0, by: -1) {
                bytes.append(buffer[index])
            }
        }
    }

    private mutating func writeEscape(_ byte: UInt8) {
        switch byte {
        case UInt8(ascii: "\""): writeRaw("\\\"")
        case UInt8(ascii: "\\"): writeRaw("\\\\")
        case 0x0A: writeRaw("\\n")
        case 0x0D: writeRaw("\\r")
        case 0x09: writeRaw("\\t")
        case 0x08: writeRaw("\\b")
        case 0x0C: writeRaw("\\f")
        default:
            writeRaw("\\u00")
            bytes.append(Self.hexDigits[Int(byte >> 4)])
            bytes.append(Self.hexDigits[Int(byte & 0x0F)])
        }
    }

    /// Appends bytes that are already JSON, such as a cached rendering of a value.
    public mutating func writeRaw(_ json: some Sequence<UInt8>) {
        bytes.append(contentsOf: json)
    }

    public mutating func writeRaw(_ json: String) {
        bytes.append(contentsOf: json.utf8)
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}
