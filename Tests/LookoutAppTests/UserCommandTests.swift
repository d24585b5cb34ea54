import Foundation
import LookoutApp
import LookoutAuth
import LookoutJSON
import LookoutTestSupport
import Testing

/// `lookout user add|list|remove|passwd` against the database of a running server.
@Suite("Users managed while the server runs", .timeLimit(.minutes(2)))
struct UserCommandTests {
    func login(_ app: LiveApp, _ email: String, _ password: String) async throws -> Int {
        let body = String(
            decoding: JSONWriter.encode(["email": .string(email), "password": .string(password)]), as: UTF8.self)
        return try await app.request("POST", "/v1/auth/login", body: body).status
    }

    @Test("a user added, given a new password or removed counts at the next login, without a restart")
    func liveChanges() async throws {
        try await withApp { app in
            let configuration = AppConfiguration(dataDirectory: app.dataDirectory)
            #expect(try await login(app, "new@example.com", "pässwörd 秘密") == 401)
            try UserCommands.add("New@Example.com", role: .editor, password: "pässwörd 秘密", in: configuration)
            #expect(try await login(app, "new@example.com", "pässwörd 秘密") == 200, "a non-ASCII password works")
            #expect(throws: StartupError.self) {
                try UserCommands.add("new@example.com", role: .reader, password: "x", in: configuration)
            }
            try UserCommands.passwd("new@example.com", password: "another one", in: configuration)
            #expect(try await login(app, "new@example.com", "pässwörd 秘密") == 401)
            #expect(try await login(app, "new@example.com", "another one") == 200)
            let listed = try UserCommands.list(in: configuration)
            #expect(listed.map(\.email) == ["demo@example.com", "editor@example.com", "new@example.com"])
            #expect(listed.last?.role == .editor)
            try UserCommands.remove("new@example.com", in: configuration)
            #expect(try await login(app, "new@example.com", "another one") == 401)
            #expect(throws: StartupError.self) { try UserCommands.remove("new@example.com", in: configuration) }
            #expect(throws: StartupError.self) {
                try UserCommands.add("x@example.com", role: .reader, password: "", in: configuration)
            }
        }
    }
}

/// Throttling through the server: logins from 127.0.0.1 and from ::1 are two addresses.
@Suite("Login throttling through the server", .timeLimit(.minutes(2)))
struct LoginThrottleHTTPTests {
    func login(_ app: LiveApp, _ email: String, _ password: String, from host: String = "127.0.0.1") async throws
        -> TestHTTPResponse
    {
        try await app.request(
            "POST", "/v1/auth/login", body: #"{"email":"\#(email)","password":"\#(password)"}"#, host: host)
    }

    @Test("repeated failures lock the account and the address with 429 and Retry-After; others are not slowed")
    func lockout() async throws {
        let clock = ManualWallClock()
        // The demo users at the lowest scrypt cost: the throttle does not depend on it, and ten
        // full-cost checks at once beside other suites' logins could outlast the socket timeout.
        let file = try ReadAccessTests.dataFile("[]")
        defer { try? FileManager.default.removeItem(atPath: file) }
        try await withApp(clock: clock, configure: { $0.dataFile = file }) { app in
            // Ten wrong passwords at once: the later ones are held up to 4 s, none refused yet.
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<LoginThrottle.lockoutFailures {
                    group.addTask { try await login(app, "demo@example.com", "wrong").status }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.allSatisfy { $0 == 401 }, "\(statuses)")
            let locked = try await login(app, "demo@example.com", "demo-password", from: "::1")
            #expect(locked.status == 429, "the account is locked from any address")
            #expect(try locked.json["error"]?["code"] == "too_many_attempts")
            #expect(locked.header("Retry-After") == "30")
            #expect(try await login(app, "editor@example.com", "editor-password").status == 429, "so is the address")
            let started = ContinuousClock.now
            #expect(try await login(app, "editor@example.com", "editor-password", from: "::1").status == 200)
            #expect(ContinuousClock.now - started < .seconds(3), "another account from another address is not slowed")
            clock.advance(seconds: 31)
            #expect(try await login(app, "demo@example.com", "demo-password", from: "::1").status == 200)
        }
    }
}
