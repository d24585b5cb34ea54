import Logging
import Synchronization
import Testing

/// The line each request gets at debug level, with its request id: logged only when the
/// logger takes debug lines, which the responder asks once (its level is fixed).
@Suite("Request log lines", .timeLimit(.minutes(2)))
struct RequestLogTests {
    @Test("at debug level every request, a repeated GET and a refused one included, logs a line with its id")
    func debugLines() async throws {
        let lines = CapturedLines()
        try await withApp(logger: lines.logger(level: .debug)) { app in
            for _ in 0..<4 {
                let read = try await app.request("GET", "/v1/galleries/1", headers: [("X-Request-Id", "read-1")])
                #expect(read.status == 200)
            }
            let missing = try await app.request("GET", "/v1/nothing-here")
            #expect(missing.status == 404)
        }
        let read = lines.all.filter { $0.message == "GET /v1/galleries/1 200" }
        #expect(read.count == 4, "a repeated GET takes the full path, and logs, at debug level")
        #expect(read.allSatisfy { $0.requestID == "read-1" })
        #expect(lines.all.contains { $0.message == "GET /v1/nothing-here 404 not_found" })
    }

    @Test("above debug level requests log nothing")
    func quietAboveDebug() async throws {
        let lines = CapturedLines()
        try await withApp(logger: lines.logger(level: .info)) { app in
            let read = try await app.request("GET", "/v1/galleries/1")
            #expect(read.status == 200)
            let missing = try await app.request("GET", "/v1/nothing-here")
            #expect(missing.status == 404)
        }
        #expect(!lines.all.contains { $0.message.hasPrefix("GET ") })
    }
}

/// The lines a logger took, in order.
final class CapturedLines: Sendable {
    struct Line: Sendable {
        let message: String
        let requestID: String?
    }

    private let lines = Mutex<[Line]>([])

    var all: [Line] { lines.withLock { $0 } }

    func logger(level: Logger.Level) -> Logger {
        var logger = Logger(label: "lookout-test") { _ in Handler(lines: self) }
        logger.logLevel = level
        return logger
    }

    private struct Handler: LogHandler {
        let lines: CapturedLines
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]
        var metadataProvider: Logger.MetadataProvider?

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let line = Line(message: event.message.description, requestID: event.metadata?["request-id"]?.description)
            lines.lines.withLock { $0.append(line) }
        }
    }
}
