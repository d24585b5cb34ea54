import Logging
import LookoutAuth
import LookoutHTTP
import LookoutStore

/// The service's one ``HTTPResponder``: gives each request an id, routes it, runs its
/// handler, and turns every error into the one JSON error shape. Errors are caught here
/// and nowhere else.
struct LookoutResponder: HTTPResponder {
    let router: Router
    let longPoll: LongPoll
    let maxBodyBytes: Int
    let logger: Logger
    let requestIDs = RequestIDGenerator()

    func reply(to request: HTTPRequest) -> HTTPReply {
        let requestID = requestIDs.next(clientProvided: request.headers["X-Request-Id"])
        if request.bodyTooLarge {
            return .response(finish(request, requestID, .failure(APIError.payloadTooLarge(limit: maxBodyBytes))))
        }
        switch router.match(method: request.method, path: request.path) {
        case .notFound:
            return .response(finish(request, requestID, .failure(APIError.notFound)))
        case .methodNotAllowed(let allowed):
            return .response(finish(request, requestID, .failure(APIError.methodNotAllowed(allowed))))
        case .found(let handler, let parameters):
            let context = RequestContext(
                request: request, requestID: requestID, pathParameters: parameters,
                query: QueryParameters(request.rawQuery))
            switch handler {
            case .immediate(let handle):
                return .response(finish(request, requestID, Result { try handle(context) }))
            case .view(let render):
                return longPoll.reply(
                    to: context, render: { try render(context, $0) },
                    finish: { finish(request, requestID, $0) })
            case .deferred(let handle):
                return .suspend(
                    onShutdown: { APIError.shuttingDown.response(requestID: requestID) },
                    hold: { held in
                        Task {
                            let result: Result<HTTPResponse, any Error>
                            do {
                                result = .success(try await handle(context))
                            } catch {
                                result = .failure(error)
                            }
                            held.respond(finish(request, requestID, result))
                        }
                    })
            }
        }
    }

    /// The response for a handler's result, logged with the request id.
    private func finish(
        _ request: HTTPRequest,
        _ requestID: String,
        _ result: Result<HTTPResponse, any Error>
    ) -> HTTPResponse {
        // Metadata is built only when a line is logged: the log calls take autoclosures.
        switch result {
        case .success(let response):
            logger.debug(
                "\(request.method) \(request.target) \(response.status)", metadata: ["request-id": "\(requestID)"])
            return response
        case .failure(let error):
            let apiError = Self.apiError(for: error)
            if apiError.status >= 500 {
                logger.error(
                    "\(request.method) \(request.target) \(apiError.status): \(String(reflecting: error))",
                    metadata: ["request-id": "\(requestID)"])
            } else {
                logger.debug(
                    "\(request.method) \(request.target) \(apiError.status) \(apiError.code)",
                    metadata: ["request-id": "\(requestID)"])
            }
            return apiError.response(requestID: requestID)
        }
    }

    /// Maps any error to what the client sees; unknown errors become 500 `internal`.
    static func apiError(for error: any Error) -> APIError {
        switch error {
        case let error as APIError: error
        case let error as AuthError: APIError(error)
        case let error as StoreError: APIError(error)
        default: .internalError
        }
    }
}
