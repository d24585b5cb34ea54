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

    /// Instances of one data file on the database at `url`, each with its own directory.
    func instances(_ count: Int, url: String, documents: String = #"[{"id": 1, "title": "first"}, {"id": 2}]"#)
        async throws -> [LiveApp]
    {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-multi-\(UUID())").path
        let file = try PersistenceTests().dataFile(directory, documents: documents)
        var apps: [LiveApp] = []
        for number in 0..<count {
            apps.append(
                try await LiveApp.start(dataDirectory: directory + "-\(number)") { configuration in
                    configuration.dataFile = file
                    configuration.database = .postgres
                    configuration.databaseURL = url
                    configuration.signingKey = Self.tokenKey
                })
        }
        return apps
    }

    func shutdown(_ apps: [LiveApp]) {
        for app in apps {
            app.shutdown()
            try? FileManager.default.removeItem(atPath: app.dataDirectory)
        }
    }

    @Test("one instance on PostgreSQL keeps writes, revisions and the epoch through a restart")
    func restart() async throws {
        let url = try TestPostgres.shared.createDatabase()
        let first = try await instances(1, url: url)
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
        try await Self.waitUntil { try await second[0].request("GET", "/readyz").status == 200 }
    }

    @Test("a write on one instance wakes the long-polls on that field on the other two, and no others")
    func wakeAcross() async throws {
        let url = try TestPostgres.shared.createDatabase()
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
        let url = try TestPostgres.shared.createDatabase()
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
        let server = try TestPostgres()
        defer { server.remove() }
        let url = try server.createDatabase()
        let apps = try await instances(2, url: url)
        defer { shutdown(apps) }
        let (a, b) = (apps[0], apps[1])
        let editor = try await a.editorHeaders()
        let tag = try #require(try await b.request("GET", "/v1/notes/1").header("ETag"))
        async let held = b.request("GET", "/v1/notes/1?wait=60", headers: [Self.json, ("If-None-Match", tag)])
        try await b.waitUntilHeld(1)

        server.stop()
        let refused = try await a.request("PATCH", "/v1/notes/1", headers: editor, body: #"{"title":"lost"}"#)
        #expect(refused.status == 503)
        #expect(refused.header("Retry-After") != nil)
        #expect(try await a.request("GET", "/v1/notes/1").status == 200, "reads go on")
        try await Self.waitUntil { try await b.request("GET", "/readyz").status == 503 }
        #expect(b.application.heldRequests == 1, "the held poll is still held")

        try server.start()
        var status = 0
        for _ in 0..<100 where status != 200 {
            status = try await a.request("PATCH", "/v1/notes/1", headers: editor, body: #"{"title":"back"}"#).status
            if status != 200 { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(status == 200, "writes are taken again once the database is back")
        #expect(try await held.json == ["id": 1, "title": "back"])
        try await Self.waitUntil { try await b.request("GET", "/readyz").status == 200 }
        #expect(try await b.request("GET", "/v1/notes/1").json == ["id": 1, "title": "back"])
    }

    /// Waits until `condition` holds, checking every 50 ms for up to 10 s.
    static func waitUntil(_ condition: () async throws -> Bool) async throws {
        for _ in 0..<200 {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("the condition did not hold within 10 s")
    }
}

extension Array where Element: Sendable {
    func asyncMap<Result>(_ transform: (Element) async throws -> Result) async throws -> [Result] {
        var results: [Result] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
