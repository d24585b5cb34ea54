import LookoutHTTP
import LookoutStore
import Synchronization

/// Long-poll on any view (DESIGN.md §3): `?wait=SECONDS` with the cursor in
/// `If-None-Match` or `?since=`.
///
/// - No cursor, a cursor from another epoch, or a read set changed after the cursor:
///   answered at once, 200.
/// - Otherwise held, without a thread (``HeldPoll``): when something it read changes,
///   rendered again and answered 200 with `Lookout-Changed` naming what changed — unless
///   the new rendering is what the client already has, in which case it stays held; at
///   the deadline (plus up to wait/16 of jitter, so a crowd does not return at once)
///   answered 304 with the current `ETag`.
/// - Without `wait`, `If-None-Match` naming the current cursor gives 304.
struct LongPoll: Sendable {
    /// The header naming the keys whose change woke a held request.
    static let changedHeader = "Lookout-Changed"
    /// The query parameters that make a read a long-poll; they do not change what it renders.
    static let parameters: Set<String> = ["wait", "since"]

    let store: Store
    /// The longest wait a client may ask for, in seconds.
    let maxWait: Double
    let deadlines: DeadlineTimer

    init(store: Store, maxWait: Double, deadlines: DeadlineTimer) {
        self.store = store
        self.maxWait = maxWait
        self.deadlines = deadlines
    }

    /// Answers a request for a view that `route` renders.
    /// - Parameters:
    ///   - route: renders the view, and logs and counts the answers (a held poll keeps it).
    ///   - answered: told of a view answered at once, not held, with its epoch.
    func reply(
        to context: RequestContext,
        route: any ViewRoute,
        answered: (RenderedView, String) -> Void = { _, _ in }
    ) -> HTTPReply {
        let snapshot = store.snapshot()
        let wait: Double?
        let cursor: EntityTag?
        let view: RenderedView
        do {
            wait = try waitSeconds(context)
            cursor = try self.cursor(context)
            view = try route.render(snapshot)
        } catch {
            return .response(route.finish(.failure(error)))
        }
        guard let wait, let cursor, cursor.epoch == snapshot.epoch, view.reads.revision <= cursor.revision,
            !view.reads.keys.isEmpty
        else {
            answered(view, snapshot.epoch)
            return .response(route.finish(.success(.view(view, epoch: snapshot.epoch, context: context))))
        }
        let poll = HeldPoll(
            store: store, deadlines: deadlines, view: view, epoch: snapshot.epoch,
            requestID: context.echoedRequestID, route: route)
        // Shutdown ends the wait as its deadline would: nothing it read has changed.
        return .wait(
            onShutdown: { route.finish(.success(poll.notModified())) },
            hold: { held in poll.hold(held, for: wait) })
    }

    /// `?wait=SECONDS`, capped; nil when absent or 0.
    private func waitSeconds(_ context: RequestContext) throws -> Double? {
        guard let text = context.query["wait"] else { return nil }
        guard let seconds = Double(text), seconds.isFinite, seconds >= 0 else {
            throw APIError.invalidParameter("wait", "must be a number of seconds, not '\(text.prefix(32))'.")
        }
        return seconds > 0 ? min(seconds, maxWait) : nil
    }

    /// The cursor from `?since=` or else `If-None-Match`; nil when neither is given.
    private func cursor(_ context: RequestContext) throws -> EntityTag? {
        if let since = context.query["since"] {
            guard let tag = EntityTag(parsing: since[...]) else {
                throw APIError.invalidParameter(
                    "since", "must be a cursor as given in an ETag, such as 0a1b2c3d4e5f6071-42.")
            }
            return tag
        }
        return EntityTag.first(in: context.request.headers["If-None-Match"])
    }
}
