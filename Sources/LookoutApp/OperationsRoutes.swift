import LookoutHTTP
import LookoutJSON

/// Routes for operators and orchestrators:
///
/// - `GET /healthz`: liveness; `{"status":"ok"}` whenever the process serves. No checks,
///   so a slow disk never gets a live process restarted.
/// - `GET /readyz`: readiness; runs every ``ReadinessCheck`` and answers 200
///   `{"status":"ready","checks":{"store":"ok",…}}`, or 503 with `"status":"not_ready"`
///   and each failing check's message in place of `ok`.
/// - `GET /metrics`: ``ServiceMetrics`` in the Prometheus text format.
struct OperationsRoutes: Sendable {
    let checks: [ReadinessCheck]
    let metrics: ServiceMetrics

    func register(in router: inout Router) {
        router.add("GET", "/healthz", .immediate(health))
        // A task, not a server thread: a check may wait on the disk (fsync).
        router.add("GET", "/readyz", .deferred(readiness))
        router.add("GET", "/metrics", .immediate(exposition))
    }

    func health(_ context: RequestContext) -> HTTPResponse {
        .json(["status": "ok"], requestID: context.echoedRequestID)
    }

    func readiness(_ context: RequestContext) async -> HTTPResponse {
        var results = JSONObject()
        var ready = true
        for check in checks {
            switch check.run() {
            case .ok:
                results[check.name] = "ok"
            case .failing(let message):
                results[check.name] = .string(message)
                ready = false
            }
        }
        let body: JSONValue = ["status": ready ? "ready" : "not_ready", "checks": .object(results)]
        return .json(body, status: ready ? 200 : 503, requestID: context.echoedRequestID)
    }

    func exposition(_ context: RequestContext) -> HTTPResponse {
        var response = HTTPResponse(
            status: 200, headers: HTTPHeaders([("Content-Type", ServiceMetrics.contentType)]),
            body: metrics.exposition())
        response.headers.addRequestID(context.echoedRequestID)
        return response
    }
}
