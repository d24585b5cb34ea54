import Foundation
import Logging
import LookoutApp
import LookoutHTTP
import LookoutJSON
import LookoutTestSupport

/// A real Lookout on 127.0.0.1 and ::1, port 0, with its own data directory, talked to
/// over real sockets.
final class LiveApp: Sendable {
    let application: Application
    let clock: ManualWallClock
    let dataDirectory: String
    /// Whether ``start(dataDirectory:clock:logger:configure:)`` made the data directory
    /// (none was passed), so that ``close()`` removes it.
    let ownsDataDirectory: Bool
    var port: Int { application.port }

    private init(application: Application, clock: ManualWallClock, dataDirectory: String, ownsDataDirectory: Bool) {
        self.application = application
        self.clock = clock
        self.dataDirectory = dataDirectory
        self.ownsDataDirectory = ownsDataDirectory
    }

    /// Starts an app on `dataDirectory`, or on a new one under the temporary directory.
    /// If it fails to start, a directory it made is removed; one that was there is kept.
    static func start(
        dataDirectory: String? = nil,
        clock: ManualWallClock = ManualWallClock(),
        logger: Logger = Logger(label: "lookout"),
        configure: (inout AppConfiguration) -> Void = { _ in }
    ) async throws -> LiveApp {
        let directory =
            dataDirectory
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("lookout-test-\(UUID())").path
        let existed = FileManager.default.fileExists(atPath: directory)
        var configuration = AppConfiguration(
            http: HTTPServerConfiguration(bindAddresses: ["127.0.0.1", "::1"], port: 0), dataDirectory: directory)
        configure(&configuration)
        do {
            let application = try await buildApplication(
                configuration: configuration, logger: logger, now: { clock.now() })
            try application.start()
            return LiveApp(
                application: application, clock: clock, dataDirectory: directory,
                ownsDataDirectory: dataDirectory == nil)
        } catch {
            if !existed { try? FileManager.default.removeItem(atPath: directory) }
            throw error
        }
    }

    func shutdown() {
        application.shutdown()
    }

    /// Shuts the app down and removes its data directory if ``start(dataDirectory:clock:logger:configure:)``
    /// made it; a directory passed to it is the caller's to remove.
    func close() {
        shutdown()
        if ownsDataDirectory { try? FileManager.default.removeItem(atPath: dataDirectory) }
    }

    /// One request on its own connection, as the iOS app sends it: `Content-Type:
    /// application/json` on every request, GETs included.
    func request(
        _ method: String,
        _ target: String,
        headers: [(String, String)] = [("Content-Type", "application/json")],
        body: String? = nil,
        host: String = "127.0.0.1"
    ) async throws -> TestHTTPResponse {
        let port = port
        return try await offPool {
            try TestHTTP.request(
                host: host, port: port, method, target, headers: headers, body: body.map { Array($0.utf8) })
        }
    }

    /// Waits until the app holds `count` requests (long-polls, logins), and records an
    /// issue if it never does (``waitUntil(every:failure:_:)``): a test that went on would
    /// check a wake that was never held.
    func waitUntilHeld(_ count: Int) async throws {
        try await waitUntil(
            every: .milliseconds(10),
            failure: "the app held \(self.application.heldRequests) requests, not \(count), after 60 s"
        ) { application.heldRequests >= count }
    }

    /// Headers for a write: JSON, and the demo editor's token.
    func editorHeaders() async throws -> [(String, String)] {
        [
            ("Content-Type", "application/json"),
            ("Authorization", "Bearer \(try await login("editor@example.com", "editor-password"))"),
        ]
    }

    func login(_ email: String = "demo@example.com", _ password: String = "demo-password") async throws -> String {
        let response = try await request(
            "POST", "/v1/auth/login", body: #"{"email":"\#(email)","password":"\#(password)"}"#)
        guard response.status == 200, let token = try JSONParser.parse(response.body)["token"]?.stringValue else {
            throw LoginFailed(status: response.status)
        }
        return token
    }
}

struct LoginFailed: Error {
    let status: Int
}

/// Runs `body` against a fresh app and always shuts it down and removes its data directory.
func withApp(
    clock: ManualWallClock = ManualWallClock(),
    logger: Logger = Logger(label: "lookout"),
    configure: (inout AppConfiguration) -> Void = { _ in },
    _ body: (LiveApp) async throws -> Void
) async throws {
    let app = try await LiveApp.start(clock: clock, logger: logger, configure: configure)
    defer { app.close() }
    try await body(app)
}

extension TestHTTPResponse {
    var json: JSONValue {
        get throws { try JSONParser.parse(body) }
    }
}

/// The demo data file, read from the source tree, to compare answers against.
enum DemoData {
    static let url = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/LookoutApp/Resources/demo-data.json")

    static func documents(_ collection: String) throws -> [JSONValue] {
        let root = try JSONParser.parse(Array(try Data(contentsOf: url)))
        let declaration = root["collections"]?.arrayValue?.first { $0["name"]?.stringValue == collection }
        return declaration?["documents"]?.arrayValue ?? []
    }
}
