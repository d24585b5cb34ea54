import CMicroHTTPD
import LookoutTrace
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Errors starting the HTTP server.
public enum HTTPServerError: Error, CustomStringConvertible, Equatable {
    case cannotListen(String)
    case invalidConfiguration(String)

    public var description: String {
        switch self {
        case .cannotListen(let reason): "cannot listen: \(reason)"
        case .invalidConfiguration(let reason): "invalid server configuration: \(reason)"
        }
    }
}

/// An HTTP/1.1 server on libmicrohttpd: one daemon per bind address, all answered by
/// one ``HTTPResponder``.
///
/// Lifecycle: ``start()`` once, then ``shutdown(timeout:)`` once. Shutdown stops
/// accepting, answers every suspended request, waits for those answers to be sent, and
/// only then stops the daemons (stopping with suspended connections is an API violation
/// in libmicrohttpd).
public final class HTTPServer: Sendable {
    /// The running daemons.
    ///
    /// `@unchecked Sendable`: the pointers are only used under `state`'s lock, and
    /// libmicrohttpd's daemon calls used here are thread-safe.
    private struct Daemons: @unchecked Sendable {
        var pointers: [OpaquePointer] = []
    }

    private let configuration: HTTPServerConfiguration
    private let core: ServerCore
    private let daemons = Mutex(Daemons())
    private let boundPort = Atomic<Int>(0)

    public init(configuration: HTTPServerConfiguration, responder: some HTTPResponder) {
        self.configuration = configuration
        self.core = ServerCore(responder: responder)
        if WakeTrace.isEnabled {
            lk_mhd_set_trace { tag, stage, nanoseconds in
                WakeTrace.mark(stage == UInt32(LK_MHD_TRACE_RESUMED) ? .resumed : .sent, revision: tag, at: nanoseconds)
            }
        }
    }

    /// The port the server listens on, once started.
    public var port: Int { boundPort.load(ordering: .acquiring) }

    /// Requests currently suspended and not yet answered.
    public var suspendedCount: Int { core.suspended.count }
    /// Event streams open (``HTTPReply/stream(head:source:)``).
    public var streamCount: Int { core.streams.count }
    /// Open connections held by each event-loop thread, over every bound address.
    public var connectionsPerThread: [Int] {
        perThread { Int(lk_mhd_thread_connections($0, $1)) }
    }

    /// libmicrohttpd daemons each event-loop thread has started, over every bound address.
    public var daemonsPerThread: [Int] {
        perThread { Int(lk_mhd_thread_daemons($0, $1)) }
    }

    /// Waits for events that ended while a thread polled before sleeping
    /// (``HTTPServerConfiguration/spinMicroseconds``), over every thread and address.
    public var waitsEndedByPolling: Int {
        perThread { Int(lk_mhd_thread_spin_hits($0, $1)) }.reduce(0, +)
    }

    /// Times a thread stopped polling because CPU-bound work shared its CPU
    /// (``HTTPServerConfiguration/keepsPollingWhenContended``), over every thread and address.
    public var pollingPauses: Int {
        perThread { Int(lk_mhd_thread_spin_pauses($0, $1)) }.reduce(0, +)
    }

    /// Answers its loops stay awake for now (``HTTPServerConfiguration/awaitedAnswers``).
    public var awaitedAnswers: Int { configuration.awaitedAnswers?.count ?? 0 }

    /// Requests each event-loop thread holds suspended and not yet completed, over every
    /// bound address.
    public var suspendedPerThread: [Int] {
        perThread { Int(lk_mhd_thread_suspended($0, $1)) }
    }

    /// A count of each event-loop thread's, summed over the bound addresses.
    private func perThread(_ count: (OpaquePointer, UInt32) -> Int) -> [Int] {
        daemons.withLock { state in
            (0..<configuration.threadCount).map { thread in
                state.pointers.reduce(0) { $0 + count($1, UInt32(thread)) }
            }
        }
    }

    /// Binds every configured address and starts serving.
    /// - Precondition: called once.
    /// - Throws: ``HTTPServerError`` when an address cannot be bound; nothing keeps running then.
    public func start() throws {
        precondition(port == 0 && daemons.withLock { $0.pointers.isEmpty }, "HTTPServer.start() called twice")
        try validate()
        // The first daemon may pick the port; the others bind the same one.
        var port = configuration.port
        var started: [OpaquePointer] = []
        let context = Unmanaged.passRetained(core).toOpaque()
        for address in configuration.bindAddresses {
            do {
                let daemon = try startDaemon(address: address, port: port, context: context)
                started.append(daemon)
                port = Int(lk_mhd_port(daemon))
            } catch {
                started.forEach { lk_mhd_stop($0) }
                Unmanaged<ServerCore>.fromOpaque(context).release()
                throw error
            }
        }
        boundPort.store(port, ordering: .releasing)
        daemons.withLock { $0.pointers = started }
    }

    /// Stops the server: no new connections, every held wait (``HTTPReply/wait(onShutdown:hold:)``)
    /// answered with its shutdown response, then the daemons stopped once every suspended
    /// request has been answered and sent.
    ///
    /// Waits up to `timeout` for work in progress to answer and for every answer to be sent;
    /// a request arriving on an open connection meanwhile is answered with its shutdown
    /// response, and every answer from now on closes its connection.
    /// - Returns: false if some had not finished by then. The daemons are then left
    ///   running, quiesced (libmicrohttpd forbids stopping with suspended connections);
    ///   the caller should exit the process, which closes them.
    @discardableResult
    public func shutdown(timeout: Duration = .seconds(10)) -> Bool {
        let running = daemons.withLock { state in
            defer { state.pointers = [] }
            return state.pointers
        }
        guard !running.isEmpty else { return true }
        // Refusing new work first: a request that finds its answer marked to close the
        // connection (lk_mhd_quiesce) must not then be taken on as work shutdown waits for.
        core.isDraining.store(true, ordering: .releasing)
        running.forEach { lk_mhd_quiesce($0) }
        core.suspended.endWaits()
        core.streams.shutDownAll()
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        func drained() -> Bool { running.allSatisfy { lk_mhd_suspended_count($0) == 0 } }
        while !drained(), clock.now < deadline {
            usleep(2_000)
        }
        guard drained() else { return false }
        core.posts.close()
        running.forEach { lk_mhd_stop($0) }
        Unmanaged.passUnretained(core).release()
        return true
    }

    private func validate() throws {
        let c = configuration
        guard !c.bindAddresses.isEmpty else { throw HTTPServerError.invalidConfiguration("no bind address") }
        guard (0...65_535).contains(c.port) else { throw HTTPServerError.invalidConfiguration("port \(c.port)") }
        guard c.threadCount >= 1, c.threadCount <= 256, (1...256).contains(c.daemonsPerThread), c.maxConnections >= 1,
            c.maxConnectionsPerClient >= 0,
            c.idleTimeoutSeconds >= 0, c.maxHeadBytes >= 1024, c.maxBodyBytes >= 0, c.requestTimeoutSeconds >= 1
        else { throw HTTPServerError.invalidConfiguration("limits must be positive") }
        guard (0...Int(LK_MHD_MAX_SPIN_MICROSECONDS)).contains(c.spinMicroseconds) else {
            throw HTTPServerError.invalidConfiguration(
                "spin microseconds \(c.spinMicroseconds): from 0 to \(LK_MHD_MAX_SPIN_MICROSECONDS)")
        }
    }

    private func startDaemon(address: String, port: Int, context: UnsafeMutableRawPointer) throws -> OpaquePointer {
        var error = [CChar](repeating: 0, count: 256)
        // "authorization\0content-type\0\0": the names, lowercase, each ended by NUL.
        let requestHeaders: [CChar]? = configuration.requestHeaders.map { names in
            names.flatMap { $0.lowercased().utf8.map { CChar(bitPattern: $0) } + [0] } + [0]
        }
        let daemon = address.withCString { bindAddress -> OpaquePointer? in
            var config = lk_mhd_config()
            config.bind_address = bindAddress
            config.port = UInt16(port)
            config.thread_count = UInt32(configuration.threadCount)
            config.daemons_per_thread = UInt32(configuration.daemonsPerThread)
            config.connection_limit = UInt32(configuration.maxConnections)
            config.per_ip_connection_limit = UInt32(configuration.maxConnectionsPerClient)
            config.idle_timeout_seconds = UInt32(configuration.idleTimeoutSeconds)
            config.max_head_bytes = configuration.maxHeadBytes
            config.max_body_bytes = configuration.maxBodyBytes
            config.request_timeout_seconds = UInt32(clamping: configuration.requestTimeoutSeconds)
            config.spin_microseconds = UInt32(configuration.spinMicroseconds)
            config.keep_polling_when_contended = configuration.keepsPollingWhenContended ? 1 : 0
            config.awaited = configuration.awaitedAnswers?.pointer
            config.handler = handleRequest
            config.on_tasks = runTasks
            config.context = context
            guard let requestHeaders else { return lk_mhd_start(&config, &error, error.count) }
            return requestHeaders.withUnsafeBufferPointer { names in
                config.request_headers = names.baseAddress
                return lk_mhd_start(&config, &error, error.count)  // copies the names
            }
        }
        guard let daemon else {
            throw HTTPServerError.cannotListen(
                String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return daemon
    }
}

/// What the C callback needs: the responder and the registry of suspended requests.
final class ServerCore: Sendable {
    let responder: any HTTPResponder
    let suspended = SuspendedRequests()
    let streams = EventStreams()
    let isDraining = Atomic<Bool>(false)
    /// Open while the event loops run, for work posted to them.
    let posts = PostGate()

    init(responder: any HTTPResponder) {
        self.responder = responder
    }
}

/// The C handler: builds an ``HTTPRequest``, asks the responder, answers or suspends.
///
/// Defined at file scope, outside any actor, because libmicrohttpd calls it on its own threads.
private let handleRequest: lk_mhd_handler = { context, request in
    guard let context, let request else { return }
    // Unretained: `HTTPServer.start` retained the core for as long as the daemons run.
    let core = Unmanaged<ServerCore>.fromOpaque(context).takeUnretainedValue()
    switch core.responder.reply(to: makeRequest(request)) {
    case .response(let response):
        send(response, through: request)
    case .suspend(let onShutdown, let hold):
        suspend(request, core: core, endsAtShutdown: false, onShutdown: onShutdown, hold: hold)
    case .wait(let onShutdown, let hold):
        suspend(request, core: core, endsAtShutdown: true, onShutdown: onShutdown, hold: hold)
    case .stream(let head, let source):
        let loop = EventLoop(
            server: EventLoop.Server(pointer: lk_mhd_request_server(request)), thread: lk_mhd_request_thread(request),
            gate: core.posts)
        let draining = { core.isDraining.load(ordering: .acquiring) }
        if !core.streams.open(request, head: head, source: source, loop: loop, draining: draining) {
            send(.streamRefused, through: request)
        }
    }
}

/// The C callback for work posted to an event loop (``SuspendedRequest/onItsLoop(_:)``).
private let runTasks: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<UnsafeMutableRawPointer?>?, Int) -> Void =
    {
        _, tasks, count in
        guard let tasks else { return }
        LoopTask.run(UnsafeBufferPointer(start: tasks, count: count))
    }

private func suspend(
    _ request: OpaquePointer,
    core: ServerCore,
    endsAtShutdown: Bool,
    onShutdown: @escaping @Sendable () -> HTTPResponse,
    hold: @Sendable (SuspendedRequest) -> Void
) {
    if core.isDraining.load(ordering: .acquiring) {
        send(onShutdown(), through: request)
        return
    }
    lk_mhd_suspend(request)
    let held = SuspendedRequest(
        handle: SuspendedRequest.Handle(pointer: request),
        id: core.suspended.makeID(),
        registry: core.suspended,
        loop: EventLoop(
            server: EventLoop.Server(pointer: lk_mhd_request_server(request)), thread: lk_mhd_request_thread(request),
            gate: core.posts),
        endsAtShutdown: endsAtShutdown,
        onShutdown: onShutdown
    )
    core.suspended.insert(held)
    // A shutdown that began between the check above and the insert has already swept
    // the registry: end this wait now rather than leave it suspended. (Work goes on: it
    // answers when done, and shutdown waits for that.)
    if endsAtShutdown, core.isDraining.load(ordering: .acquiring) {
        held.respondAtShutdown()
        return
    }
    hold(held)
}

private func refusal(of request: OpaquePointer) -> HTTPRequest.Refusal? {
    var code: UnsafePointer<CChar>?
    var message: UnsafePointer<CChar>?
    let status = lk_mhd_request_fault(request, &code, &message)
    guard status != 0, let code, let message else { return nil }
    return HTTPRequest.Refusal(status: Int(status), code: String(cString: code), message: String(cString: message))
}

private func makeRequest(_ request: OpaquePointer) -> HTTPRequest {
    var headers = HTTPHeaders()
    headers.reserveCapacity(lk_mhd_request_header_count(request))
    withUnsafeMutablePointer(to: &headers) { pointer in
        lk_mhd_request_headers(
            request,
            { context, name, value in
                guard let context, let name, let value else { return }
                context.assumingMemoryBound(to: HTTPHeaders.self).pointee.add(
                    String(cString: name), String(cString: value))
            }, pointer)
    }
    var length = 0
    let body: [UInt8]
    if let bytes = lk_mhd_request_body(request, &length), length > 0 {
        body = Array(UnsafeBufferPointer(start: bytes, count: length))
    } else {
        body = []
    }
    var made = HTTPRequest(
        method: String(cString: lk_mhd_request_method(request)),
        target: String(cString: lk_mhd_request_target(request)),
        headers: headers,
        body: body,
        refusal: refusal(of: request),
        address: clientAddress(of: request)
    )
    if WakeTrace.isEnabled { made.receivedAt = lk_mhd_request_received_ns(request) }
    return made
}

private func clientAddress(of request: OpaquePointer) -> ClientAddress {
    var bytes: (UInt64, UInt64) = (0, 0)
    return withUnsafeMutableBytes(of: &bytes) { buffer in
        let count = lk_mhd_request_client_address(request, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self))
        return ClientAddress(bytes: UnsafeRawBufferPointer(rebasing: buffer.prefix(Int(count))))
    }
}
