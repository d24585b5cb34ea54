/// What a responder does with a request: answer now, or hold it and answer later.
public enum HTTPReply: Sendable {
    /// Answer at once, on the daemon thread.
    case response(HTTPResponse)
    /// Suspend the connection without holding a thread. `hold` runs right after the
    /// suspension, still on the daemon thread, with the handle that answers it from any
    /// thread; it must not block. If the server shuts down first, it answers with
    /// `onShutdown()` instead.
    case suspend(
        onShutdown: @Sendable () -> HTTPResponse,
        hold: @Sendable (SuspendedRequest) -> Void
    )
}

/// Answers requests; the server calls it on its own threads.
public protocol HTTPResponder: Sendable {
    /// Answers one request.
    /// - Warning: runs on a libmicrohttpd thread: never block it; suspend instead.
    func reply(to request: HTTPRequest) -> HTTPReply
}
