import LookoutHTTP
import LookoutTestSupport
import Testing

@testable import LookoutApp

@Suite("Router")
struct RouterTests {
    /// The split by `Character` that every path took before ASCII paths were split by byte.
    static func referenceSegments(of path: Substring) -> [String]? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        guard path.first == "/", !parts.contains(where: { $0.isEmpty }) || path == "/" else { return nil }
        return parts.map { QueryParameters.decode($0, plusIsSpace: false) }
    }

    @Test("a path splits into the same segments by byte as by Character, ASCII or not")
    func segmentsAsByCharacter() {
        // Pieces that matter to a split: slashes, escapes, "\r\n" (one Character), a combining
        // mark that joins the "/" before it, and other non-ASCII text.
        let pieces = ["/", "/", "//", "a", "v1", "items", "7", "%2F", "%", "+", "\r\n", "\r", "\u{301}", "é", "日", " "]
        var random = SplitMix64(seed: 17)
        var checked = 0
        for _ in 0..<20_000 {
            let path = (0..<random.below(7)).map { _ in pieces[random.below(pieces.count)] }.joined()
            let expected = Self.referenceSegments(of: path[...])
            #expect(Router.segments(of: path[...]) == expected, "\(path.debugDescription)")
            if expected != nil { checked += 1 }
        }
        #expect(checked > 1_000, "enough paths that name something")
        for path in ["/", "/v1/items/7", "/v1/items/7/", "/v1//items", "v1/items", "", "/\u{301}v1", "/a\r\n/b"] {
            #expect(Router.segments(of: path[...]) == Self.referenceSegments(of: path[...]), "\(path.debugDescription)")
        }
        #expect(Router.segments(of: "/v1/items/%37") == ["v1", "items", "7"])
    }
}
