import LookoutJSON
import LookoutTestSupport
import Testing

@Suite("JSON parser and writer")
struct JSONParserTests {
    @Test("values round-trip, keeping integers apart from other numbers and member order")
    func roundTrip() throws {
        let text = #"{"z":1,"a":[true,false,null],"n":-0.5,"big":1e300,"s":"a\"b\\c\n","id":9007199254740993}"#
        let value = try JSONParser.parse(text)
        #expect(value["z"] == .int(1))
        #expect(value["n"] == .double(-0.5))
        #expect(value["id"] == .int(9_007_199_254_740_993))
        #expect(value.objectValue?.keys == ["z", "a", "n", "big", "s", "id"])
        let written = String(decoding: JSONWriter.encode(value), as: UTF8.self)
        #expect(
            written == #"{"z":1,"a":[true,false,null],"n":-0.5,"big":1e+300,"s":"a\"b\\c\n","id":9007199254740993}"#)
        #expect(try JSONParser.parse(written) == value)
    }

    @Test("non-ASCII text stays UTF-8 and '/' is accepted escaped or not")
    func unicode() throws {
        let value = try JSONParser.parse(#"{"t":"季節の和菓子 \u00e9 \ud83c\udf63","u":"http:\/\/x\/y"}"#)
        #expect(value["t"] == .string("季節の和菓子 é 🍣"))
        #expect(value["u"] == .string("http://x/y"))
        #expect(JSONWriter.encode(.string("寿司/🍣")) == Array(#""寿司/🍣""#.utf8))
    }

    @Test("control characters are escaped on output")
    func controlCharacters() {
        #expect(JSONWriter.encode(.string("a\u{01}\t")) == Array(#""a\u0001\t""#.utf8))
    }

    @Test(
        "malformed input is refused with a position",
        arguments: [
            "", "{", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "01", "1.", "-", "tru", "\"abc", "\"\u{01}\"",
            "{\"a\":1,\"a\":2}", "\"\\ud800\"", "\"\\x\"", "[1] [2]", "{a:1}", "1e999", "NaN",
        ])
    func refusesMalformed(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSONParser.parse(text) }
    }

    @Test("invalid UTF-8 inside a string is refused")
    func invalidUTF8() {
        #expect(throws: JSONParseError.self) { try JSONParser.parse([0x22, 0xC3, 0x28, 0x22]) }
    }

    @Test("a string is refused exactly when its bytes are not UTF-8, with or without escapes")
    func utf8Validity() {
        // Valid sequences, and the invalid kinds: a stray continuation byte, an overlong
        // form, a surrogate, a code point past U+10FFFF, a truncated sequence, bytes
        // never used in UTF-8; plus U+FFFD itself, and two escapes with what they stand for.
        let newline = Array(#"\n"#.utf8)
        let eAcute = Array(#"\u00e9"#.utf8)
        let pieces: [[UInt8]] = [
            [0x61], [0xC3, 0xA9], [0xE5, 0xAF, 0xBF], [0xF0, 0x9F, 0x8D, 0xA3], [0xEF, 0xBF, 0xBD],
            [0x80], [0xC0, 0x80], [0xE0, 0x80, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80],
            [0xE5, 0xAF], [0xF0, 0x9F], [0xFF], [0xFE], newline, eAcute,
        ]
        var random = SplitMix64(seed: 53)
        for _ in 0..<20_000 {
            let parts = (0..<random.below(5)).map { _ in pieces[random.below(pieces.count)] }
            let inner = parts.flatMap { $0 }
            let parsed = try? JSONParser.parse([0x22] + inner + [0x22])
            // The reference: the standard library's check of the text the escapes stand for.
            let unescaped = parts.flatMap { part in
                part == newline ? [0x0A] : part == eAcute ? [0xC3, 0xA9] : part
            }
            let expected = String(validating: unescaped, as: UTF8.self)
            #expect(parsed == expected.map(JSONValue.string), "bytes \(inner)")
        }
    }

    @Test("integers are read as Int while they fit, and as Double past either end")
    func integerRange() throws {
        var texts = [
            "0", "-0", "7", "-7", String(Int.max), String(Int.min), "9223372036854775808",
            "-9223372036854775809", "99999999999999999999", "-99999999999999999999",
        ]
        var random = SplitMix64(seed: 59)
        for _ in 0..<20_000 {
            let digits = (0..<(1 + random.below(20))).map { _ in String(random.below(10)) }.joined()
            let trimmed = digits.drop { $0 == "0" }
            texts.append((random.below(2) == 0 ? "-" : "") + (trimmed.isEmpty ? "0" : String(trimmed)))
        }
        for text in texts {
            let expected: JSONValue = Int(text).map(JSONValue.int) ?? .double(Double(text)!)
            #expect(try JSONParser.parse(text) == expected, "\(text)")
        }
    }

    @Test("nesting is bounded")
    func depth() throws {
        let deep =
            String(repeating: "[", count: JSONParser.maxDepth) + String(repeating: "]", count: JSONParser.maxDepth)
        #expect(throws: Never.self) { try JSONParser.parse(deep) }
        let tooDeep = "[" + deep + "]"
        let error = #expect(throws: JSONParseError.self) { try JSONParser.parse(tooDeep) }
        #expect(error?.reason.contains("nesting") == true)
    }

    @Test("object members can be replaced and removed in place")
    func objectEditing() {
        var object = JSONObject([("a", 1), ("b", 2)])
        object["a"] = 3
        object["c"] = 4
        object["b"] = nil
        #expect(object.keys == ["a", "c"])
        #expect(object["a"] == .int(3))
    }
}

@Suite("JSON writer")
struct JSONWriterTests {
    @Test(
        "integers are written exactly, including the extremes", arguments: [0, 7, -7, 10, 1_000_000, Int.max, Int.min])
    func integers(_ number: Int) {
        #expect(String(decoding: JSONWriter.encode(.int(number)), as: UTF8.self) == String(number))
    }

    @Test("every escape, between plain runs")
    func escapes() throws {
        let text = "a\"b\\c\nd\re\tf\u{08}g\u{0C}h\u{1F}i"
        let written = String(decoding: JSONWriter.encode(.string(text)), as: UTF8.self)
        #expect(written == #""a\"b\\c\nd\re\tf\bg\fh\u001fi""#)
        #expect(try JSONParser.parse(written) == .string(text))
    }
}
