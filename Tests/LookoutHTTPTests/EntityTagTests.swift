import LookoutHTTP
import LookoutTestSupport
import Testing

@Suite("Entity tags")
struct EntityTagTests {
    @Test("a tag is parsed only when its header form carries it back", arguments: ["0a1b-42", "W/x-1", "é!#~-0"])
    func printable(_ text: String) throws {
        let tag = try #require(EntityTag(parsing: text[...]))
        #expect(EntityTag(parsing: tag.header[...]) == tag)
        #expect(EntityTag.first(in: tag.header) == tag)
        #expect(tag.isMatched(byIfNoneMatch: tag.header))
    }

    @Test(
        "the header form is the quoted epoch, a dash and the revision in decimal",
        arguments: [
            ("", 0, #""-0""#), ("e", 9, #""e-9""#), ("e", 10, #""e-10""#),
            ("0a1b2c3d-4e5f", 1_234_567_890, #""0a1b2c3d-4e5f-1234567890""#),
            ("é!#~", UInt64.max, #""é!#~-18446744073709551615""#),
        ] as [(String, UInt64, String)])
    func headerForm(_ epoch: String, _ revision: UInt64, _ expected: String) {
        let header = EntityTag(epoch: epoch, revision: revision).header
        #expect(header == expected)
        #expect(Array(header.utf8) == Array(expected.utf8))
    }

    @Test(
        "an epoch with a space, a quote, a comma or a control character is refused",
        arguments: [#""-2"#, #"" x-1""#, "a b-1", #""x-1", "0a1b-42""#, "a,b-1", "a\u{7f}-1", "a\tb-1"])
    func unprintable(_ text: String) {
        #expect(EntityTag(parsing: text[...]) == nil)
    }

    @Test("ASCII headers, parsed by byte, give what parsing by Unicode scalar gives")
    func asciiAsByScalar() {
        let pieces = [
            "\"", "W/", "-", "0a1b", "42", ",", " ", "\t", "*", "+7", "x", "-1", "W", "/", "\u{7f}", "é", "\u{301}",
        ]
        var random = SplitMix64(seed: 9)
        var parsed = 0
        for _ in 0..<20_000 {
            let text = (0..<random.below(8)).map { _ in pieces[random.below(pieces.count)] }.joined()
            let elements = text.headerListElements()
            let first = elements.lazy.compactMap { EntityTag(parsing: $0) }.first
            #expect(
                EntityTag(parsing: text[...]) == EntityTag(parsing: text[...].unicodeScalars),
                "\(text.debugDescription)")
            #expect(EntityTag.first(in: text) == first, "\(text.debugDescription)")
            for tag in [EntityTag(epoch: "0a1b", revision: 42)] + elements.compactMap(EntityTag.init) {
                let byScalar = elements.contains {
                    $0.elementsEqual("*".unicodeScalars) || EntityTag(parsing: $0) == tag
                }
                #expect(tag.isMatched(byIfNoneMatch: text) == byScalar, "\(text.debugDescription) \(tag.header)")
            }
            if first != nil { parsed += 1 }
        }
        #expect(parsed > 1_000, "enough headers that hold a tag")
    }
}
