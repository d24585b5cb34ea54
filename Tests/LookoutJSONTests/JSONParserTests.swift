import LookoutJSON
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
