import Foundation
import LookoutApp
import LookoutAuth
import LookoutJSON
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
