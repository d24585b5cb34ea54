import LookoutHTTP
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
        "an epoch with a space, a quote, a comma or a control character is refused",
        arguments: [#""-2"#, #"" x-1""#, "a b-1", #""x-1", "0a1b-42""#, "a,b-1", "a\u{7f}-1", "a\tb-1"])
    func unprintable(_ text: String) {
        #expect(EntityTag(parsing: text[...]) == nil)
    }
}
