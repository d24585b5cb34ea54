import LookoutHTTP
import LookoutStore

/// How a route answers: on the daemon thread, in a task for work that awaits, as a write
/// to the store (``WriteExecutor``), or as a view of the store, which any request can turn
/// into a long-poll.
enum RouteHandler: Sendable {
    case immediate(@Sendable (RequestContext) throws -> HTTPResponse)
    case deferred(@Sendable (RequestContext) async throws -> HTTPResponse)
    /// A write to the store: prepared on the daemon thread (token, body), then applied by
    /// the ``WriteExecutor``.
    case write(@Sendable (RequestContext) throws -> PreparedWrite)
    case view(@Sendable (RequestContext, StoreSnapshot) throws -> RenderedView)
}

/// Matches a method and a path against a table of routes.
///
/// Patterns are `/`-separated segments, literal or `{name}`. A path is matched to its most
/// specific pattern first, then to the method: a pattern without the method gives 405
/// with the methods it allows; `HEAD` is served by `GET`.
struct Router: Sendable {
    enum Match {
        /// `pattern` indexes ``patterns``: the route as a metric label, never the raw path.
        case found(RouteHandler, parameters: PathParameters, pattern: Int)
        case methodNotAllowed([String])
        case notFound
    }

    private struct Route: Sendable {
        let method: String
        /// Index of the route's pattern in ``Router/patterns``.
        let pattern: Int
        let segments: [Segment]
        let handler: RouteHandler
        /// Per segment, whether it is literal: how a route is ranked against others.
        let specificity: [Bool]
        /// The names of its `{name}` segments, in order.
        let parameterNames: [String]
    }

    private enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)

        var isParameter: Bool {
            if case .parameter = self { return true }
            return false
        }
    }

    private var routes: [Route] = []
    /// Each distinct pattern added, in the order first added, e.g. `/v1/{collection}`.
    private(set) var patterns: [String] = []

    mutating func add(_ method: String, _ pattern: String, _ handler: RouteHandler) {
        let segments = pattern.split(separator: "/").map { part -> Segment in
            part.hasPrefix("{") && part.hasSuffix("}")
                ? .parameter(String(part.dropFirst().dropLast())) : .literal(String(part))
        }
        let index = patterns.firstIndex(of: pattern) ?? patterns.count
        if index == patterns.count { patterns.append(pattern) }
        routes.append(
            Route(
                method: method, pattern: index, segments: segments, handler: handler,
                specificity: segments.map { !$0.isParameter },
                parameterNames: segments.compactMap { segment in
                    if case .parameter(let name) = segment { return name }
                    return nil
                }))
    }

    /// What a path matches, whatever the method: its most specific pattern and the values
    /// of that pattern's `{name}` segments. A function of the path alone, so it can be
    /// kept for a path seen again (``ParsedTargets``).
    struct PathMatch: Sendable {
        /// Index into ``Router/patterns``; nil when no pattern matches.
        let pattern: Int?
        let parameters: PathParameters
    }

    func match(method: String, path: Substring) -> Match {
        match(method: method, match(path: path))
    }

    func match(path: Substring) -> PathMatch {
        guard let decoded = Self.segments(of: path) else { return PathMatch(pattern: nil, parameters: .none) }
        // The most specific pattern that matches the path wins, whatever the method: a
        // literal segment beats a parameter (/v1/auth/login before /v1/{collection}/{id}),
        // so PUT /v1/auth/login is 405, not a write to a collection named "auth".
        // Parameters are bound for the winner only.
        var best: Int?
        for index in routes.indices {
            guard Self.matches(routes[index].segments, decoded) else { continue }
            if best == nil || Self.isMoreSpecific(routes[index].specificity, than: routes[best!].specificity) {
                best = index
            }
        }
        guard let best else { return PathMatch(pattern: nil, parameters: .none) }
        let route = routes[best]
        var values: [String] = []
        values.reserveCapacity(route.parameterNames.count)
        for (segment, part) in zip(route.segments, decoded) where segment.isParameter { values.append(part) }
        return PathMatch(
            pattern: route.pattern, parameters: PathParameters(names: route.parameterNames, values: values))
    }

    /// The route for `method` at a path matched by `path`: a pattern without the method is
    /// 405 with the methods it has.
    func match(method: String, _ path: PathMatch) -> Match {
        guard let pattern = path.pattern else { return .notFound }
        let lookup = method == "HEAD" ? "GET" : method
        if let route = routes.first(where: { $0.pattern == pattern && $0.method == lookup }) {
            return .found(route.handler, parameters: path.parameters, pattern: pattern)
        }
        // Only now, for a 405: which methods this pattern does take.
        var allowed: [String] = []
        for route in routes where route.pattern == pattern {
            for name in route.method == "GET" ? ["GET", "HEAD"] : [route.method] where !allowed.contains(name) {
                allowed.append(name)
            }
        }
        return .methodNotAllowed(allowed)
    }

    /// The path's segments after its leading `/`, split by `Character` (by byte when the
    /// path is ASCII: ``Substring/splitting(at:maxSplits:omittingEmptySubsequences:)``) and
    /// then percent-decoded; nil when it does not start with `/` or has an empty segment
    /// ("/a//b", "/a/"). "/" alone is one empty segment.
    static func segments(of path: Substring) -> [String]? {
        guard path.first == "/" else { return nil }
        var parts = path.splitting(at: "/", omittingEmptySubsequences: false)
        parts.removeFirst()
        guard path == "/" || !parts.contains(where: { $0.isEmpty }) else { return nil }
        return parts.map { QueryParameters.decode($0, plusIsSpace: false) }
    }

    /// Whether a pattern beats another at their first differing segment (literal over parameter).
    private static func isMoreSpecific(_ lhs: [Bool], than rhs: [Bool]) -> Bool {
        for (left, right) in zip(lhs, rhs) where left != right {
            return left
        }
        return false
    }

    private static func matches(_ segments: [Segment], _ parts: [String]) -> Bool {
        guard segments.count == parts.count else { return false }
        for (segment, part) in zip(segments, parts) {
            if case .literal(let literal) = segment, literal != part { return false }
        }
        return true
    }
}

/// The values of a matched route's `{name}` segments, by name.
///
/// Two arrays rather than a dictionary: a route has one or two parameters, the names are
/// the route's own (shared), and a held poll keeps its request's parameters while it waits.
struct PathParameters: Sendable, Equatable {
    private let names: [String]
    private let values: [String]

    /// No parameters.
    static let none = PathParameters(names: [], values: [])

    init(names: [String], values: [String]) {
        precondition(names.count == values.count, "one value per parameter")
        self.names = names
        self.values = values
    }

    subscript(name: String) -> String? {
        names.firstIndex(of: name).map { values[$0] }
    }
}
