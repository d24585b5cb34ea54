import Foundation
import LookoutAuth
import LookoutHTTP
import LookoutStore
import Synchronization

/// One view streamed to an `EventSource` (server-sent events): its rendering now, then a
/// new rendering each time something it read changes in a way the reader can see.
///
/// Each event is the view's JSON, the body a plain GET returns, with the cursor as its
/// `id`, so a browser that reconnects resumes with `Last-Event-ID`:
///
///     id: 0a1b2c3d4e5f6071-42
///     data: {"id":3,"title":"Harbour"}
///
/// A wake renders again on the loop holding the connection, as a held poll does
/// (``HeldPoll``); a rendering the client already has sends nothing and waits on what it
/// read. A comment line every heartbeat keeps proxies from cutting an idle stream. A
/// stream opened with a token checks it before every event and heartbeat, and at its
/// expiry: once it no longer verifies, the stream ends with an `end` event naming why.
final class ViewStream: EventStreamSource {
    /// Why a stream ended, as its last event says.
    enum Ending: String {
        case tokenExpired = "token_expired"
        case tokenRevoked = "token_revoked"
        case invalidToken = "invalid_token"
        case shuttingDown = "shutting_down"
        case tooSlow = "too_slow"
        case viewFailed = "view_failed"

        var message: String {
            switch self {
            case .tokenExpired: "The token expired; log in again (or refresh it) and reconnect."
            case .tokenRevoked: "The token was revoked."
            case .invalidToken: "The token no longer verifies."
            case .shuttingDown: "The server is shutting down; reconnect to continue."
            case .tooSlow: "The client did not read the stream; reconnect to continue."
            case .viewFailed: "The view can no longer be rendered; reconnect for its error."
            }
        }
    }

    private struct State {
        /// The rendering the client has (or will have once what waits is sent).
        var view: RenderedView
        var waiter: FieldRegistrar.WaiterID?
        var stream: EventStream?
        var heartbeat: DeadlineTimer.Token?
        var expiry: DeadlineTimer.Token?
        var ended = false
    }

    private let store: Store
    private let deadlines: DeadlineTimer
    private let tokens: TokenService
    /// The token the stream was opened with, and when it expires; nil for none.
    private let token: (text: String, expires: Date)?
    private let heartbeatInterval: Duration
    /// Renders the view.
    private let route: any ViewRoute
    /// Whether the client's cursor is this first rendering's: it has it, send nothing yet.
    private let clientIsCurrent: Bool
    private let state: Mutex<State>

    init(
        store: Store, deadlines: DeadlineTimer, tokens: TokenService, token: (text: String, expires: Date)?,
        heartbeat: Duration,
        view: RenderedView, clientIsCurrent: Bool, route: any ViewRoute
    ) {
        self.store = store
        self.deadlines = deadlines
        self.tokens = tokens
        self.token = token
        self.heartbeatInterval = heartbeat
        self.route = route
        self.clientIsCurrent = clientIsCurrent
        self.state = Mutex(State(view: view))
    }

    /// The bytes of one event carrying `view`: `id:` the cursor, `data:` the JSON (a line
    /// each, should it hold line breaks, which compact JSON does not).
    static func event(_ view: RenderedView, epoch: String) -> [UInt8] {
        var bytes = Array("id: \(epoch)-\(view.reads.revision)\n".utf8)
        bytes.reserveCapacity(bytes.count + view.body.count + 8)
        for line in view.body.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            bytes += Array("data: ".utf8)
            bytes += line
            bytes.append(UInt8(ascii: "\n"))
        }
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    /// The `end` event: why the stream ends.
    static func endEvent(_ ending: Ending) -> [UInt8] {
        let data = #"{"reason":"\#(ending.rawValue)","message":"\#(ending.message)"}"#
        return Array("event: end\ndata: \(data)\n\n".utf8)
    }

    func start(_ stream: EventStream) {
        let (view, epoch) = (state.withLock { $0.view }, store.snapshot().epoch)
        state.withLock { $0.stream = stream }
        // Reconnect a second after the stream is cut (the browser's default is 3).
        var first = Array("retry: 1000\n\n".utf8)
        if !clientIsCurrent { first += Self.event(view, epoch: epoch) }
        stream.send(first)
        scheduleHeartbeat()
        if let token {
            let left = token.expires.timeIntervalSinceNow + TokenService.leeway + 0.01
            let check = deadlines.schedule(after: .milliseconds(Int64(max(0, left) * 1000))) { [self] in
                _ = tokenStillGood()
            }
            state.withLock { $0.expiry = check }
        }
        register(reads: view.reads)
    }

    func shutDown(_ stream: EventStream) {
        end(.shuttingDown)
    }

    func stopped() {
        let (waiter, timers) = state.withLock { state in
            state.ended = true
            state.stream = nil
            defer { (state.heartbeat, state.expiry) = (nil, nil) }
            return (state.waiter, [state.heartbeat, state.expiry])
        }
        if let waiter { store.cancel(waiter) }
        for case let timer? in timers { deadlines.cancel(timer) }
    }

    /// Ends the stream with `ending` as its last event, once.
    private func end(_ ending: Ending) {
        let (stream, waiter, timers) = state.withLock { state in
            let stream = state.ended ? nil : state.stream
            state.ended = true
            return (stream, state.waiter, [state.heartbeat, state.expiry])
        }
        guard let stream else { return }
        if let waiter { store.cancel(waiter) }
        for case let timer? in timers { deadlines.cancel(timer) }
        stream.end(with: Self.endEvent(ending))
    }

    /// Whether the stream's token (if any) still verifies; ends the stream when not.
    private func tokenStillGood() -> Bool {
        guard let token else { return true }
        do {
            _ = try tokens.verify(token.text)
            return true
        } catch {
            switch error {
            case .tokenExpired: end(.tokenExpired)
            case .tokenRevoked: end(.tokenRevoked)
            default: end(.invalidToken)
            }
            return false
        }
    }

    private func scheduleHeartbeat() {
        let token = deadlines.schedule(after: heartbeatInterval) { [self] in
            guard tokenStillGood() else { return }
            let stream = state.withLock { $0.ended ? nil : $0.stream }
            guard let stream else { return }
            if stream.send(Array(": heartbeat\n\n".utf8)) {
                scheduleHeartbeat()
            } else {
                end(.tooSlow)
            }
        }
        let ended = state.withLock { state in
            state.heartbeat = token
            return state.ended
        }
        if ended { deadlines.cancel(token) }
    }

    /// Waits on `reads`; a change that already happened is rendered at once.
    private func register(reads: ReadSet) {
        var reads = reads
        while true {
            guard !reads.keys.isEmpty else { return }  // reads nothing that can change
            let registration = store.wait(for: reads, after: reads.revision) { [self] _ in
                let stream = state.withLock { $0.stream }
                stream?.onItsLoop { [self] in
                    if let next = rerender() { register(reads: next) }
                }
            }
            switch registration {
            case .waiting(let waiter):
                let ended = state.withLock { state in
                    state.waiter = waiter
                    return state.ended
                }
                if ended { store.cancel(waiter) }
                return
            case .alreadyChanged:
                guard let next = rerender() else { return }
                reads = next
            }
        }
    }

    /// Renders the view again: sends it when the client would see something new. Returns
    /// what the rendering read, to wait on, or nil when the stream ended.
    private func rerender() -> ReadSet? {
        guard !state.withLock({ $0.ended }), tokenStillGood() else { return nil }
        let latest = store.snapshot()
        let view: RenderedView
        do {
            view = try route.render(latest)
        } catch {
            end(.viewFailed)
            return nil
        }
        let (stream, same) = state.withLock { state in
            let same = view.hasSameContent(as: state.view)
            state.view = view
            return (state.ended ? nil : state.stream, same)
        }
        guard let stream else { return nil }
        if !same, !stream.send(Self.event(view, epoch: latest.epoch)) {
            end(.tooSlow)
            return nil
        }
        return view.reads
    }
}
