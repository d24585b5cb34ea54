import Foundation
import LookoutApp
import LookoutAuth
import LookoutJSON
import LookoutTestSupport
import Testing

/// Who may read what (issue 6): public fields to anyone, everything to a token holder,
/// through a real server.
///
/// Most tests log in, so the demo users are served with cheap password hashes and the
/// tests run one at a time: logins at full scrypt cost from many tests at once on two
/// cores would slow the other suites' logins past their timeouts.
@Suite("Who may read what", .serialized, .timeLimit(.minutes(2)))
struct ReadAccessTests {
    static let json = ("Content-Type", "application/json")

    /// - `shops`: partly public (`name`, `city`, `owner_id`, `partner_id`), sorted by name;
    ///   `secret` and `address` are for token holders.
    /// - `owners`: partly public (`name`); `phone` is not.
    /// - `partners`: nothing public.
    /// - `open`: `"public": true`.
    static let collections = """
        [
          {"name": "shops", "public": ["name", "city", "owner_id", "partner_id"], "sort": ["name"],
           "references": {"owner_id": "owners", "partner_id": "partners"},
           "documents": [
             {"id": 1, "name": "Alpha", "city": "Tokyo", "secret": "s1", "address": {"zip": "100"}, "owner_id": 1, "partner_id": 1},
             {"id": 2, "name": "Beta", "city": "Kyoto", "secret": "from tokyo", "address": {"zip": "200"}, "owner_id": 2, "partner_id": 2},
             {"id": 3, "name": "Gamma", "city": "Osaka", "secret": "s3", "owner_id": 1, "partner_id": 1}
           ]},
          {"name": "owners", "public": ["name"], "documents": [{"id": 1, "name": "Ann", "phone": "123"}, {"id": 2, "name": "Bo", "phone": "456"}]},
          {"name": "partners", "documents": [{"id": 1, "name": "P1"}, {"id": 2, "name": "P2"}]},
          {"name": "open", "public": true, "documents": [{"id": 1, "a": 1, "b": 2}]}
        ]
        """

    /// The demo users and passwords, hashed at the lowest scrypt cost.
    static func users() throws -> String {
        let users: [JSONValue] = try [
            ("demo@example.com", "demo-password", "reader"), ("editor@example.com", "editor-password", "editor"),
        ].map { email, password, role in
            let hash = try PasswordHash.make(password: password, logRounds: 1)
            return ["email": .string(email), "role": .string(role), "password_hash": .string(hash.description)]
        }
        return String(decoding: JSONWriter.encode(.array(users)), as: UTF8.self)
    }

    /// Writes a data file of `collections` with the demo users and returns its path.
    static func dataFile(_ collections: String = collections) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-access-\(UUID()).json").path
        try Data(#"{"collections": \#(collections), "users": \#(try users())}"#.utf8).write(
            to: URL(fileURLWithPath: path))
        return path
    }

    /// Runs `body` against an app serving `collections`.
    func withAccessApp(
        _ collections: String = collections,
        clock: ManualWallClock = ManualWallClock(),
        _ body: (LiveApp) async throws -> Void
    ) async throws {
        let file = try Self.dataFile(collections)
        defer { try? FileManager.default.removeItem(atPath: file) }
        try await withApp(clock: clock, configure: { $0.dataFile = file }, body)
    }

    func bearer(_ token: String) -> [(String, String)] {
        [Self.json, ("Authorization", "Bearer \(token)")]
    }

    /// Expects a 401 `token_required` whose message names `field`, with the challenge.
    func expectTokenRequired(_ response: TestHTTPResponse, naming field: String, _ comment: String) throws {
        #expect(response.status == 401, "\(comment)")
        #expect(try response.json["error"]?["code"] == "token_required", "\(comment)")
        let message = try response.json["error"]?["message"]?.stringValue ?? ""
        #expect(message.contains("'\(field)'") || message.contains(field), "\(comment): \(message)")
        #expect(response.header("WWW-Authenticate")?.hasPrefix("Bearer") == true, "\(comment)")
    }

    // MARK: - Declaration

    @Test(
        "\"public\" other than true, false or a list of names, or a declared sort on a private field, stops start-up",
        arguments: [
            (#"[{"name": "c", "public": "yes", "documents": []}]"#, "c.public"),
            (#"[{"name": "c", "public": 1, "documents": []}]"#, "c.public"),
            (#"[{"name": "c", "public": [1], "documents": []}]"#, "c.public"),
            (#"[{"name": "c", "public": ["a"], "sort": ["-b"], "documents": []}]"#, #"collection "c": sort key "-b""#),
        ])
    func badDeclarations(_ collections: String, _ fragment: String) async throws {
        let file = try Self.dataFile(collections)
        defer { try? FileManager.default.removeItem(atPath: file) }
        do {
            let app = try await LiveApp.start(configure: { $0.dataFile = file })
            app.close()
            Issue.record("started with \(collections)")
        } catch let error as StartupError {
            #expect(error.description.contains(fragment), "\(error)")
        }
    }

    @Test("true, false, a list, and a sort on a public field (or in a collection with nothing public) all start")
    func goodDeclarations() async throws {
        let collections = #"""
            [{"name": "a", "public": true, "sort": ["x"], "documents": [{"id": 1, "x": 1}]},
             {"name": "b", "public": false, "sort": ["x"], "documents": [{"id": 1, "x": 1}]},
             {"name": "c", "public": ["x"], "sort": ["-x", "id"], "documents": [{"id": 1, "x": 1, "y": 2}]},
             {"name": "d", "sort": ["x"], "documents": [{"id": 1, "x": 1}]}]
            """#
        try await withAccessApp(collections) { app in
            let answers = try await [app.request("GET", "/v1/a/1"), app.request("GET", "/v1/c/1")]
            #expect(try answers.map { try $0.json } == [["id": 1, "x": 1], ["id": 1, "x": 1]])
            let refused = try await [app.request("GET", "/v1/b/1"), app.request("GET", "/v1/d/1")]
            #expect(refused.map(\.status) == [401, 401], "false, or absent, means nothing public")
        }
    }

    @Test("a stored collection no longer declared has nothing public")
    func undeclaredIsPrivate() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-access-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let declared = try Self.dataFile(#"[{"name": "notes", "public": true, "documents": [{"id": 1, "t": "x"}]}]"#)
        defer { try? FileManager.default.removeItem(atPath: declared) }
        let without = try Self.dataFile(#"[]"#)
        defer { try? FileManager.default.removeItem(atPath: without) }
        let first = try await LiveApp.start(dataDirectory: directory) { $0.dataFile = declared }
        #expect(try await first.request("GET", "/v1/notes/1").status == 200)
        first.shutdown()
        let second = try await LiveApp.start(dataDirectory: directory) { $0.dataFile = without }
        defer { second.shutdown() }
        try expectTokenRequired(try await second.request("GET", "/v1/notes/1"), naming: "notes", "undeclared")
        let token = try await second.login()
        #expect(try await second.request("GET", "/v1/notes/1", headers: bearer(token)).json == ["id": 1, "t": "x"])
    }

    // MARK: - Polls woken together

    @Test(
        "polls one write wakes share an answer only where it is the same: grant, view, changed keys and own request id")
    func sharedWakeAnswers() async throws {
        try await withAccessApp { app in
            let token = try await app.login()
            let editor = try await app.editorHeaders()
            let anonymousTag = try #require(try await app.request("GET", "/v1/shops/1").header("ETag"))
            let holderTag = try #require(
                try await app.request("GET", "/v1/shops/1", headers: bearer(token)).header("ETag"))
            let listPath = "/v1/shops?city=Tokyo"
            let earlyListTag = try #require(try await app.request("GET", listPath).header("ETag"))

            // Woken by a change its rendering does not show: held again, remembering it.
            async let earlyList = app.request("GET", listPath + "&wait=30", headers: [("If-None-Match", earlyListTag)])
            try await app.waitUntilHeld(1)
            let moved = try await app.request("PATCH", "/v1/shops/2", headers: editor, body: #"{"city":"Nara"}"#)
            #expect(moved.status == 200)
            let listTag = try #require(try await app.request("GET", listPath).header("ETag"))

            typealias Poll = (name: String, path: String, headers: [(String, String)])
            let anonymous = [("If-None-Match", anonymousTag)]
            let holder = bearer(token) + [("If-None-Match", holderTag)]
            var polls: [Poll] = []
            for _ in 0..<3 { polls.append(("anonymous", "/v1/shops/1", anonymous)) }
            for _ in 0..<3 { polls.append(("holder", "/v1/shops/1", holder)) }
            for id in ["poll-a", "poll-b"] { polls.append((id, "/v1/shops/1", anonymous + [("X-Request-Id", id)])) }
            for _ in 0..<2 { polls.append(("projection", "/v1/shops/1?fields=name", anonymous)) }
            for _ in 0..<2 { polls.append(("list", listPath, [("If-None-Match", listTag)])) }
            try await withThrowingTaskGroup(of: (String, TestHTTPResponse).self) { group in
                for poll in polls {
                    let separator = poll.path.contains("?") ? "&" : "?"
                    group.addTask {
                        (
                            poll.name,
                            try await app.request("GET", poll.path + separator + "wait=30", headers: poll.headers)
                        )
                    }
                }
                try await app.waitUntilHeld(polls.count + 1)
                let write = try await app.request("PATCH", "/v1/shops/1", headers: editor, body: #"{"name":"Aleph"}"#)
                #expect(write.status == 200)
                let public1: JSONValue = ["id": 1, "name": "Aleph", "city": "Tokyo", "owner_id": 1, "partner_id": 1]
                var answered: [String: Int] = [:]
                for try await (name, response) in group {
                    answered[name, default: 0] += 1
                    #expect(response.status == 200, "\(name)")
                    let json = try response.json
                    switch name {
                    case "anonymous", "poll-a", "poll-b":
                        #expect(json == public1, "\(name)")
                        #expect(response.header("Vary") == "Authorization", "\(name)")
                        #expect(response.header("Cache-Control") == nil, "\(name)")
                        #expect(response.header("X-Request-Id") == (name == "anonymous" ? nil : name))
                        #expect(response.header("Lookout-Changed") == "shops/1.name", "\(name)")
                    case "holder":
                        #expect(json["secret"] == "s1")
                        #expect(json["name"] == "Aleph")
                        #expect(response.header("Cache-Control") == "private")
                    case "projection":
                        #expect(json == ["id": 1, "name": "Aleph"])
                    default:
                        #expect(try json.arrayValue?.map { $0["name"] } == ["Aleph"])
                        #expect(response.header("Lookout-Changed") == "shops/1.name")
                    }
                }
                #expect(
                    answered == ["anonymous": 3, "holder": 3, "poll-a": 1, "poll-b": 1, "projection": 2, "list": 2])
            }
            let early = try await earlyList
            #expect(early.status == 200)
            #expect(early.header("Lookout-Changed") == "shops/2.city, shops/1.name")
            #expect(try early.json.arrayValue?.map { $0["name"] } == ["Aleph"])
        }
    }

    @Test("X-Request-Id: a client's own is echoed on every answer; a server-made one is on errors only")
    func requestIDs() async throws {
        try await withAccessApp { app in
            let plain = try await app.request("GET", "/v1/open/1")
            #expect(plain.status == 200)
            #expect(plain.header("X-Request-Id") == nil)
            let echoed = try await app.request("GET", "/v1/open/1", headers: [("X-Request-Id", "mine-1")])
            #expect(echoed.header("X-Request-Id") == "mine-1")
            let refused = try await app.request("GET", "/v1/partners/1")
            #expect(refused.status == 401)
            let made = try #require(refused.header("X-Request-Id"))
            #expect(try refused.json["error"]?["requestId"]?.stringValue == made)
        }
    }

    // MARK: - Anonymous reads

    @Test("without a token a document or a list shows its public fields; with any valid token, every field")
    func publicView() async throws {
        try await withAccessApp { app in
            let anonymous = try await app.request("GET", "/v1/shops/1")
            #expect(anonymous.status == 200)
            #expect(try anonymous.json == ["id": 1, "name": "Alpha", "city": "Tokyo", "owner_id": 1, "partner_id": 1])
            let list = try #require(try await app.request("GET", "/v1/shops").json.arrayValue)
            #expect(list.map { $0["id"] } == [1, 2, 3])
            #expect(list.allSatisfy { $0["secret"] == nil && $0["address"] == nil })

            let reader = bearer(try await app.login())
            let full = try await app.request("GET", "/v1/shops/1", headers: reader)
            #expect(try full.json["secret"] == "s1")
            #expect(try full.json["address"]?["zip"] == "100")
            let fullList = try #require(try await app.request("GET", "/v1/shops", headers: reader).json.arrayValue)
            #expect(fullList.map { $0["secret"] } == ["s1", "from tokyo", "s3"])
            #expect(try await app.request("GET", "/v1/open/1").json == ["id": 1, "a": 1, "b": 2])
        }
    }

    @Test("without a token, naming a private field in fields, a filter or sort is 401 token_required naming it")
    func privateParameters() async throws {
        let cases = [
            ("fields=name,secret", "secret"), ("secret=s1", "secret"), ("secret_ne=s1", "secret"),
            ("secret_gt=a", "secret"), ("secret_like=s", "secret"), ("address.zip=100", "address"),
            ("address.zip_ne=100", "address"), ("sort=secret", "secret"), ("sort=name,-secret", "secret"),
            ("nothing=1", "nothing"), ("expand=owner_id&fields=name,secret", "secret"),
        ]
        try await withAccessApp { app in
            let reader = bearer(try await app.login())
            for (query, field) in cases {
                try expectTokenRequired(try await app.request("GET", "/v1/shops?\(query)"), naming: field, query)
                if query.hasPrefix("fields") || query.hasPrefix("expand") {
                    try expectTokenRequired(try await app.request("GET", "/v1/shops/1?\(query)"), naming: field, query)
                }
                let list = try await app.request("GET", "/v1/shops?\(query)", headers: reader)
                // With a token the parameter is read as always: fine, or 400 for a field no document has.
                #expect(list.status == (field == "nothing" ? 400 : 200), "\(query) with a token")
            }
        }
    }

    @Test("without a token, public fields filter, sort and project as always")
    func publicParameters() async throws {
        try await withAccessApp { app in
            let ids = { (query: String) in
                try await app.request("GET", "/v1/shops?\(query)").json.arrayValue?.compactMap { $0["id"]?.intValue }
            }
            #expect(try await ids("city=Tokyo") == [1])
            #expect(try await ids("city_ne=Tokyo&sort=-name") == [3, 2])
            #expect(try await ids("name_like=^g") == [3])
            #expect(try await ids("id_gte=2") == [2, 3])
            #expect(try await app.request("GET", "/v1/shops/2?fields=city").json == ["id": 2, "city": "Kyoto"])
            let unknown = try await app.request("GET", "/v1/shops?fields=city&sort=colour")
            #expect(unknown.status == 401, "an unknown field may be a private one: the answer does not tell")
        }
    }

    @Test("q searches only the public fields without a token, every field with one")
    func search() async throws {
        try await withAccessApp { app in
            let anonymous = try await app.request("GET", "/v1/shops?q=tokyo").json.arrayValue
            #expect(anonymous?.compactMap { $0["id"]?.intValue } == [1], "shop 2's secret says tokyo")
            let reader = bearer(try await app.login())
            let full = try await app.request("GET", "/v1/shops?q=tokyo", headers: reader).json.arrayValue
            #expect(full?.compactMap { $0["id"]?.intValue } == [1, 2])
        }
    }

    @Test("expand shows the referenced document's own public fields; none public is 401")
    func expand() async throws {
        try await withAccessApp { app in
            let anonymous = try await app.request("GET", "/v1/shops/1?expand=owner_id")
            #expect(try anonymous.json["owner"] == ["id": 1, "name": "Ann"])
            let list = try #require(try await app.request("GET", "/v1/shops?expand=owner_id").json.arrayValue)
            #expect(list.allSatisfy { $0["owner"]?["phone"] == nil && $0["owner"]?["name"] != nil })
            try expectTokenRequired(
                try await app.request("GET", "/v1/shops/1?expand=partner_id"), naming: "partners", "expand partner")

            let reader = bearer(try await app.login())
            let full = try await app.request("GET", "/v1/shops/1?expand=owner_id,partner_id", headers: reader)
            #expect(try full.json["owner"] == ["id": 1, "name": "Ann", "phone": "123"])
            #expect(try full.json["partner"] == ["id": 1, "name": "P1"])
        }
    }

    @Test("a collection with no public fields is 401 token_required without a token, 200 with one")
    func nothingPublic() async throws {
        try await withAccessApp { app in
            for target in ["/v1/partners", "/v1/partners/1", "/v1/partners?fields=name"] {
                try expectTokenRequired(try await app.request("GET", target), naming: "partners", target)
            }
            let reader = bearer(try await app.login())
            #expect(try await app.request("GET", "/v1/partners/1", headers: reader).json == ["id": 1, "name": "P1"])
            #expect(try await app.request("GET", "/v1/partners", headers: reader).json.arrayValue?.count == 2)
        }
    }

    // MARK: - Tokens that do not verify

    @Test("a token that fails is anonymous on a \"public\": true collection, else 401 with the token's error")
    func refusedTokens() async throws {
        let clock = ManualWallClock()
        try await withAccessApp(clock: clock) { app in
            let token = try await app.login()
            clock.advance(seconds: 3601)
            let cases: [(authorization: String, code: String)] = [
                ("Bearer \(token)", "token_expired"), ("Bearer junk", "invalid_token"),
                ("Basic ZGVtbzpkZW1v", "invalid_token"),
            ]
            for (authorization, code) in cases {
                let headers = [Self.json, ("Authorization", authorization)]
                let open = try await app.request("GET", "/v1/open/1", headers: headers)
                #expect(open.status == 200, "\(code) on a public collection")
                #expect(try open.json == ["id": 1, "a": 1, "b": 2])
                for target in ["/v1/shops/1", "/v1/shops?fields=name", "/v1/partners"] {
                    let refused = try await app.request("GET", target, headers: headers)
                    #expect(refused.status == 401, "\(authorization.prefix(12)) on \(target)")
                    #expect(try refused.json["error"]?["code"] == .string(code), "\(target)")
                    #expect(refused.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
                }
            }
        }
    }

    @Test("a revoked token is refused on a collection that is not public as a whole")
    func revokedToken() async throws {
        try await withAccessApp { app in
            let token = try await app.login()
            #expect(try await app.request("GET", "/v1/shops/1", headers: bearer(token)).json["secret"] == "s1")
            #expect(try await app.form("/v1/auth/revoke", ["token": token]).status == 200)
            let refused = try await app.request("GET", "/v1/shops/1", headers: bearer(token))
            #expect(refused.status == 401)
            #expect(try refused.json["error"]?["code"] == "token_revoked")
            #expect(try await app.request("GET", "/v1/open/1", headers: bearer(token)).status == 200)
        }
    }

    // MARK: - Watch

    @Test("the multi-read watch follows the same rules per read")
    func watch() async throws {
        try await withAccessApp { app in
            let anonymous = try await app.request("GET", "/v1/watch?read=shops/1.name,shops/2,open/1.b")
            #expect(anonymous.status == 200)
            #expect(try anonymous.json["values"]?["shops/1.name"] == "Alpha")
            #expect(
                try anonymous.json["values"]?["shops/2"]
                    == ["id": 2, "name": "Beta", "city": "Kyoto", "owner_id": 2, "partner_id": 2])
            #expect(try anonymous.json["values"]?["open/1.b"] == 2)
            #expect(anonymous.header("Vary") == "Authorization")
            try expectTokenRequired(
                try await app.request("GET", "/v1/watch?read=shops/1.name,shops/1.secret"), naming: "secret", "watch")
            try expectTokenRequired(
                try await app.request("POST", "/v1/watch", body: #"{"read":["partners/1.name"]}"#),
                naming: "partners", "watch partners")

            let reader = bearer(try await app.login())
            let full = try await app.request(
                "GET", "/v1/watch?read=shops/1.secret,partners/1.name,shops/2", headers: reader)
            #expect(try full.json["values"]?["shops/1.secret"] == "s1")
            #expect(try full.json["values"]?["partners/1.name"] == "P1")
            #expect(try full.json["values"]?["shops/2"]?["secret"] == "from tokyo")
            #expect(full.header("Cache-Control") == "private")
            let junk = [Self.json, ("Authorization", "Bearer junk")]
            #expect(try await app.request("GET", "/v1/watch?read=open/1.a", headers: junk).status == 200)
            #expect(try await app.request("GET", "/v1/watch?read=open/1.a,shops/1.name", headers: junk).status == 401)
        }
    }

    // MARK: - Long-polls

    /// `lookout_wakes_total` from `/metrics`.
    func wakes(_ app: LiveApp) async throws -> Double {
        let text = try await app.request("GET", "/metrics").text
        let line = text.split(separator: "\n").first { $0.hasPrefix("lookout_wakes_total ") }
        return Double(line?.split(separator: " ").last ?? "") ?? -1
    }

    @Test(
        "an anonymous poll waits only on public fields: a private write wakes nothing, a public one answers",
        arguments: ["/v1/shops/1", "/v1/shops", "/v1/shops?q=tokyo&expand=owner_id", "/v1/watch?read=shops/1"])
    func anonymousPollIgnoresPrivateWrites(_ target: String) async throws {
        try await withAccessApp { app in
            let editor = try await app.editorHeaders()
            let first = try await app.request("GET", target)
            let tag = try #require(first.header("ETag"))
            let separator = target.contains("?") ? "&" : "?"
            async let held = app.request(
                "GET", target + separator + "wait=30", headers: [Self.json, ("If-None-Match", tag)])
            try await app.waitUntilHeld(1)
            let before = try await wakes(app)
            for body in [#"{"secret":"changed"}"#, #"{"address":{"zip":"999"}}"#, #"{"added_later":true}"#] {
                #expect(try await app.request("PATCH", "/v1/shops/1", headers: editor, body: body).status == 200)
            }
            #expect(
                try await app.request("PATCH", "/v1/owners/1", headers: editor, body: #"{"phone":"0"}"#).status == 200)
            #expect(try await wakes(app) == before, "\(target): no private write woke it")
            #expect(app.application.heldRequests == 1, "\(target) is still held")
            #expect(
                try await app.request("PATCH", "/v1/shops/1", headers: editor, body: #"{"name":"Nara"}"#).status == 200)
            let woken = try await held
            #expect(woken.status == 200)
            #expect(woken.header("Lookout-Changed") == "shops/1.name", "\(target)")
            #expect(
                !woken.text.contains("changed") && !woken.text.contains("999") && !woken.text.contains("added_later"))
            #expect(woken.text.contains("Nara"))
        }
    }

    @Test("a token holder's poll on the same document is woken by a private write")
    func holderPollSeesPrivateWrites() async throws {
        try await withAccessApp { app in
            let editor = try await app.editorHeaders()
            let reader = bearer(try await app.login())
            let tag = try #require(try await app.request("GET", "/v1/shops/1", headers: reader).header("ETag"))
            async let held = app.request("GET", "/v1/shops/1?wait=30", headers: reader + [("If-None-Match", tag)])
            try await app.waitUntilHeld(1)
            #expect(
                try await app.request("PATCH", "/v1/shops/1", headers: editor, body: #"{"secret":"new"}"#).status == 200
            )
            let woken = try await held
            #expect(woken.status == 200)
            #expect(woken.header("Lookout-Changed") == "shops/1.secret")
            #expect(try woken.json["secret"] == "new")
        }
    }

    @Test("held polls whose token expires while they wait are answered 401 when a write wakes them")
    func tokenExpiresWhileHeld() async throws {
        let clock = ManualWallClock()
        try await withAccessApp(clock: clock) { app in
            let reader = bearer(try await app.login())
            clock.advance(seconds: 3000)
            // Logged in later, so its token outlives the reader's.
            let editor = try await app.editorHeaders()
            let targets = ["/v1/shops/1", "/v1/shops?fields=secret", "/v1/watch?read=shops/1.secret"]
            try await withThrowingTaskGroup(of: (String, TestHTTPResponse).self) { group in
                for target in targets {
                    let tag = try #require(try await app.request("GET", target, headers: reader).header("ETag"))
                    let poll = target + (target.contains("?") ? "&" : "?") + "wait=30"
                    group.addTask {
                        (target, try await app.request("GET", poll, headers: reader + [("If-None-Match", tag)]))
                    }
                }
                try await app.waitUntilHeld(targets.count)
                #expect(app.application.heldRequests == targets.count)
                clock.advance(seconds: 700)
                let write = try await app.request(
                    "PATCH", "/v1/shops/1", headers: editor, body: #"{"secret":"after expiry"}"#)
                #expect(write.status == 200)
                for try await (target, answer) in group {
                    #expect(answer.status == 401, "\(target)")
                    #expect(try answer.json["error"]?["code"] == "token_expired", "\(target)")
                    #expect(!answer.text.contains("after expiry"), "\(target)")
                }
            }
        }
    }

    @Test("a held poll whose token is revoked while it waits is answered 401 when a write wakes it")
    func tokenRevokedWhileHeld() async throws {
        try await withAccessApp { app in
            let editor = try await app.editorHeaders()
            let token = try await app.login()
            let tag = try #require(try await app.request("GET", "/v1/shops/2", headers: bearer(token)).header("ETag"))
            async let held = app.request(
                "GET", "/v1/shops/2?wait=30", headers: bearer(token) + [("If-None-Match", tag)])
            try await app.waitUntilHeld(1)
            #expect(try await app.form("/v1/auth/revoke", ["token": token]).status == 200)
            #expect(
                try await app.request("PATCH", "/v1/shops/2", headers: editor, body: #"{"secret":"x"}"#).status == 200)
            let answer = try await held
            #expect(answer.status == 401)
            #expect(try answer.json["error"]?["code"] == "token_revoked")
        }
    }

    @Test("polls on one document woken together each get their own grant's answer: public, full, or 401")
    func pollsWokenTogetherKeepTheirGrants() async throws {
        let clock = ManualWallClock()
        try await withAccessApp(clock: clock) { app in
            let expiring = bearer(try await app.login())
            clock.advance(seconds: 3000)
            // Logged in later, so their tokens outlive the first.
            let reader = bearer(try await app.login())
            let editor = try await app.editorHeaders()
            let tag = try #require(try await app.request("GET", "/v1/shops/1").header("ETag"))
            // Interleaved, so that a wake renders them one after another in one pass, where
            // a rendering kept for the pass (WakeRenders) must not pass to another header.
            let kinds = (0..<12).map { ["anonymous", "holder", "expired"][$0 % 3] }
            let headers = ["anonymous": [], "holder": reader, "expired": expiring]
            try await withThrowingTaskGroup(of: (String, TestHTTPResponse).self) { group in
                for kind in kinds {
                    let sent = (headers[kind] ?? []) + [("If-None-Match", tag)]
                    group.addTask { (kind, try await app.request("GET", "/v1/shops/1?wait=30", headers: sent)) }
                }
                try await app.waitUntilHeld(kinds.count)
                clock.advance(seconds: 700)
                let write = try await app.request(
                    "PATCH", "/v1/shops/1", headers: editor, body: #"{"name":"Nara","secret":"together"}"#)
                #expect(write.status == 200)
                var seen: [String: Int] = [:]
                for try await (kind, answer) in group {
                    seen[kind, default: 0] += 1
                    switch kind {
                    case "anonymous":
                        #expect(answer.status == 200)
                        #expect(answer.text.contains("Nara") && !answer.text.contains("together"), "\(answer.text)")
                    case "holder":
                        #expect(answer.status == 200)
                        #expect(try answer.json["secret"] == "together", "\(answer.text)")
                    default:
                        #expect(answer.status == 401, "\(answer.text)")
                        #expect(try answer.json["error"]?["code"] == "token_expired")
                    }
                }
                #expect(seen == ["anonymous": 4, "holder": 4, "expired": 4])
            }
        }
    }

    @Test("on a \"public\": true collection a poll with an expired token is answered as always")
    func expiredTokenOnPublicCollection() async throws {
        let clock = ManualWallClock()
        try await withAccessApp(clock: clock) { app in
            let reader = bearer(try await app.login())
            clock.advance(seconds: 3000)
            let editor = try await app.editorHeaders()
            let tag = try #require(try await app.request("GET", "/v1/open/1", headers: reader).header("ETag"))
            async let held = app.request("GET", "/v1/open/1?wait=30", headers: reader + [("If-None-Match", tag)])
            try await app.waitUntilHeld(1)
            clock.advance(seconds: 700)
            #expect(try await app.request("PATCH", "/v1/open/1", headers: editor, body: #"{"a":5}"#).status == 200)
            let answer = try await held
            #expect(answer.status == 200)
            #expect(try answer.json["a"] == 5)
        }
    }

    // MARK: - Caching

    @Test("the list cache keeps the public and the full renderings apart, in either order")
    func renderCacheByScope() async throws {
        try await withAccessApp { app in
            let reader = bearer(try await app.login())
            for target in ["/v1/shops?sort=name", "/v1/shops?sort=-name"] {
                let anonymousFirst = target.hasSuffix("=name")
                if anonymousFirst {
                    #expect(!(try await app.request("GET", target).text.contains("secret")))
                }
                #expect(try await app.request("GET", target, headers: reader).text.contains("secret"))
                #expect(!(try await app.request("GET", target).text.contains("secret")), "\(target)")
                #expect(try await app.request("GET", target, headers: reader).text.contains("secret"), "\(target)")
            }
        }
    }

    @Test("a token holder's view is private and varies by Authorization; a wholly public one has neither")
    func cacheHeaders() async throws {
        try await withAccessApp { app in
            let reader = bearer(try await app.login())
            for target in ["/v1/shops", "/v1/shops/1"] {
                let full = try await app.request("GET", target, headers: reader)
                #expect(full.header("Cache-Control") == "private", "\(target)")
                #expect(full.header("Vary") == "Authorization", "\(target)")
                let anonymous = try await app.request("GET", target)
                #expect(anonymous.header("Cache-Control") == nil, "\(target)")
                #expect(anonymous.header("Vary") == "Authorization", "\(target)")
                let tag = try #require(full.header("ETag"))
                let unchanged = try await app.request("GET", target, headers: reader + [("If-None-Match", tag)])
                #expect(unchanged.status == 304)
                #expect(unchanged.header("Cache-Control") == "private", "a 304 carries them too")
                #expect(unchanged.header("Vary") == "Authorization")
            }
            for headers in [[Self.json], reader] {
                let open = try await app.request("GET", "/v1/open", headers: headers)
                #expect(open.header("Cache-Control") == nil)
                #expect(open.header("Vary") == nil)
            }
        }
    }
}
