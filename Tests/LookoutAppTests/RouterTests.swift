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

    /// The app's patterns, each answering with its own index, so a match names its route.
    static func appRouter() -> Router {
        var router = Router()
        let routes = [
            ("GET", "/v1/{collection}"), ("POST", "/v1/{collection}"), ("GET", "/v1/{collection}/{id}"),
            ("PUT", "/v1/{collection}/{id}"), ("PATCH", "/v1/{collection}/{id}"), ("DELETE", "/v1/{collection}/{id}"),
            ("GET", "/healthz"), ("POST", "/v1/auth/login"), ("POST", "/v1/auth/verify"), ("GET", "/images/{name}"),
            ("GET", "/v1/watch"), ("POST", "/v1/watch"),
        ]
        for (index, (method, pattern)) in routes.enumerated() {
            router.add(method, pattern, .immediate { _ in HTTPResponse(status: 200 + index) })
        }
        return router
    }

    /// What a match says, as text: the route's answer, its pattern's index and its
    /// parameters, or the refusal.
    static func describe(_ match: Router.Match, _ names: [String]) throws -> String {
        switch match {
        case .notFound: return "404"
        case .methodNotAllowed(let allowed): return "405 \(allowed)"
        case .found(let handler, let parameters, let pattern):
            guard case .immediate(let answer) = handler else { return "not immediate" }
            let context = RequestContext(
                request: HTTPRequest(method: "GET", target: "/"), requestID: RequestID(serial: 1),
                pathParameters: parameters, query: QueryParameters(""), viewKey: "")
            return "\(try answer(context).status) \(pattern) \(names.map { parameters[$0] ?? "-" })"
        }
    }

    @Test("the app's patterns: literal segments first, 405 with the methods a path takes, parameters decoded")
    func appRoutes() throws {
        let router = Self.appRouter()
        let names = ["collection", "id", "name"]
        let cases: [(String, String, String)] = [
            ("GET", "/v1/items/7", #"202 1 ["items", "7", "-"]"#),
            ("HEAD", "/v1/items/%37", #"202 1 ["items", "7", "-"]"#),
            ("PATCH", "/v1/items/7", #"204 1 ["items", "7", "-"]"#),
            ("PUT", "/v1/auth/login", #"405 ["POST"]"#),
            ("POST", "/v1/auth/login", #"207 3 ["-", "-", "-"]"#),
            ("GET", "/v1/auth", #"200 0 ["auth", "-", "-"]"#),
            ("DELETE", "/healthz", #"405 ["GET", "HEAD"]"#),
            ("GET", "/v1/items/7/x", "404"),
            ("GET", "/v1//items", "404"),
        ]
        for (method, path, expected) in cases {
            #expect(
                try Self.describe(router.match(method: method, path: path[...]), names) == expected, "\(method) \(path)"
            )
        }
    }

    @Test("a target found parsed gets what parsing it again gives, through evictions, for every method")
    func parsedTargetsAsParsing() throws {
        let router = Self.appRouter()
        let targets = ParsedTargets(router: router, capacity: 8, maxTargetBytes: 40)
        let paths = ["/v1", "/auth", "/login", "/items", "/7", "/%37", "/x%2Fy", "/healthz", "/watch", "//", "/é"]
        let queries = ["", "?", "?fields=v", "?wait=5", "?fields=v&wait=5", "?a=%20b+c", "?since=1&x", "?fields=w"]
        let methods = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
        let names = ["collection", "id", "name"]
        var random = SplitMix64(seed: 41)
        var found = 0
        for _ in 0..<20_000 {
            let path = (0..<random.below(4)).map { _ in paths[random.below(paths.count)] }.joined()
            let target = (path.isEmpty ? "/" : path) + queries[random.below(queries.count)]
            let method = methods[random.below(methods.count)]
            let request = HTTPRequest(method: method, target: target)
            let parsed = targets.parsed(request)
            let fresh = router.match(path: request.path)
            #expect(parsed.path.pattern == fresh.pattern, "\(target)")
            #expect(parsed.path.parameters == fresh.parameters, "\(target)")
            let query = QueryParameters(request.rawQuery)
            #expect(parsed.query.pairs.elementsEqual(query.pairs) { $0 == $1 }, "\(target)")
            #expect(parsed.viewKey == RequestContext.viewKey(path: request.path, query: query), "\(target)")
            let answer = try Self.describe(router.match(method: method, parsed.path), names)
            #expect(answer == (try Self.describe(router.match(method: method, path: request.path), names)))
            if answer.first == "2" { found += 1 }
            #expect(targets.count <= 2 * targets.capacity)
        }
        #expect(found > 300, "enough targets that name a route")
        let fresh = ParsedTargets(router: router, capacity: 8, maxTargetBytes: 40)
        let long = "/v1/items/7?fields=" + String(repeating: "v", count: 40)
        #expect(fresh.parsed(HTTPRequest(method: "GET", target: long)).query["fields"]?.count == 40)
        #expect(fresh.count == 0, "a target over the limit is parsed, not kept")
        _ = fresh.parsed(HTTPRequest(method: "GET", target: "/v1/items/7"))
        #expect(fresh.count == 1)
    }
}
