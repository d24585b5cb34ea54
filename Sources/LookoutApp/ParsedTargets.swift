import LookoutHTTP
import Synchronization

/// What routing makes of a request target, kept for the targets seen last, so that a
/// target asked again is not split, percent-decoded and matched again.
///
/// A client asks for the same few targets over and over: a long-poll re-arms on its
/// view, an app writes to the same documents. Splitting and matching one took as long as
/// checking the request's token and parsing its body together (a profile of single
/// wakes put `Router.match` and the query's parsing at 10% of the server's CPU).
///
/// What is kept is a function of the target alone: the path's match for any method
/// (``Router/PathMatch``; the method is looked up at each request), the parsed query and
/// the view key (``RequestContext/viewKey``).
///
/// Bounded: two generations of at most `capacity` targets each, of at most
/// `maxTargetBytes` bytes; when the young one is full it becomes the old one and the
/// previous old one is dropped. A client asking for ever new targets costs a parse each,
/// as without the cache, and at most `2 × capacity` entries: with the defaults, under
/// 10 MB even when every target is a 256-byte query of 128 one-letter items.
final class ParsedTargets: Sendable {
    struct Parsed: Sendable {
        let path: Router.PathMatch
        let query: QueryParameters
        let viewKey: String
    }

    private struct Generations {
        var young: [String: Parsed] = [:]
        var old: [String: Parsed] = [:]
    }

    private let router: Router
    private let generations = Mutex(Generations())
    let capacity: Int
    let maxTargetBytes: Int

    init(router: Router, capacity: Int = 1024, maxTargetBytes: Int = 256) {
        self.router = router
        self.capacity = capacity
        self.maxTargetBytes = maxTargetBytes
    }

    /// `request`'s target, parsed, or found parsed.
    func parsed(_ request: HTTPRequest) -> Parsed {
        let target = request.target
        guard target.utf8.count <= maxTargetBytes else { return parse(request) }
        // A generation dropped by an insertion is released after the lock.
        let (found, dropped) = generations.withLock { generations -> (Parsed?, [String: Parsed]?) in
            if let parsed = generations.young[target] { return (parsed, nil) }
            guard let parsed = generations.old[target] else { return (nil, nil) }
            return (parsed, Self.insert(target, parsed, into: &generations, capacity: capacity))
        }
        _ = dropped
        if let found { return found }
        let parsed = parse(request)
        _ = generations.withLock { Self.insert(target, parsed, into: &$0, capacity: capacity) }
        return parsed
    }

    /// Targets kept right now.
    var count: Int { generations.withLock { $0.young.count + $0.old.count } }

    private func parse(_ request: HTTPRequest) -> Parsed {
        let query = QueryParameters(request.rawQuery)
        return Parsed(
            path: router.match(path: request.path), query: query,
            viewKey: RequestContext.viewKey(path: request.path, query: query))
    }

    /// Keeps `parsed` in the young generation; returns the old one it replaced, if full.
    private static func insert(
        _ target: String, _ parsed: Parsed, into generations: inout Generations, capacity: Int
    ) -> [String: Parsed]? {
        var dropped: [String: Parsed]?
        if generations.young.count >= capacity {
            dropped = generations.old
            generations.old = generations.young
            generations.young = [:]
        }
        generations.young[target] = parsed
        return dropped
    }
}
