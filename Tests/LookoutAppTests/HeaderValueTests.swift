import LookoutAuth
import LookoutTestSupport
import Testing

@testable import LookoutApp

@Suite("Bearer token")
struct BearerTokenTests {
    /// The split by `Character` that every header took before ASCII headers were read by byte.
    static func reference(_ header: String?) -> Result<String, AuthError> {
        guard let header else { return .failure(.missingToken) }
        let parts = header.split(maxSplits: 1, whereSeparator: { $0 == " " || $0 == "\t" })
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return .failure(.notBearer) }
        var token = parts[1]
        while token.first == " " || token.first == "\t" { token.removeFirst() }
        while token.last == " " || token.last == "\t" { token.removeLast() }
        guard !token.isEmpty else { return .failure(.invalidToken("the token is empty")) }
        return .success(String(token))
    }

    static func parsed(_ header: String?) -> Result<String, AuthError> {
        Result { () throws(AuthError) in try BearerToken.parse(header) }
    }

    @Test("a header yields the same token or error by byte as by Character, ASCII or not")
    func asByCharacter() {
        // Pieces that matter: the scheme in any case, spaces and tabs, "\r\n" (one
        // Character), a combining mark that joins the space before it, other non-ASCII text.
        let schemes = ["Bearer", "bearer", "BEARER", "BeArEr", "Basic", "Bear", "er"]
        let pieces = schemes + [" ", " ", "\t", "a.b.c", "x", "\r\n", "\u{301}", "é", "日"]
        var random = SplitMix64(seed: 40)
        var tokens = 0
        for _ in 0..<20_000 {
            let header = (0..<random.below(6)).map { _ in pieces[random.below(pieces.count)] }.joined()
            let expected = Self.reference(header)
            #expect(Self.parsed(header) == expected, "\(header.debugDescription)")
            if case .success = expected { tokens += 1 }
        }
        #expect(tokens > 300, "enough headers that carry a token")
        let cases: [(String?, Result<String, AuthError>)] = [
            (nil, .failure(.missingToken)),
            ("", .failure(.notBearer)),
            ("Bearer", .failure(.notBearer)),
            ("Bearer ", .failure(.notBearer)),
            ("Bearer \t ", .failure(.invalidToken("the token is empty"))),
            ("  bEARER\t\ta.b.c  ", .success("a.b.c")),
            ("Bearer a b", .success("a b")),
            ("Bearerx a", .failure(.notBearer)),
            ("Bearer \u{301}a", .failure(.notBearer)),
            ("Bearer é", .success("é")),
        ]
        for (header, expected) in cases {
            #expect(Self.parsed(header) == expected, "\(String(describing: header).debugDescription)")
            #expect(Self.reference(header) == expected, "the reference, \(String(describing: header).debugDescription)")
        }
    }
}

@Suite("JSON media type")
struct JSONMediaTypeTests {
    @Test("a body is JSON by its media type, in any case, with or without parameters")
    func mediaTypes() {
        let cases: [(String?, Bool)] = [
            ("application/json", true),
            ("Application/JSON; charset=utf-8", true),
            (" application/json ;x=1", true),
            ("application/merge-patch+json", true),
            ("application/json;", true),
            (nil, false),
            ("", false),
            (";application/json", false),
            ("application/jsonx", false),
            ("text/plain; application/json", false),
            ("application/json\u{301}", false),
            ("\tAPPLICATION/MERGE-PATCH+JSON\t; charset=utf-8", true),
            (" \u{301}application/json", false),
            ("application/json \u{301}", false),
            ("application/\u{212A}json", false),
            ("application/json\u{0}", false),
            ("application/merge-patch+jso", false),
            ("application/JSON;;", true),
            ("application/json\u{37E}charset=utf-8", false),
        ]
        for (contentType, expected) in cases {
            #expect(
                RequestContext.isJSON(contentType) == expected, "\(String(describing: contentType).debugDescription)")
        }
    }
}
