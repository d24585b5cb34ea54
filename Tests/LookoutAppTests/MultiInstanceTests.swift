import Foundation
import LookoutApp
import LookoutJSON
import LookoutTestSupport
import Synchronization
import Testing

/// Several Lookout instances sharing one real PostgreSQL database (``TestPostgres``), as
/// behind a load balancer: a write on any instance wakes the right long-polls on every
/// instance, exactly once, and an instance cut from the database catches up.
@Suite("Several instances on PostgreSQL", .timeLimit(.minutes(3)))
struct MultiInstanceTests {
    static let json = ("Content-Type", "application/json")
    /// One token key for every instance, so a token from one is valid on the others.
    static let tokenKey = Data((0..<32).map { UInt8($0) }).base64EncodedString()

    /// Instances of one data file on the database at `url`, each with its own directory,
    /// started one after another, or all at once when `together`.
    ///
    /// They share one wall clock, as instances on one machine do: with a clock each, frozen
    /// at its own start, a token minted on an instance started later was "not valid yet" on
    /// one started earlier whenever start-up took over a second (a loaded machine).
    ///
    /// ``shutdown(_:)`` removes their directories. If one fails to start, those that did
    /// are shut down before the error is thrown; the data file, read at start only, is
    /// removed once they have started.
    func instances(
        _ count: Int,
        url: String,
        documents: String = #"[{"id": 1, "title": "first"}, {"id": 2}]"#,
        together: Bool = false
    ) async throws -> [LiveApp] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-multi-\(UUID())").path
        let file = try PersistenceTests().dataFile(directory, documents: documents)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let clock = ManualWallClock()
        let start = { @Sendable (number: Int) in
            try await LiveApp.start(dataDirectory: directory + "-\(number)", clock: clock) { configuration in
                configuration.dataFile = file
                configuration.database = .postgres
                configuration.databaseURL = url
                configuration.signingKey = Self.tokenKey
            }
        }
        var apps: [LiveApp] = []
        var failure: (any Error)?
        if together {
            await withThrowingTaskGroup(of: LiveApp.self) { group in
                for number in 0..<count { group.addTask { try await start(number) } }
                // Every result, so that an instance started beside one that failed is not lost.
                while let result = await group.nextResult() {
                    switch result {
                    case .success(let app): apps.append(app)
                    case .failure(let error): failure = failure ?? error
                    }
                }
            }
        } else {
            do {
                for number in 0..<count { apps.append(try await start(number)) }
            } catch {
                failure = error
            }
        }
        if let failure {
            shutdown(apps)
            throw failure
        }
        return apps
    }

    @Test("instances started at once on an empty database import the data once and share one history")
    func startTogether() async throws {
        let url = try await TestPostgres.freshDatabase()
        let apps = try await instances(3, url: url, together: true)
        defer { shutdown(apps) }
        var lists: Set<String> = []
        var tags: Set<String?> = []
        for app in apps {
            // Ready once its change feed has caught up, which on a loaded machine can come
            // after the instance answers (CI, 2026-11-29: one 503 here).
            try await waitUntil { try await app.request("GET", "/readyz").status == 200 }
            let list = try await app.request("GET", "/v1/notes")
            #expect(list.header("X-Total-Count") == "2", "the documents are imported once")
            lists.insert(String(decoding: list.body, as: UTF8.self))
            tags.insert(list.header("ETag"))
        }
        #expect(lists.count == 1)
        #expect(tags.count == 1, "one epoch, one revision: \(tags)")
        let editor = try await apps[2].editorHeaders()
        #expect(try await apps[2].request("POST", "/v1/notes", headers: editor, body: "{}").json["id"] == 3)
    }

    /// Shuts the instances down and removes their directories.
    func shutdown(_ apps: [LiveApp]) {
        for app in apps {
            app.shutdown()
            try? FileManager.default.removeItem(atPath: app.dataDirectory)
        }
    }

    @Test("one instance on PostgreSQL keeps writes, revisions and the epoch through a restart")
    func restart() async throws {
        let url = try await TestPostgres.freshDatabase()
        let first = try await instances(1, url: url)
        defer { try? FileManager.default.removeItem(atPath: first[0].dataDirectory) }
        let editor = try await first[0].editorHeaders()
        #expect(
            try await first[0].request("PATCH", "/v1/notes/1", headers: editor, body: #"{"title":"edited"}"#).status
                == 200)
        #expect(try await first[0].request("POST", "/v1/notes", headers: editor, body: #"{"n":3}"#).status == 201)
        let tag = try #require(try await first[0].request("GET", "/v1/notes/1").header("ETag"))
        shutdown(first)

        let second = try await instances(1, url: url)
        defer { shutdown(second) }
        let after = try await second[0].request("GET", "/v1/notes/1")
        #expect(try after.json == ["id": 1, "title": "edited"])
        #expect(after.header("ETag") == tag, "same epoch, same revisions")
        #expect(try await second[0].request("GET", "/v1/notes").header("X-Total-Count") == "3")
        try await waitUntil { try await second[0].request("GET", "/readyz").status == 200 }
    }

    @Test("a write on one instance wakes the long-polls on that field on the other two, and no others")
    func wakeAcross() async throws {
        let url = try await TestPostgres.freshDatabase()
        let apps = try await instances(3, url: url)
        defer { shutdown(apps) }
        let (a, b, c) = (apps[0], apps[1], apps[2])
        let tag1 = try #require(try await b.request("GET", "/v1/notes/1?fields=title").header("ETag"))
        let tag2 = try #require(try await b.request("GET", "/v1/notes/2").header("ETag"))
        #expect(try await c.request("GET", "/v1/notes/1?fields=title").header("ETag") == tag1, "cursors are shared")
        async let onB = b.request(
            "GET", "/v1/notes/1?fields=title&wait=30", headers: [Self.json, ("If-None-Match", tag1)])
        async let onC = c.request(
            "GET", "/v1/notes/1?fields=title&wait=30", headers: [Self.json, ("If-None-Match", tag1)])
        async let other = c.request("GET", "/v1/notes/2?wait=3", headers: [Self.json, ("If-None-Match", tag2)])
        try await b.waitUntilHeld(1)
        try await c.waitUntilHeld(2)
        #expect(b.application.heldRequests == 1)
        #expect(c.application.heldRequests == 2)

        let editor = try await a.editorHeaders()
        let write = try await a.request("PATCH", "/v1/notes/1", headers: editor, body: #"{"title":"from a"}"#)
        #expect(write.status == 200)
        let (woken1, woken2) = try await (onB, onC)
        #expect(try woken1.json == ["id": 1, "title": "from a"])
        #expect(try woken2.json == ["id": 1, "title": "from a"])
        #expect(woken1.header("ETag") == woken2.header("ETag"), "the same cursor on every instance")
        #expect(try await other.status == 304, "a poll on another document stays held until its timeout")
        #expect(c.application.heldRequests == 0)
    }

    @Test("concurrent writers on three instances: every poll sees each field only grow, none is lost, all converge")
    func concurrentWriters() async throws {
        let url = try await TestPostgres.freshDatabase()
        let apps = try await instances(3, url: url)
        defer { shutdown(apps) }
        let writes = 15
        let editors = try await apps.asyncMap { try await $0.editorHeaders() }
        // Each instance increments its own field of document 1 and creates documents;
        // every instance long-polls every instance's field.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (writer, app) in apps.enumerated() {
                group.addTask {
                    for value in 1...writes {
                        let body = #"{"count\#(writer)": \#(value)}"#
                        let patch = try await app.request("PATCH", "/v1/notes/1", headers: editors[writer], body: body)
                        #expect(patch.status == 200)
                        let create = try await app.request(
                            "POST", "/v1/notes", headers: editors[writer], body: #"{"by": \#(writer)}"#)
                        #expect(create.status == 201)
                    }
                }
                for poller in apps {
                    group.addTask {
                        let seen = try await Self.follow(poller, field: "count\(writer)", until: writes)
                        #expect(seen == seen.sorted() && Set(seen).count == seen.count, "\(seen): a repeated wake")
                        #expect(seen.last == writes)
                    }
                }
            }
            try await group.waitForAll()
        }
        // Every instance ends with the same documents at the same cursor.
        var lists: [String] = []
        var tags: [String?] = []
        for app in apps {
            for _ in 0..<100 {
                let list = try await app.request("GET", "/v1/notes")
                if list.header("X-Total-Count") == String(2 + 3 * writes) {
                    lists.append(String(decoding: list.body, as: UTF8.self))
                    tags.append(list.header("ETag"))
                    break
                }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        #expect(lists.count == 3)
        #expect(Set(lists).count == 1)
        #expect(Set(tags).count == 1)
        let ids = try JSONParser.parse(Array(lists[0].utf8)).arrayValue?.compactMap { $0["id"]?.intValue } ?? []
        #expect(ids == Array(1...(2 + 3 * writes)), "created ids are unique across instances")
    }

    /// Long-polls `field` of note 1 on `app` until it reaches `last`; the values seen.
    /// Each poll must be answered by a change, well before its wait ends.
    static func follow(_ app: LiveApp, field: String, until last: Int) async throws -> [Int] {
        var seen: [Int] = []
        var tag: String?
        while seen.last != last {
            var headers = [json]
            if let tag { headers.append(("If-None-Match", tag)) }
            let response = try await app.request("GET", "/v1/notes/1?fields=\(field)&wait=60", headers: headers)
            guard response.status == 200 else {
                Issue.record("a poll on \(field) ended with \(response.status) after \(seen)")
                return seen
            }
            tag = response.header("ETag")
            if let value = try response.json[field]?.intValue { seen.append(value) }
        }
        return seen
    }

    @Test("an instance cut from the database refuses writes with 503, serves reads and polls, and catches up")
    func reconnect() async throws {
        let server = try await offPool { try TestPostgres() }
        defer { server.remove() }
        let url = try server.createDatabase()
        let apps = try await instances(2, url: url)
        defer { shutdown(apps) }
        let (a, b) = (apps[0], apps[1])
        let editor = try await a.editorHeaders()
        let tag = try #require(try await b.request("GET", "/v1/notes/1").header("ETag"))
        async let held = b.request("GET", "/v1/notes/1?wait=60", headers: [Self.json, ("If-None-Match", tag)])
        try await b.waitUntilHeld(1)

        try await offPool { server.stop() }
        let refused = try await a.request("PATCH", "/v1/notes/1", headers: editor, body: #"{"title":"lost"}"#)
        #expect(refused.status == 503)
        #expect(refused.header("Retry-After") != nil)
        #expect(try await a.request("GET", "/v1/notes/1").status == 200, "reads go on")
        try await waitUntil { try await b.request("GET", "/readyz").status == 503 }
        #expect(b.application.heldRequests == 1, "the held poll is still held")

        try await offPool { try server.start() }
        var status = 0
        for _ in 0..<100 where status != 200 {
            status = try await a.request("PATCH", "/v1/notes/1", headers: editor, body: #"{"title":"back"}"#).status
            if status != 200 { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(status == 200, "writes are taken again once the database is back")
        #expect(try await held.json == ["id": 1, "title": "back"])
        try await waitUntil { try await b.request("GET", "/readyz").status == 200 }
        #expect(try await b.request("GET", "/v1/notes/1").json == ["id": 1, "title": "back"])
    }

    @Test("one instance cut from the database while the others write catches up in order and wakes its polls")
    func cutOneInstance() async throws {
        let server = try await offPool { try TestPostgres.shared }
        let name = "lookout_cut_\(UInt32.random(in: 0...UInt32.max))"
        let url = try server.createDatabase(name)
        // The third instance reaches the database through a relay that can be cut.
        let relay = try TCPRelay(to: server.port)
        defer { relay.stop() }
        let direct = try await instances(2, url: url)
        defer { shutdown(direct) }
        let relayed = try await instances(1, url: "postgres://lookout@127.0.0.1:\(relay.port)/\(name)")
        defer { shutdown(relayed) }
        let (a, b, c) = (direct[0], direct[1], relayed[0])
        let editors = try await [a, c].asyncMap { try await $0.editorHeaders() }
        let tag1 = try #require(try await c.request("GET", "/v1/notes/1?fields=title").header("ETag"))
        let tag2 = try #require(try await c.request("GET", "/v1/notes/2").header("ETag"))
        async let title = c.request("GET", "/v1/notes/1?fields=title&wait=60", headers: [("If-None-Match", tag1)])
        async let note2 = c.request("GET", "/v1/notes/2?wait=60", headers: [("If-None-Match", tag2)])
        try await c.waitUntilHeld(2)

        relay.cut()
        try await waitUntil { try await c.request("GET", "/readyz").status == 503 }
        let refused = try await c.request("PATCH", "/v1/notes/2", headers: editors[1], body: #"{"by":"c"}"#)
        #expect(refused.status == 503, "an instance without its database takes no writes")
        #expect(refused.header("Retry-After") != nil)
        for number in 1...5 {
            let body = #"{"title":"written while c was cut \#(number)"}"#
            #expect(try await a.request("PATCH", "/v1/notes/1", headers: editors[0], body: body).status == 200)
        }
        try await waitUntil {
            try await b.request("GET", "/v1/notes/1?fields=title").json["title"] == "written while c was cut 5"
        }
        #expect(
            try await c.request("GET", "/v1/notes/1?fields=title").json["title"] == "first",
            "reads go on from memory, stale while cut")
        #expect(c.application.heldRequests == 2, "the held polls are still held")

        relay.restore()
        try await waitUntil { try await c.request("GET", "/readyz").status == 200 }
        // Woken by the first of the writes it missed; a read after shows the last.
        let woken = try await title
        #expect(woken.status == 200)
        #expect(try woken.json["title"]?.stringValue?.hasPrefix("written while c was cut") == true)
        let caughtUp = try await c.request("GET", "/v1/notes/1?fields=title")
        #expect(try caughtUp.json == ["id": 1, "title": "written while c was cut 5"])
        #expect(
            caughtUp.header("ETag") == (try await a.request("GET", "/v1/notes/1?fields=title").header("ETag")),
            "the same cursor as on the instance that wrote")
        #expect(c.application.heldRequests == 1, "the poll on a document nobody wrote is still held")
        let write = try await c.request("PATCH", "/v1/notes/2", headers: editors[1], body: #"{"by":"c"}"#)
        #expect(write.status == 200, "writes are taken again, planned on the caught-up state")
        #expect(try await note2.json == ["id": 2, "by": "c"])
        try await waitUntil { try await a.request("GET", "/v1/notes/2").json == ["id": 2, "by": "c"] }
    }

    @Test("a token revoked on one instance, or a family revoked for reuse, is refused on the others within seconds")
    func revocationsAcross() async throws {
        let url = try await TestPostgres.freshDatabase()
        let apps = try await instances(3, url: url)
        defer { shutdown(apps) }
        let (a, b, c) = (apps[0], apps[1], apps[2])
        func write(on app: LiveApp, with token: String) async throws -> Int {
            try await app.request(
                "PATCH", "/v1/notes/2", headers: [Self.json, ("Authorization", "Bearer \(token)")], body: #"{"n":1}"#
            ).status
        }

        let first = try await a.passwordGrant("editor@example.com", "editor-password")
        #expect(try await write(on: b, with: first.access) == 200)
        #expect(try await a.form("/v1/auth/revoke", ["token": first.access]).status == 200)
        #expect(try await write(on: a, with: first.access) == 401, "at once on the instance that revoked it")
        try await waitUntil { try await write(on: b, with: first.access) == 401 }
        try await waitUntil { try await write(on: c, with: first.access) == 401 }

        // A refresh token used on c, then its retired predecessor replayed on a.
        let second = try await b.passwordGrant("editor@example.com", "editor-password")
        let rotated = try await c.refresh(second.refresh)
        #expect(rotated.status == 200, "refresh tokens are shared")
        let successor = try #require(try rotated.json["access_token"]?.stringValue)
        let successorWrite = try await b.request(
            "PATCH", "/v1/notes/2", headers: [Self.json, ("Authorization", "Bearer \(successor)")], body: #"{"n":1}"#)
        #expect(successorWrite.status == 200, "\(successorWrite.text)")
        #expect(try await a.refresh(second.refresh).status == 400, "a retired refresh token is refused")
        try await waitUntil {
            guard try await write(on: b, with: second.access) == 401 else { return false }
            return try await write(on: c, with: successor) == 401
        }
        #expect(try await c.refresh(try #require(try rotated.json["refresh_token"]?.stringValue)).status == 400)
    }

    @Test("lookout user and export work on the shared database while instances run; import refuses it")
    func commandsOnPostgres() async throws {
        let url = try await TestPostgres.freshDatabase()
        let apps = try await instances(2, url: url)
        defer { shutdown(apps) }
        var configuration = AppConfiguration(dataDirectory: apps[0].dataDirectory)
        configuration.database = .postgres
        configuration.databaseURL = url
        try UserCommands.add("ops@example.com", role: .admin, password: "ops-password", in: configuration)
        for app in apps { #expect(try await app.login("ops@example.com", "ops-password").isEmpty == false) }
        #expect(try UserCommands.list(in: configuration).map(\.email) == ["editor@example.com", "ops@example.com"])
        let exported = try JSONParser.parse(try DataCommands.export(configuration))
        #expect(exported["collections"]?.arrayValue?.first?["documents"]?.arrayValue?.count == 2)
        #expect(throws: StartupError.self, "import starts a history; on PostgreSQL a first start does") {
            try DataCommands.importFile("/nonexistent.json", into: configuration, replace: true)
        }
        configuration.databaseURL = try await TestPostgres.freshDatabase()
        #expect(throws: StartupError.self, "an empty database holds no users to change") {
            try UserCommands.list(in: configuration)
        }
    }
}

extension Array where Element: Sendable {
    func asyncMap<Result>(_ transform: (Element) async throws -> Result) async throws -> [Result] {
        var results: [Result] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
