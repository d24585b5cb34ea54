import Foundation
import LookoutAuth
import LookoutHTTP
import LookoutStore

/// EventSource on every view: a GET with `Accept: text/event-stream` is answered with a
/// stream of the view's renderings (``ViewStream``) instead of one.
///
/// - The first event is the current rendering, unless the client's cursor
///   (`Last-Event-ID`, which a browser sends when it reconnects, or `?since=`) is current.
/// - A token may come as `Authorization: Bearer`, or, because `EventSource` cannot send
///   header fields, as `?access_token=` (RFC 6750 §2.3), accepted on streams only and
///   taken out of the target before anything logs or renders it. A stream whose token
///   does not verify is refused with the token's 401, like a read of a private view.
/// - Errors before the stream starts are the usual JSON errors; the browser's
///   `EventSource` then reports `error`.
struct ServerSentEvents: Sendable {
    static let mediaType = "text/event-stream"
    /// The query parameter carrying a token on a stream.
    static let tokenParameter = "access_token"

    let store: Store
    let deadlines: DeadlineTimer
    let tokens: TokenService
    /// How often an idle stream sends a comment line.
    let heartbeat: Duration

    /// Whether `request` asks for a stream: a GET whose `Accept` names `text/event-stream`
    /// and prefers it to JSON (RFC 9110 §12.5.1: a higher `q` than the most specific range
    /// matching `application/json`, or JSON not acceptable at all). A browser's
    /// `EventSource` sends `Accept: text/event-stream` alone. A client that accepts both at
    /// the same quality, as a generated OpenAPI client lists every documented type, gets
    /// the one JSON answer: a stream never ends, and it did not ask for one above all.
    static func isWanted(_ request: HTTPRequest) -> Bool {
        guard request.method == "GET", let accept = request.headers["Accept"] else { return false }
        var stream: Double?
        // The quality of application/json by the most specific range naming it (3, 2, 1).
        var json: (specificity: Int, quality: Double) = (0, 0)
        for range in accept.lowercased().split(separator: ",") {
            let parts = range.split(separator: ";")
            let type = (parts.first ?? "").trimmingSpaces()
            var quality = 1.0
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1)
                if pair.count == 2, pair[0].trimmingSpaces() == "q" {
                    quality = Double(pair[1].trimmingSpaces()).map { min(max($0, 0), 1) } ?? 0
                }
            }
            let specificity =
                switch type {
                case "application/json": 3
                case "application/*": 2
                case "*/*": 1
                default: 0
                }
            if type == mediaType { stream = max(stream ?? 0, quality) }
            if specificity > json.specificity { json = (specificity, quality) }
        }
        guard let stream, stream > 0 else { return false }
        return stream > json.quality
    }

    /// `request` as the view sees it: a token in `?access_token=` moved into
    /// `Authorization` (unless one is there), and the parameter out of the target.
    static func viewRequest(_ request: HTTPRequest) -> HTTPRequest {
        let query = QueryParameters(request.rawQuery)
        guard let token = query[tokenParameter] else { return request }
        var headers = request.headers
        if !headers.contains("Authorization") { headers.add("Authorization", "Bearer \(token)") }
        let rest = query.encoded(excluding: [tokenParameter])
        let target = String(request.path) + (rest.isEmpty ? "" : "?" + rest)
        return request.with(target: target, headers: headers)
    }

    /// Answers a view request with a stream of its renderings; `route` renders them,
    /// answers an error, and counts the stream's 200.
    func reply(to context: RequestContext, route: any ViewRoute) -> HTTPReply {
        let token: (text: String, expires: Date)?
        let view: RenderedView
        let snapshot = store.snapshot()
        let cursor: EntityTag?
        do {
            if let header = context.request.headers["Authorization"] {
                let presented = try BearerToken.parse(header)
                token = (presented, try tokens.verify(presented).expires)
            } else {
                token = nil
            }
            cursor = try self.cursor(context)
            view = try route.render(snapshot)
        } catch {
            return .response(route.finish(.failure(error)))
        }
        let isCurrent = cursor.map { $0.epoch == snapshot.epoch && view.reads.revision <= $0.revision } ?? false
        var head = HTTPResponse(
            status: 200,
            headers: HTTPHeaders([
                ("Content-Type", "\(Self.mediaType); charset=utf-8"), ("Cache-Control", "no-cache"),
                ("X-Accel-Buffering", "no"),
            ]))
        head.headers.addRequestID(context.echoedRequestID)
        route.counted(200)
        let stream = ViewStream(
            store: store, deadlines: deadlines, tokens: tokens, token: token, heartbeat: heartbeat, view: view,
            clientIsCurrent: isCurrent, route: route)
        return .stream(head: head, source: stream)
    }

    /// The cursor the client has: `Last-Event-ID` (a browser's reconnect), else `?since=`.
    private func cursor(_ context: RequestContext) throws(APIError) -> EntityTag? {
        if let last = context.request.headers["Last-Event-ID"] {
            // Not one of ours (another server's id): the client gets the current rendering.
            return EntityTag(parsing: last[...].trimmingSpaces())
        }
        guard let since = context.query["since"] else { return nil }
        guard let tag = EntityTag(parsing: since[...]) else {
            throw APIError.invalidParameter(
                "since", "must be a cursor as given in an ETag, such as 0a1b2c3d4e5f6071-42.")
        }
        return tag
    }
}
