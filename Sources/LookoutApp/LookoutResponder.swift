import Logging
import LookoutAuth
import LookoutFeeds
import LookoutHTTP
import LookoutPersistence
import LookoutStore

/// The service's one ``HTTPResponder``: gives each request an id, routes it, runs its
/// handler, and turns every error into the one JSON error shape. Errors are caught here
/// and nowhere else. Every answer is counted and timed by its route's ``RouteMetrics``.
///
/// A class, like ``RequestContext``: a held poll's closures capture it.
final class LookoutResponder: HTTPResponder {
    /// The request header fields any route reads; the server keeps no other
    /// (``HTTPServerConfiguration/requestHeaders``). A route reading a field not listed
    /// here would never see it: `RequestHeadersTests` checks the sources against this list.
    static let requestHeaders = [
        "Authorization", "Content-Type", "If-Match", "If-None-Match", "X-Request-Id", "Accept", "Last-Event-ID",
        "Origin", "Access-Control-Request-Method",
    ]

    let router: Router
    let longPoll: LongPoll
    let events: ServerSentEvents
    /// Nil when CORS is off.
    let crossOrigin: CrossOrigin?
    let writes: WriteExecutor
    let maxBodyBytes: Int
    let logger: Logger
    /// Whether `logger` takes the line each request gets at debug level. Its level is
    /// fixed (a `let`), and asking it copies its handler: a µs or more per request.
    private let logsEachRequest: Bool
    let requestIDs = RequestIDGenerator()
    let hotReads = HotReads()
    /// What routing made of the targets seen last.
    private let targets: ParsedTargets
    /// Per pattern of `router`, by index.
    private let routeMetrics: [RouteMetrics]
    private let unmatchedMetrics: RouteMetrics
    private let metrics: ServiceMetrics

    init(
        router: Router, longPoll: LongPoll, events: ServerSentEvents, crossOrigin: CrossOrigin?,
        writes: WriteExecutor, maxBodyBytes: Int, logger: Logger, metrics: ServiceMetrics
    ) {
        self.router = router
        targets = ParsedTargets(router: router)
        self.longPoll = longPoll
        self.events = events
        self.crossOrigin = crossOrigin
        self.writes = writes
        self.maxBodyBytes = maxBodyBytes
        self.logger = logger
        logsEachRequest = logger.logLevel <= .debug
        routeMetrics = router.patterns.map { metrics.route($0) }
        unmatchedMetrics = metrics.route(RouteMetrics.unmatched)
        self.metrics = metrics
    }

    func reply(to request: HTTPRequest) -> HTTPReply {
        let started = RouteMetrics.now()
        // A line per request at debug level names its id: those take the full path.
        if !logsEachRequest, let (response, metrics) = hotReads.answer(request, at: longPoll.store.revision) {
            metrics.record(method: request.method, status: response.status, since: started)
            return .response(response)
        }
        let streaming = ServerSentEvents.isWanted(request)
        let request = streaming ? ServerSentEvents.viewRequest(request) : request
        let reply = route(request, started: started, streaming: streaming)
        guard let crossOrigin else { return reply }
        return decorated(reply, by: crossOrigin, for: request)
    }

    /// `reply` with the CORS header fields `crossOrigin` adds for `request`.
    private func decorated(_ reply: HTTPReply, by crossOrigin: CrossOrigin, for request: HTTPRequest) -> HTTPReply {
        guard crossOrigin.allowOrigin(for: request) != nil else { return reply }
        let decorate: @Sendable (HTTPResponse) -> HTTPResponse = { response in
            var response = response
            crossOrigin.decorate(&response, for: request)
            return response
        }
        switch reply {
        case .response(let response):
            // A preflight's answer carries its own.
            return CrossOrigin.isPreflight(request) ? reply : .response(decorate(response))
        // A held request's answers, its shutdown answer included, are decorated as sent.
        case .suspend(let onShutdown, let hold):
            return .suspend(onShutdown: onShutdown, hold: { held in hold(held.decorating(decorate)) })
        case .wait(let onShutdown, let hold):
            return .wait(onShutdown: onShutdown, hold: { held in hold(held.decorating(decorate)) })
        case .stream(let head, let source):
            return .stream(head: decorate(head), source: source)
        }
    }

    private func route(_ request: HTTPRequest, started: UInt64, streaming: Bool) -> HTTPReply {
        let requestID = requestIDs.id(for: request.headers["X-Request-Id"])
        if let crossOrigin, CrossOrigin.isPreflight(request), request.refusal == nil {
            return .response(preflight(request, requestID, crossOrigin, started: started))
        }
        let target = targets.parsed(request)
        let match = router.match(method: request.method, target.path)
        let measured: Measured
        if case .found(_, _, let pattern) = match {
            measured = Measured(metrics: routeMetrics[pattern], started: started)
        } else {
            measured = Measured(metrics: unmatchedMetrics, started: started)
        }
        if let refusal = request.refusal {
            let error =
                refusal.status == 413
                ? APIError.payloadTooLarge(limit: maxBodyBytes)
                : APIError(status: refusal.status, code: refusal.code, message: refusal.message)
            return .response(finish(request, requestID, measured, .failure(error)))
        }
        switch match {
        case .notFound:
            return .response(finish(request, requestID, measured, .failure(APIError.notFound)))
        case .methodNotAllowed(let allowed):
            return .response(finish(request, requestID, measured, .failure(APIError.methodNotAllowed(allowed))))
        case .found(let handler, let parameters, _):
            let context = RequestContext(
                request: request, requestID: requestID, pathParameters: parameters, query: target.query,
                viewKey: target.viewKey)
            switch handler {
            case .immediate(let handle):
                return .response(finish(request, requestID, measured, Result { try handle(context) }))
            case .view(let render) where streaming:
                return events.reply(
                    to: context, route: HeldRoute(responder: self, context: context, measured: measured, render: render)
                )
            case .view(let render):
                // A held poll is finished when it is answered, so its time is the time held.
                return longPoll.reply(
                    to: context,
                    route: HeldRoute(responder: self, context: context, measured: measured, render: render),
                    answered: { view, epoch in
                        hotReads.note(view, epoch: epoch, for: context, metrics: measured.metrics)
                    })
            case .write(let prepare):
                let prepared: PreparedWrite
                do {
                    prepared = try prepare(context)
                } catch {
                    return .response(finish(request, requestID, measured, .failure(error)))
                }
                if let outcome = writes.applyHere(prepared) {
                    return .response(finish(request, requestID, measured, outcome))
                }
                return .suspend(
                    onShutdown: { APIError.shuttingDown.response(requestID: requestID.description) },
                    hold: { [self] held in
                        writes.submit(prepared) { held.respond(self.finish(request, requestID, measured, $0)) }
                    })
            case .deferred(let handle):
                return .suspend(
                    onShutdown: { APIError.shuttingDown.response(requestID: requestID.description) },
                    hold: { [self] held in
                        Task {
                            let result: Result<HTTPResponse, any Error>
                            do {
                                result = .success(try await handle(context))
                            } catch {
                                result = .failure(error)
                            }
                            held.respond(finish(request, requestID, measured, result))
                        }
                    })
            }
        }
    }

    /// The answer to a CORS preflight: the methods of the route at its path.
    private func preflight(
        _ request: HTTPRequest, _ requestID: RequestID, _ crossOrigin: CrossOrigin, started: UInt64
    ) -> HTTPResponse {
        let measured = Measured(metrics: unmatchedMetrics, started: started)
        let methods: [String]
        switch router.match(method: request.method, path: request.path) {
        case .notFound: return finish(request, requestID, measured, .failure(APIError.notFound))
        case .methodNotAllowed(let allowed): methods = allowed
        case .found: methods = [request.method]
        }
        guard let response = crossOrigin.preflight(request, methods: methods) else {
            return finish(request, requestID, measured, .failure(APIError.originNotAllowed))
        }
        return finish(request, requestID, measured, .success(response))
    }

    /// A held view's route: the request's context, its metrics, and the route's rendering.
    /// It holds the context, one reference, rather than the request's fields.
    private final class HeldRoute: ViewRoute {
        private let responder: LookoutResponder
        private let context: RequestContext
        private let measured: Measured
        private let renderView: @Sendable (RequestContext, StoreSnapshot) throws -> RenderedView

        init(
            responder: LookoutResponder, context: RequestContext, measured: Measured,
            render: @escaping @Sendable (RequestContext, StoreSnapshot) throws -> RenderedView
        ) {
            self.responder = responder
            self.context = context
            self.measured = measured
            self.renderView = render
        }

        func render(_ snapshot: StoreSnapshot) throws -> RenderedView {
            try renderView(context, snapshot)
        }

        var identity: RenderIdentity {
            RenderIdentity(viewKey: context.viewKey, authorization: context.request.headers["Authorization"])
        }

        func finish(_ result: Result<HTTPResponse, any Error>) -> HTTPResponse {
            responder.finish(context.request, context.requestID, measured, result)
        }

        func counted(_ status: Int) {
            responder.counted(context, measured, status: status)
        }
    }

    /// Where a request's answer is counted, and when it arrived.
    private struct Measured {
        let metrics: RouteMetrics
        /// ``RouteMetrics/now()`` when the request arrived.
        let started: UInt64
    }

    /// The response for a handler's result, logged with the request id and counted.
    ///
    /// Called once per request, when its answer is made. At shutdown a held request may
    /// be counted with an answer that is not the one sent: a long-poll that a wake and
    /// the shutdown answer at the same moment counts twice, and a task's late answer
    /// counts instead of the 503 sent for it.
    private func finish(
        _ request: HTTPRequest,
        _ requestID: RequestID,
        _ measured: Measured,
        _ result: Result<HTTPResponse, any Error>
    ) -> HTTPResponse {
        let response = respond(request, requestID, result)
        measured.metrics.record(
            method: request.method, status: response.status, since: measured.started)
        return response
    }

    /// Logs and counts a successful answer made elsewhere: one response that many held
    /// polls share.
    ///
    /// Takes the context, not its request: passing `context.request` copied the whole
    /// request (a retain and a release of each of its parts) for every poll a fan-out
    /// answers, where only its method is read unless each request is logged.
    private func counted(_ context: RequestContext, _ measured: Measured, status: Int) {
        if logsEachRequest { logSuccess(context.request, context.requestID, status: status) }
        measured.metrics.record(method: context.request.method, status: status, since: measured.started)
    }

    private func logSuccess(_ request: HTTPRequest, _ requestID: RequestID, status: Int) {
        guard logsEachRequest else { return }
        logger.debug("\(request.method) \(request.target) \(status)", metadata: ["request-id": "\(requestID)"])
    }

    private func respond(
        _ request: HTTPRequest,
        _ requestID: RequestID,
        _ result: Result<HTTPResponse, any Error>
    ) -> HTTPResponse {
        // Metadata is built only when a line is logged: the log calls take autoclosures.
        switch result {
        case .success(let response):
            logSuccess(request, requestID, status: response.status)
            return response
        case .failure(let error):
            let apiError = Self.apiError(for: error)
            if apiError.code == APIError.storageUnavailableCode { metrics.recordStorageError() }
            if apiError.status >= 500 {
                logger.error(
                    "\(request.method) \(request.target) \(apiError.status): \(String(reflecting: error))",
                    metadata: ["request-id": "\(requestID)"])
            } else if logsEachRequest {
                logger.debug(
                    "\(request.method) \(request.target) \(apiError.status) \(apiError.code)",
                    metadata: ["request-id": "\(requestID)"])
            }
            return apiError.response(requestID: requestID.description)
        }
    }

    /// Maps any error to what the client sees; unknown errors become 500 `internal`.
    static func apiError(for error: any Error) -> APIError {
        switch error {
        case let error as APIError: error
        case let error as AuthError: APIError(error)
        case let error as StoreError: APIError(error)
        case let error as QueryError: APIError(error)
        case is PersistenceError: APIError(StoreError.storageFailed(String(describing: error)))
        default: .internalError
        }
    }
}
