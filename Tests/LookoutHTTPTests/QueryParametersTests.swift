import LookoutHTTP
import LookoutTestSupport
import Testing

@Suite("Query parameters")
struct QueryParametersTests {
    /// The split by `Character` that every query took before ASCII queries were split by byte.
    static func referencePairs(_ query: Substring) -> [(name: String, value: String)] {
        query.split(separator: "&").map { item in
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (QueryParameters.decode(parts[0]), parts.count > 1 ? QueryParameters.decode(parts[1]) : "")
        }
    }

    @Test("a query splits into the same pairs by byte as by Character, ASCII or not")
    func pairsAsByCharacter() {
        // Pieces that matter to a split: separators, escapes, "\r\n" (one Character), a
        // combining mark that joins the "&" or "=" before it, and other non-ASCII text.
        let pieces = ["&", "=", "&&", "==", "a", "fields", "v", "%26", "%3D", "+", "%", "\r\n", "\u{301}", "é", " "]
        var random = SplitMix64(seed: 23)
        var nonEmpty = 0
        for _ in 0..<20_000 {
            let text = (0..<random.below(8)).map { _ in pieces[random.below(pieces.count)] }.joined()
            let query = QueryParameters(text[...])
            let expected = Self.referencePairs(text[...])
            #expect(query.pairs.map(\.name) == expected.map(\.name), "\(text.debugDescription)")
            #expect(query.pairs.map(\.value) == expected.map(\.value), "\(text.debugDescription)")
            #expect(query.items == text.split(separator: "&"), "\(text.debugDescription)")
            if !expected.isEmpty { nonEmpty += 1 }
        }
        #expect(nonEmpty > 10_000, "enough queries with pairs")
        #expect(QueryParameters("fields=v&wait=30&x=a%3Db").encoded(excluding: ["wait"]) == "fields=v&x=a%3Db")
        #expect(QueryParameters("").encoded(excluding: []) == "")
    }
}
