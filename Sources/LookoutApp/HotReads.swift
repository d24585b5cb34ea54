import LookoutHTTP

/// Answers to GETs asked again and again, found by their target as sent, before routing.
///
/// Most traffic to a feed is the same GET over and over. Its answer at a revision is a
/// function of the target, the reader's grant and the store, so once a view route has
/// answered a target twice at one revision, the rendering is kept here as a response
/// already handed to the server (``PreparedResponse``): until the next write, the same
/// target is answered without routing, parsing its query, or building a response.
///
/// What stays exact: the answer is the one the route would give (a newer revision misses);
/// `If-None-Match` still gets its 304; an answer that varies by `Authorization` (it has
/// `Vary: Authorization`) is reused only for requests without a token, so a token is still
/// checked on every read that presents one; a client's `X-Request-Id` is still echoed (its
/// requests take the full path); and each answer is counted under its route.
/// Long-polls (`wait`, `since`) and every method but GET always take the full path.
final class HotReads: Sendable {
    /// One target's answer at one revision.
    struct Answer: Sendable {
        let revision: UInt64
        let fresh: PreparedResponse
        let tag: EntityTag
        /// Headers for caches, sent with a 304 too.
        let caching: [(String, String)]
        /// Whether the answer depends on the reader (`Vary: Authorization`).
        let variesByReader: Bool
        let metrics: RouteMetrics
    }

    /// What is known of a target at a revision: that it was asked once, or its answer.
    private struct Sighting: RevisionBound {
        let revision: UInt64
        let answer: Answer?

        /// The answer's body, copied into libmicrohttpd's response, and its headers.
        var size: Int { (answer?.fresh.response.body.count ?? 0) + 512 }
    }

    private let sightings: RevisionCache<String, Sighting>

    init(capacity: Int = 1024) {
        sightings = RevisionCache(capacity: capacity)
    }

    /// The answer to `request` when its target's answer at `revision` is kept and fits it.
    func answer(_ request: HTTPRequest, at revision: UInt64) -> (response: HTTPResponse, metrics: RouteMetrics)? {
        guard Self.mayUse(request),
            let answer = sightings.value(for: request.target, at: revision)?.answer,
            !answer.variesByReader || !request.headers.contains("Authorization")
        else { return nil }
        if answer.tag.isMatched(byIfNoneMatch: request.headers["If-None-Match"]) {
            return (.notModified(answer.tag, caching: answer.caching, requestID: nil), answer.metrics)
        }
        return (HTTPResponse(answer.fresh), answer.metrics)
    }

    /// Notes that `context`'s request was answered at once with `view`; the second time a
    /// target is answered at a revision, its answer is kept.
    func note(_ view: RenderedView, epoch: String, for context: RequestContext, metrics: RouteMetrics) {
        let request = context.request
        guard Self.mayUse(request), view.sharedAs != nil, context.query["wait"] == nil, context.query["since"] == nil
        else { return }
        let variesByReader = !view.caching.isEmpty
        // A token holder's rendering is theirs; only an answer for anyone, or for readers
        // without a token, is kept.
        if variesByReader, request.headers.contains("Authorization") { return }
        let seen = sightings.value(for: request.target, at: view.revision)
        guard seen?.answer == nil else { return }
        guard seen != nil else {
            sightings.keep(Sighting(revision: view.revision, answer: nil), for: request.target)
            return
        }
        let tag = EntityTag(epoch: epoch, revision: view.reads.revision)
        guard let fresh = PreparedResponse(.rendering(view, tag: tag, requestID: nil)) else { return }
        let answer = Answer(
            revision: view.revision, fresh: fresh, tag: tag, caching: view.caching, variesByReader: variesByReader,
            metrics: metrics)
        sightings.keep(Sighting(revision: view.revision, answer: answer), for: request.target)
    }

    /// Whether `request` is one a kept answer can be for: a plain GET, read whole, that
    /// brings no id of its own to echo.
    private static func mayUse(_ request: HTTPRequest) -> Bool {
        // A stream, or a page on another origin (whose answer may carry CORS's header
        // fields), takes the full path.
        request.method == "GET" && request.refusal == nil && !request.headers.contains("X-Request-Id")
            && !request.headers.contains("Origin") && !ServerSentEvents.isWanted(request)
    }
}
