/// What a responder does with a request: answer now, or hold it and answer later.
public enum HTTPReply: Sendable {
    /// Answer at once, on the daemon thread.
    case response(HTTPResponse)
    /// Suspend the connection without holding a thread while work for it goes on
    /// elsewhere (a write, a password check). `hold` runs right after the suspension,
    /// still on the daemon thread, with the handle that answers it from any thread; it
    /// must not block. Shutdown waits for the work's own answer: only a request that
    /// arrives while the server is already shutting down is answered `onShutdown()`
    /// instead, with nothing of it done.
    case suspend(
        onShutdown: @Sendable () -> HTTPResponse,
        hold: @Sendable (SuspendedRequest) -> Void
    )
    /// Suspend the connection while it waits for something that may never come (a
    /// long-poll), as ``suspend(onShutdown:hold:)`` does; but shutdown ends the wait and
    /// answers it with `onShutdown()`.
    case wait(
        onShutdown: @Sendable () -> HTTPResponse,
        hold: @Sendable (SuspendedRequest) -> Void
    )
    /// Answer with `head`'s status and header fields now, and a body that `source` sends
    /// piece by piece for as long as it likes (``EventStream``): server-sent events.
    /// Shutdown asks the source to end it. `head`'s body is ignored.
    case stream(head: HTTPResponse, source: any EventStreamSource)
}

/// Answers requests; the server calls it on its own threads.
public protocol HTTPResponder: Sendable {
    /// Answers one request.
    /// - Warning: runs on a libmicrohttpd thread: never block it; suspend instead.
    func reply(to request: HTTPRequest) -> HTTPReply
}
