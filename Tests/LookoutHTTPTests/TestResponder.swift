import Dispatch
import LookoutHTTP
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A responder for server tests: `/echo` describes the request and the thread that
/// answered it, `/hold` suspends it as a wait (shutdown ends it) and hands it to the test,
/// `/work` suspends it as work in progress (shutdown waits for the test to answer it),
/// `/injection` answers with a header containing CR LF, `/block` keeps the server thread
/// that runs it until the test opens `gate`, `/hold-owned` is `/hold` with a shutdown
/// answer that holds an object of `owners`.
struct TestResponder: HTTPResponder {
    let held = HeldRequests()
    let working = HeldRequests()
    let gate = Gate()
    let owners = Owners()

    func reply(to request: HTTPRequest) -> HTTPReply {
        if let refusal = request.refusal {
            return .response(HTTPResponse(status: refusal.status, body: Array(refusal.code.utf8)))
        }
        switch request.path {
        case "/echo":
            var headers = HTTPHeaders()
            headers.add("X-Method", request.method)
            headers.add("X-Target", request.target)
            headers.add("X-Client", request.clientAddress)
            headers.add("X-Body-Length", String(request.body.count))
            headers.add("X-Echo-Header", request.headers["X-Echo"] ?? "")
            // Which event-loop thread answered: the one holding the connection.
            headers.add("X-Thread", String(describing: pthread_self()))
            return .response(HTTPResponse(status: 200, headers: headers, body: request.body))
        case "/hold":
            let held = held
            return .wait(
                onShutdown: { HTTPResponse(status: 503, body: Array("shutting down".utf8)) },
                hold: { held.append($0) })
        case "/hold-owned":
            let held = held
            let owner = owners.make()
            return .wait(
                onShutdown: { HTTPResponse(status: 503, body: Array("shutting down: \(owner)".utf8)) },
                hold: { held.append($0) })
        case "/work":
            let working = working
            return .suspend(
                onShutdown: { HTTPResponse(status: 503, body: Array("not started".utf8)) },
                hold: { working.append($0) })
        case "/block":
            gate.enter()
            return .response(HTTPResponse(status: 200, body: Array("unblocked".utf8)))
        case "/injection":
            return .response(HTTPResponse(status: 200, headers: HTTPHeaders([("X-Bad", "a\r\nSet-Cookie: x=1")])))
        default:
            return .response(HTTPResponse(status: 404, headers: HTTPHeaders([("X-Target", request.target)])))
        }
    }
}

/// Requests the responder suspended, for the test to answer.
final class HeldRequests: Sendable {
    private let requests = Mutex<[SuspendedRequest]>([])

    func append(_ request: SuspendedRequest) {
        requests.withLock { $0.append(request) }
    }

    /// Waits until `count` requests are held, up to `timeout`.
    func wait(for count: Int, timeout: Duration = .seconds(10)) throws -> [SuspendedRequest] {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while clock.now < deadline {
            let current = requests.withLock { $0 }
            if current.count >= count { return current }
            usleep(1_000)
        }
        throw HeldRequestsTimeout(held: requests.withLock { $0.count }, wanted: count)
    }
}

/// Objects made for the test, kept weakly: how many are still alive.
final class Owners: Sendable {
    final class Owner: Sendable {}

    private struct Weak {
        weak var owner: Owner?
    }

    private let made = Mutex<[Weak]>([])

    func make() -> Owner {
        let owner = Owner()
        made.withLock { $0.append(Weak(owner: owner)) }
        return owner
    }

    var alive: Int {
        made.withLock { $0.filter { $0.owner != nil }.count }
    }
}

/// Blocks the threads that enter it until it is opened (or 10 s pass).
final class Gate: Sendable {
    private let entered = DispatchSemaphore(value: 0)
    private let opened = DispatchSemaphore(value: 0)

    func enter() {
        entered.signal()
        _ = opened.wait(timeout: .now() + 10)
    }

    /// Waits until a thread has entered.
    func waitUntilEntered() -> Bool {
        entered.wait(timeout: .now() + 10) == .success
    }

    func open() {
        opened.signal()
    }
}

struct HeldRequestsTimeout: Error {
    let held: Int
    let wanted: Int
}

/// Runs `body` against a started server on 127.0.0.1 (and ::1 when asked), port 0, and
/// always shuts it down.
func withServer<Result>(
    _ configure: (inout HTTPServerConfiguration) -> Void = { _ in },
    _ body: (HTTPServer, TestResponder) throws -> Result
) throws -> Result {
    var configuration = HTTPServerConfiguration(bindAddresses: ["127.0.0.1"], port: 0, threadCount: 2)
    configure(&configuration)
    let responder = TestResponder()
    let server = HTTPServer(configuration: configuration, responder: responder)
    try server.start()
    defer { server.shutdown(timeout: .seconds(5)) }
    return try body(server, responder)
}
