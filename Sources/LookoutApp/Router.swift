import LookoutHTTP

/// How a route answers: on the daemon thread, or in a task for work that awaits
/// (token signing) or takes long (password hashing).
enum RouteHandler: Sendable {
    case immediate(@Sendable (RequestContext) throws -> HTTPResponse)
    case deferred(@Sendable (RequestContext) async throws -> HTTPResponse)
}

/// Matches a method and a path against a table of routes.
///
/// Patterns are `/`-separated segments, literal or `{name}`. A path that matches with
/// another method gives 405 with the methods it allows; `HEAD` is served by `GET`.
struct Router: Sendable {
    enum Match {
        case found(RouteHandler, parameters: [String: String])
        case methodNotAllowed([String])
        case notFound
    }

    private struct Route: Sendable {
        let method: String
        let segments: [Segment]
        let handler: RouteHandler
    }

    private enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    private var routes: [Route] = []

    mutating func add(_ method: String, _ pattern: String, _ handler: RouteHandler) {
        let segments = pattern.split(separator: "/").map { part -> Segment in
            part.hasPrefix("{") && part.hasSuffix("}")
                ? .parameter(String(part.dropFirst().dropLast())) : .literal(String(part))
        }
        routes.append(Route(method: method, segments: segments, handler: handler))
    }

    func match(method: String, path: Substring) -> Match {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        // "/a//b" and "/a/" name nothing here.
        guard path.first == "/", !parts.contains(where: \.isEmpty) || path == "/" else { return .notFound }
        let decoded = parts.map { QueryParameters.decode($0, plusIsSpace: false) }
        var allowed: [String] = []
        for route in routes {
            guard let parameters = Self.bind(route.segments, to: decoded) else { continue }
            if route.method == method || (method == "HEAD" && route.method == "GET") {
                return .found(route.handler, parameters: parameters)
            }
            allowed.append(route.method)
            if route.method == "GET" { allowed.append("HEAD") }
        }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed)
    }

    private static func bind(_ segments: [Segment], to parts: [String]) -> [String: String]? {
        guard segments.count == parts.count else { return nil }
        var parameters: [String: String] = [:]
        for (segment, part) in zip(segments, parts) {
            switch segment {
            case .literal(let literal): guard literal == part else { return nil }
            case .parameter(let name): parameters[name] = part
            }
        }
        return parameters
    }
}
