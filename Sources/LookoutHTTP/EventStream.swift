import CMicroHTTPD
import Synchronization

/// What feeds a stream answer (``HTTPReply/stream(head:source:)``): told when it starts,
/// when the server shuts down, and when it is over.
public protocol EventStreamSource: Sendable {
    /// The stream's head is queued: start sending. Called once, on the request's event
    /// loop, from the handler; must not block.
    func start(_ stream: EventStream)
    /// The server is shutting down: end the stream, with a last word if it has one.
    func shutDown(_ stream: EventStream)
    /// The stream is over: its end was sent, or its connection closed (the client left).
    /// Called once, on the request's event loop.
    func stopped()
}

/// An answer whose body is sent piece by piece, for as long as its source has pieces (a
/// stream of server-sent events). Held without a thread, like a suspended request: while
/// it has nothing to send, its connection is suspended. Any thread may send.
public final class EventStream: Sendable {
    /// `@unchecked Sendable`: the C stream is reference-counted and locks itself.
    struct Handle: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    private let handle: Handle
    /// The event loop holding the connection, which ``onItsLoop(_:)`` runs work on.
    private let loop: EventLoop

    init(handle: Handle, loop: EventLoop) {
        self.handle = handle
        self.loop = loop
    }

    deinit {
        lk_mhd_stream_release(handle.pointer)
    }

    /// Sends `bytes` after what was sent before.
    /// - Returns: false, sending nothing, when the stream is over or ending, or when the
    ///   client has left more than the stream's limit unread.
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { lk_mhd_stream_send(handle.pointer, $0.baseAddress, $0.count) == 0 }
    }

    /// Sends `last`, even past the limit, and ends the stream once everything is sent.
    public func end(with last: [UInt8] = []) {
        last.withUnsafeBytes { lk_mhd_stream_end(handle.pointer, $0.baseAddress, $0.count) }
    }

    /// Runs `work` on the event loop holding the stream's connection: at once when called
    /// there, else soon (``SuspendedRequest/onItsLoop(_:)``).
    public func onItsLoop(_ work: @escaping @Sendable () -> Void) {
        loop.runHere(work)
    }
}

/// The open streams of one server, so that shutdown can end each of them.
final class EventStreams: Sendable {
    private struct Open: Sendable {
        let stream: EventStream
        let source: any EventStreamSource
    }

    private let open = Mutex<[UInt64: Open]>([:])
    private let nextID = Atomic<UInt64>(0)

    /// Most bytes a stream keeps waiting for a client that does not read.
    static let waitingLimit = 1 << 20

    /// Answers `request` with a stream fed by `source`, from the handler. False when the
    /// stream could not be made (out of memory, or a head too large): answer it otherwise.
    ///
    /// `draining` is asked after the stream is listed: a shutdown that began meanwhile has
    /// already ended the streams listed, so this one is ended at once. (A source may so be
    /// asked to shut down twice.)
    func open(
        _ request: OpaquePointer, head: HTTPResponse, source: any EventStreamSource, loop: EventLoop,
        draining: () -> Bool
    ) -> Bool {
        let id = nextID.wrappingAdd(1, ordering: .relaxed).newValue
        let owner = Unmanaged.passRetained(Closing(streams: self, id: id, source: source))
        guard let pointer = lk_mhd_stream_create(request, Self.waitingLimit, closeStream, owner.toOpaque()) else {
            owner.release()
            return false
        }
        let stream = EventStream(handle: EventStream.Handle(pointer: pointer), loop: loop)
        let answered = withCHeaders(head) { headers in
            lk_mhd_respond_stream(request, UInt32(head.status), headers.baseAddress, headers.count, pointer) == 0
        }
        guard answered else {
            owner.release()
            return false
        }
        open.withLock { $0[id] = Open(stream: stream, source: source) }
        source.start(stream)
        if draining() { source.shutDown(stream) }
        return true
    }

    /// Ends every open stream, each with its source's last word.
    func shutDownAll() {
        for entry in open.withLock({ Array($0.values) }) {
            entry.source.shutDown(entry.stream)
        }
    }

    var count: Int {
        open.withLock { $0.count }
    }

    fileprivate func closed(_ id: UInt64) -> (any EventStreamSource)? {
        open.withLock { $0.removeValue(forKey: id) }?.source
    }
}

/// What the C stream's `closed` callback is given: which stream of which server.
private final class Closing: Sendable {
    let streams: EventStreams
    let id: UInt64
    let source: any EventStreamSource

    init(streams: EventStreams, id: UInt64, source: any EventStreamSource) {
        self.streams = streams
        self.id = id
        self.source = source
    }
}

private let closeStream: @convention(c) (UnsafeMutableRawPointer?) -> Void = { owner in
    guard let owner else { return }
    let closing = Unmanaged<Closing>.fromOpaque(owner).takeRetainedValue()
    _ = closing.streams.closed(closing.id)
    closing.source.stopped()
}

extension HTTPResponse {
    /// The answer when a stream cannot be made: out of memory, or header fields too large
    /// for the connection.
    static let streamRefused = HTTPResponse(
        status: 500,
        headers: HTTPHeaders([("Content-Type", "application/json; charset=utf-8")]),
        body: Array(
            #"{"error":{"code":"stream_unavailable","message":"The stream could not be started; try again, or ask for less (a shorter query)."}}"#
                .utf8))
}
