import Foundation
import LookoutApp
import LookoutJSON
import LookoutPersistence
import LookoutTestSupport
import Testing

/// What an attacker found (issue 16), each through a real server: a crash that survived
/// restarts, a denial of service before login, a forged subject, and header injection
/// through a query.
@Suite("Hostile input", .serialized, .timeLimit(.minutes(2)))
struct HostileInputTests {
    static let collections = """
        [{"name": "galleries", "public": true, "page_size": 2,
          "documents": [{"id": 1, "title": "a"}, {"id": 2, "title": "b"}, {"id": 3, "title": "c"}]}]
        """

    func withHostileApp(
        dataDirectory: String? = nil,
        _ body: (LiveApp) async throws -> Void
    ) async throws {
        let file = try ReadAccessTests.dataFile(Self.collections)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let app = try await LiveApp.start(dataDirectory: dataDirectory) { $0.dataFile = file }
        defer { app.close() }
        try await body(app)
    }

    @Test(
        "an id past 2^53 − 1 is refused; the highest id leaves creates without an id refused, not crashed, across a restart"
    )
    func idOverflow() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-ids-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await withHostileApp(dataDirectory: directory) { app in
            let editor = try await app.editorHeaders()
            let huge = try await app.request(
                "POST", "/v1/galleries", headers: editor, body: #"{"id":9223372036854775807,"title":"max"}"#)
            #expect(huge.status == 400)
            #expect(try huge.json["error"]?["code"] == "invalid_body")
            let highest = try await app.request(
                "POST", "/v1/galleries", headers: editor, body: #"{"id":9007199254740991,"title":"highest"}"#)
            #expect(highest.status == 201)
            let next = try await app.request("POST", "/v1/galleries", headers: editor, body: #"{"title":"next"}"#)
            #expect(next.status == 409)
            #expect(try await app.request("GET", "/v1/galleries/9007199254740991").status == 200)
        }
        try await withHostileApp(dataDirectory: directory) { app in
            let editor = try await app.editorHeaders()
            let next = try await app.request("POST", "/v1/galleries", headers: editor, body: #"{"title":"next"}"#)
            #expect(next.status == 409)
            #expect(try await app.request("GET", "/healthz").status == 200)
        }
    }

    @Test("a login body of 1 MiB of small keys is answered at once, before any password check")
    func manyKeysBeforeLogin() async throws {
        try await withHostileApp { app in
            var body = "{"
            var index = 0
            while body.utf8.count < 1_000_000 {
                body += "\"k\(index)\":0,"
                index += 1
            }
            body += #""email":"editor@example.com","password":"wrong"}"#
            for path in ["/v1/auth/login", "/v1/auth/verify", "/v1/watch"] {
                let response = try await app.request("POST", path, body: body)
                #expect([400, 401].contains(response.status), "\(path): \(response.status)")
            }
            #expect(try await app.request("GET", "/readyz").status == 200)
        }
    }

    @Test("an email with NUL or another control character is refused, not cut short into another user's")
    func controlCharactersInEmail() async throws {
        try await withHostileApp { app in
            for email in [#"editor@example.com\u0000evil"#, #"editor@example.com\u0001"#, #"edi\ttor@example.com"#] {
                let login = try await app.request(
                    "POST", "/v1/auth/login", body: #"{"email":"\#(email)","password":"editor-password"}"#)
                #expect(login.status == 400, "\(email)")
                #expect(try login.json["error"]?["code"] == "invalid_body")
                let token = try await app.request(
                    "POST", "/v1/auth/token", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                    body: "grant_type=password&username=editor%40example.com%00evil&password=editor-password")
                #expect(token.status == 400)
                #expect(try token.json["error"] == "invalid_request")
            }
            #expect(try await app.login("editor@example.com", "editor-password").isEmpty == false)
        }
    }

    @Test("every number a client gives is taken at its extremes with a clean answer")
    func extremeNumbers() async throws {
        try await withHostileApp { app in
            let big = [
                "9223372036854775807", "9223372036854775808", "-9223372036854775808", "18446744073709551615",
                "18446744073709551616", "1e308", "-1", "0", "nan", "inf", "0x10", "1.5",
            ]
            for value in big {
                for target in [
                    "/v1/galleries?page=\(value)", "/v1/galleries?page=\(value)&per_page=1000",
                    "/v1/galleries?per_page=\(value)", "/v1/galleries?limit=\(value)", "/v1/galleries/\(value)",
                    "/v1/galleries?id=\(value)", "/v1/galleries?id_gt=\(value)",
                    "/v1/galleries?wait=\(value)&since=x-1",
                    "/v1/galleries?wait=0.01&since=\(value)", "/v1/galleries?wait=0.01&since=e-\(value)",
                    "/v1/watch?read=galleries/\(value).title", "/v1/galleries?limit=1000&after=\(value)",
                ] {
                    let response = try await app.request("GET", target, headers: [("If-None-Match", "\"e-\(value)\"")])
                    #expect((200..<500).contains(response.status), "\(target): \(response.status)")
                }
            }
            let lastPage = try await app.request("GET", "/v1/galleries?page=9223372036854775807&per_page=1000")
            #expect(lastPage.status == 200)
            #expect(try lastPage.json == [])
            #expect(try await app.request("GET", "/healthz").status == 200)
        }
    }

    @Test("a crafted filter cannot add a relation to the Link header")
    func linkInjection() async throws {
        try await withHostileApp { app in
            let target = #"/v1/galleries?title_ne=x>;rel="evil",<http://evil.example/&limit=1"#
            for sent in [target, target.replacingOccurrences(of: "\"", with: "%22")] {
                let response = try await app.request("GET", sent)
                #expect(response.status == 200)
                let link = try #require(response.header("Link"))
                let relations = link.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                #expect(relations.count == 1, "\(link)")
                #expect(link.hasSuffix(#"; rel="next""#), "\(link)")
                #expect(!link.dropLast(#"; rel="next""#.count).contains("\""), "\(link)")
                #expect(link.filter { $0 == "<" }.count == 1 && link.filter { $0 == ">" }.count == 1, "\(link)")
                // Following it still filters the same way.
                let next = String(link.dropFirst().prefix { $0 != ">" })
                #expect(try await app.request("GET", next).status == 200)
            }
        }
    }

    @Test("a long query on a paged list gets a 414, never a dropped connection, at every length")
    func longPagedQueries() async throws {
        try await withHostileApp { app in
            var answered: [Int: Int] = [:]
            for length in stride(from: 0, through: 6_000, by: 250) {
                let filler = String(repeating: "x", count: length)
                let response = try await app.request("GET", "/v1/galleries?page=2&per_page=2&title_ne=\(filler)")
                answered[response.status, default: 0] += 1
                if response.status == 414 {
                    #expect(try response.json["error"]?["code"] == "query_too_long")
                } else {
                    #expect(response.status == 200, "length \(length): \(response.status)")
                    #expect((response.header("Link")?.utf8.count ?? 0) <= 1_024)
                }
            }
            #expect(answered[200, default: 0] > 0 && answered[414, default: 0] > 0, "\(answered)")
        }
    }

    @Test("an answer whose header fields outgrow the connection's memory is a JSON 500, not a dropped connection")
    func oversizedAnswerHeaders() async throws {
        try await withHostileApp { app in
            let editor = try await app.editorHeaders()
            // 120 fields with long names: a poll woken by a change to all of them names them
            // all in Lookout-Changed, some 6 KiB.
            let names = (0..<120).map { "a_rather_long_field_name_for_this_test_\($0)" }
            func document(_ value: Int) -> String {
                "{" + names.map { "\"\($0)\":\(value)" }.joined(separator: ",") + "}"
            }
            #expect(try await app.request("PUT", "/v1/galleries/3", headers: editor, body: document(1)).status == 200)
            let tag = try #require(try await app.request("GET", "/v1/galleries/3").header("ETag"))
            async let held = app.request("GET", "/v1/galleries/3?wait=30", headers: [("If-None-Match", tag)])
            try await app.waitUntilHeld(1)
            #expect(try await app.request("PUT", "/v1/galleries/3", headers: editor, body: document(2)).status == 200)
            let woken = try await held
            #expect(woken.status == 500)
            #expect(try woken.json["error"]?["code"] == "answer_too_large")
            #expect(try await app.request("GET", "/v1/galleries/3").status == 200, "the server still answers")
        }
    }

    @Test("a field name the client chose is percent-encoded in Lookout-Changed, never cut or split")
    func changedFieldNames() async throws {
        try await withHostileApp { app in
            let editor = try await app.editorHeaders()
            let name = #"a, b\u0000c\r\nX-Evil: 1 é%"#
            #expect(
                try await app.request("PATCH", "/v1/galleries/1", headers: editor, body: #"{"\#(name)":1}"#).status
                    == 200)
            let tag = try #require(try await app.request("GET", "/v1/galleries/1").header("ETag"))
            async let held = app.request("GET", "/v1/galleries/1?wait=30", headers: [("If-None-Match", tag)])
            try await app.waitUntilHeld(1)
            #expect(
                try await app.request("PATCH", "/v1/galleries/1", headers: editor, body: #"{"\#(name)":2}"#).status
                    == 200)
            let woken = try await held
            #expect(woken.status == 200)
            #expect(woken.header("Lookout-Changed") == "galleries/1.a%2C%20b%00c%0D%0AX-Evil:%201%20%C3%A9%25")
            #expect(woken.header("X-Evil") == nil)
        }
    }

    @Test(
        "If-Match as RFC 9110 §13.1.1 says: * matches an existing document, a weak tag never matches, any tag of a list may"
    )
    func ifMatch() async throws {
        try await withHostileApp { app in
            let editor = try await app.editorHeaders()
            let tag = try #require(try await app.request("GET", "/v1/galleries/1").header("ETag"))
            func patch(_ ifMatch: String, _ id: Int = 1) async throws -> Int {
                try await app.request(
                    "PATCH", "/v1/galleries/\(id)", headers: editor + [("If-Match", ifMatch)], body: #"{"n":\#(id)}"#
                ).status
            }
            #expect(try await patch("W/\(tag)") == 412)
            #expect(try await patch(#""nothing-1", W/\#(tag)"#) == 412)
            #expect(try await patch("*") == 200)
            let current = try #require(try await app.request("GET", "/v1/galleries/1").header("ETag"))
            #expect(try await patch(tag) == 412, "stale")
            #expect(try await patch(#""nothing-1", \#(current)"#) == 200)
            #expect(try await patch("*", 99) == 404)
        }
    }

    @Test("the database, its journal and a backup are readable by their owner only")
    func databaseMode() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-mode-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/lookout.sqlite"
        let database = try SQLitePersistence(path: path)
        try database.create(epoch: "e")
        for file in [path, path + "-wal", path + "-shm"] {
            #expect(try Self.mode(of: file) == 0o600, "\(file)")
        }
        try database.backup(to: directory + "/backup.sqlite")
        #expect(try Self.mode(of: directory + "/backup.sqlite") == 0o600)
        #expect(try database.record("users", key: "a\u{0}b") == nil)
        #expect(throws: PersistenceError.self) { try database.putRecord(["x": 1], kind: "users", key: "a\u{0}b") }

        // A database an earlier Lookout made readable by others is made private when opened.
        let older = directory + "/older.sqlite"
        try SQLitePersistence(path: older).create(epoch: "e")
        #expect(chmod(older, 0o644) == 0)
        _ = try SQLitePersistence(path: older)
        #expect(try Self.mode(of: older) == 0o600)
    }

    static func mode(of path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? Int ?? -1) & 0o777
    }
}
