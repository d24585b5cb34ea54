/// Why a text is not acceptable JSON, and where.
public struct JSONParseError: Error, Equatable, CustomStringConvertible {
    /// Byte offset of the problem in the input.
    public let offset: Int
    public let reason: String

    public var description: String { "\(reason) at byte \(offset)" }
}

/// A strict RFC 8259 parser: one value, optional surrounding whitespace, valid UTF-8,
/// no duplicate object keys, nesting at most ``maxDepth`` deep.
///
/// Strictness is deliberate: a request body that is not exactly JSON is answered 400
/// rather than guessed at.
public struct JSONParser {
    /// Deepest nesting of arrays and objects accepted; deeper input is refused rather
    /// than risking the stack.
    public static let maxDepth = 64

    private let input: [UInt8]
    private var position = 0
    private var depth = 0

    private init(_ input: [UInt8]) {
        self.input = input
    }

    /// Parses `bytes` as one JSON value.
    public static func parse(_ bytes: [UInt8]) throws(JSONParseError) -> JSONValue {
        var parser = JSONParser(bytes)
        parser.skipWhitespace()
        let value = try parser.parseValue()
        parser.skipWhitespace()
        guard parser.position == bytes.count else { throw parser.error("unexpected text after the JSON value") }
        return value
    }

    /// Parses UTF-8 text as one JSON value.
    public static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    private func error(_ reason: String) -> JSONParseError {
        JSONParseError(offset: position, reason: reason)
    }

    private var current: UInt8? {
        position < input.count ? input[position] : nil
    }

    private mutating func skipWhitespace() {
        while position < input.count {
            switch input[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    private mutating func parseValue() throws(JSONParseError) -> JSONValue {
        guard let byte = current else { throw error("unexpected end of input") }
        switch byte {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw error("unexpected character")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        guard position + count <= input.count else { throw error("unexpected end of input") }
        let expected = UnsafeBufferPointer(start: literal.utf8Start, count: count)
        for index in 0..<count where input[position + index] != expected[index] {
            throw error("invalid literal")
        }
        position += count
    }

    private mutating func enter() throws(JSONParseError) {
        depth += 1
        guard depth <= Self.maxDepth else { throw error("nesting deeper than \(Self.maxDepth)") }
    }

    private mutating func parseObject() throws(JSONParseError) -> JSONValue {
        try enter()
        position += 1
        var object = JSONObject()
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            position += 1
            depth -= 1
            return .object(object)
        }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw error("expected a string key") }
            let keyOffset = position
            let key = try parseString()
            guard object[key] == nil else {
                throw JSONParseError(offset: keyOffset, reason: "duplicate key \"\(key)\"")
            }
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw error("expected ':'") }
            position += 1
            skipWhitespace()
            object[key] = try parseValue()
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "}"):
                position += 1
                depth -= 1
                return .object(object)
            default: throw error("expected ',' or '}'")
            }
        }
    }

    private mutating func parseArray() throws(JSONParseError) -> JSONValue {
        try enter()
        position += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            position += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue())
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "]"):
                position += 1
                depth -= 1
                return .array(elements)
            default: throw error("expected ',' or ']'")
            }
        }
    }

    private mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = position
        var isInteger = true
        if current == UInt8(ascii: "-") { position += 1 }
        guard let first = current, isDigit(first) else { throw error("invalid number") }
        if first == UInt8(ascii: "0") {
            position += 1
            if let next = current, isDigit(next) { throw error("leading zero in number") }
        } else {
            skipDigits()
        }
        if current == UInt8(ascii: ".") {
            isInteger = false
            position += 1
            guard let next = current, isDigit(next) else { throw error("invalid number") }
            skipDigits()
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            isInteger = false
            position += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { position += 1 }
            guard let next = current, isDigit(next) else { throw error("invalid number") }
            skipDigits()
        }
        if isInteger, let integer = Self.integer(spelledBy: input[start..<position]) {
            return .int(integer)
        }
        let text = String(decoding: input[start..<position], as: UTF8.self)
        guard let number = Double(text), number.isFinite else {
            throw JSONParseError(offset: start, reason: "number out of range")
        }
        return .double(number)
    }

    /// The `Int` an integer's text (an optional `-`, then digits) spells, or nil when it is
    /// out of range, as `Int(String)` gives it but without making the string.
    private static func integer(spelledBy text: ArraySlice<UInt8>) -> Int? {
        let negative = text.first == UInt8(ascii: "-")
        var value = 0
        for byte in text.dropFirst(negative ? 1 : 0) {
            let digit = Int(byte &- UInt8(ascii: "0"))
            let (shifted, overflowed) = value.multipliedReportingOverflow(by: 10)
            // Negative numbers are built downwards: Int.min has no positive counterpart.
            let (next, overflowedAgain) =
                negative ? shifted.subtractingReportingOverflow(digit) : shifted.addingReportingOverflow(digit)
            guard !overflowed, !overflowedAgain else { return nil }
            value = next
        }
        return value
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private mutating func skipDigits() {
        while let byte = current, isDigit(byte) { position += 1 }
    }

    private mutating func parseString() throws(JSONParseError) -> String {
        position += 1  // opening quote
        // The text once unescaped; left empty (no allocation) until an escape is met, since
        // a string without escapes (most) is made from the input's bytes directly.
        var unescaped: [UInt8] = []
        var runStart = position
        while true {
            guard let byte = current else { throw error("unterminated string") }
            switch byte {
            case UInt8(ascii: "\""):
                let run = runStart..<position
                position += 1
                let text: String?
                if unescaped.isEmpty {
                    text = input.withUnsafeBufferPointer { Self.validUTF8(UnsafeBufferPointer(rebasing: $0[run])) }
                } else {
                    unescaped.append(contentsOf: input[run])
                    text = unescaped.withUnsafeBufferPointer(Self.validUTF8)
                }
                guard let text else { throw error("string is not valid UTF-8") }
                return text
            case UInt8(ascii: "\\"):
                unescaped.append(contentsOf: input[runStart..<position])
                position += 1
                try parseEscape(into: &unescaped)  // appends at least one byte
                runStart = position
            case 0..<0x20:
                throw error("control character in string")
            default:
                position += 1
            }
        }
    }

    /// `bytes` as a string, or nil when they are not valid UTF-8.
    ///
    /// Not `String(validating:as:)`: it is generic, and looks up type metadata on every
    /// call (a µs per string in a request's profile). Decoding repairs an invalid sequence
    /// by putting U+FFFD in its place, which always changes the bytes, so the bytes are
    /// valid exactly when decoding gives them back unchanged.
    private static func validUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        let text = String(decoding: bytes, as: UTF8.self)
        return bytes.allSatisfy({ $0 < 0x80 }) || text.utf8.elementsEqual(bytes) ? text : nil
    }

    private mutating func parseEscape(into bytes: inout [UInt8]) throws(JSONParseError) {
        guard let byte = current else { throw error("unterminated string") }
        position += 1
        switch byte {
        case UInt8(ascii: "\""): bytes.append(0x22)
        case UInt8(ascii: "\\"): bytes.append(0x5C)
        case UInt8(ascii: "/"): bytes.append(0x2F)
        case UInt8(ascii: "b"): bytes.append(0x08)
        case UInt8(ascii: "f"): bytes.append(0x0C)
        case UInt8(ascii: "n"): bytes.append(0x0A)
        case UInt8(ascii: "r"): bytes.append(0x0D)
        case UInt8(ascii: "t"): bytes.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try parseHex4()
            if (0xD800..<0xDC00).contains(scalar) {
                // A high surrogate must be followed by an escaped low surrogate.
                guard current == UInt8(ascii: "\\"), position + 1 < input.count,
                    input[position + 1] == UInt8(ascii: "u")
                else { throw error("unpaired surrogate") }
                position += 2
                let low = try parseHex4()
                guard (0xDC00..<0xE000).contains(low) else { throw error("unpaired surrogate") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00..<0xE000).contains(scalar) {
                throw error("unpaired surrogate")
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw error("invalid escape") }
            bytes.append(contentsOf: UTF8.encode(unicode)!)
        default:
            throw error("invalid escape")
        }
    }

    private mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard position + 4 <= input.count else { throw error("invalid \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = input[position]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("invalid \\u escape")
            }
            value = value << 4 | UInt32(digit)
            position += 1
        }
        return value
    }
}
