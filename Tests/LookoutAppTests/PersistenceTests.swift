import Foundation
import LookoutApp
import LookoutJSON
import LookoutTestSupport
import Synchronization
import Testing

/// State through restarts of a real server on a real SQLite file.
@Suite("Durable state through restarts", .timeLimit(.minutes(2)))
struct PersistenceTests {
    static let json = ("Content-Type", "application/json")

    func temporaryDirectory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("lookout-persist-\(UUID())").path
    }

    /// Removes `directory` and the data file ``dataFile(_:documents:extra:)`` writes beside it.
    func remove(_ directory: String) {
        try? FileManager.default.removeItem(atPath: directory)
        try? FileManager.default.removeItem(atPath: directory + "-data.json")
    }

    /// A data file with one collection, public so that it is read without a token, and
    /// the demo editor.
    func dataFile(_ directory: String, documents: String = #"[{"id": 1, "title": "first"}]"#, extra: String = "")
        throws -> String
    {
        let demo = try JSONParser.parse(Array(try Data(contentsOf: DemoData.url)))
        let editor = try #require(demo["users"]?.arrayValue?.first { $0["email"] == "editor@example.com" })
        let path = directory + "-data.json"
        let text = """
            {"collections": [{"name": "notes", "public": true, "documents": \(documents)}\(extra)],
             "users": [\(String(decoding: JSONWriter.encode(editor), as: UTF8.self))]}
            """
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("writes, revisions and the epoch survive a restart; a cursor from before it still holds")
    func restart() async throws {
        let directory = temporaryDirectory()
        defer { remove(directory) }
        let file = try dataFile(directory)
        let first = try await LiveApp.start(dataDirectory: directory) { $0.dataFile = file }
        let editor = try await first.editorHeaders()
        let write = try await first.request("PATCH", "/v1/notes/1", headers: editor, body: #"{"title":"edited"}"#)
        #expect(write.status == 200)
        let created = try await first.request("POST", "/v1/notes", headers: editor, body: #"{"title":"second"}"#)
        #expect(created.status == 201)
        let before = try await first.request("GET", "/v1/notes/1")
        let tag = try #require(before.header("ETag"))
        first.shutdown()

        let second = try await LiveApp.start(dataDirectory: directory) { $0.dataFile = file }
        defer { second.shutdown() }
        let after = try await second.request("GET", "/v1/notes/1")
        #expect(try after.json == ["id": 1, "title": "edited"])
        #expect(after.header("ETag") == tag, "same epoch, same revisions")
        #expect(try await second.request("GET", "/v1/notes").header("X-Total-Count") == "2")
        async let held = second.request("GET", "/v1/notes/1?wait=30", headers: [Self.json, ("If-None-Match", tag)])
        try await second.waitUntilHeld(1)
        #expect(second.application.heldRequests == 1, "the old cursor is current: the poll is held")
        let secondEditor = try await second.editorHeaders()
        _ = try await second.request("PATCH", "/v1/notes/1", headers: secondEditor, body: #"{"title":"again"}"#)
        #expect(try await held.json["title"] == "again")
    }

    @Test("a write is awaited by the event loops from its queueing until its answer, and no longer")
    func awaitedWrites() async throws {
        let directory = temporaryDirectory()
        defer { remove(directory) }
        let file = try dataFile(directory)
        let app = try await LiveApp.start(dataDirectory: directory) { $0.dataFile = file }
        defer { app.shutdown() }
        let editor = try await app.editorHeaders()
        let tag = try #require(try await app.request("GET", "/v1/notes/1").header("ETag"))
        #expect(app.application.writesAwaited == 0)
        // A poll the writes wake, and writes from several connections at once: some queue
        // behind a commit and go in a group.
        async let held = app.request("GET", "/v1/notes/1?wait=30", headers: [Self.json, ("If-None-Match", tag)])
        try await app.waitUntilHeld(1)
        let port = app.port
        let before = try Scrape(try await app.request("GET", "/metrics").text)
        let statuses = Mutex<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: 16) { index in
            let status = try? TestHTTP.request(
                port: port, "PATCH", "/v1/notes/1", headers: editor, body: Array(#"{"title":"w\#(index)"}"#.utf8)
            ).status
            statuses.withLock { $0.append(status ?? 0) }
        }
        #expect(statuses.withLock { $0 } == Array(repeating: 200, count: 16))
        #expect(try await held.status == 200)
        // Each write applied once, each commit on a loop or as one of the writer's groups.
        let after = try Scrape(try await app.request("GET", "/metrics").text)
        #expect(after.delta(from: before, "lookout_store_revision") == 16)
        let committed =
            after.delta(from: before, "lookout_commits_total", ["thread": "loop"])
            + after.delta(from: before, "lookout_commits_total", ["thread": "writer"])
        #expect((1...16).contains(committed), "\(committed) commits")
        // Each group is counted off just after its writes were answered and the polls it
        // woke posted to their loops, which their clients may read first.
        try await waitUntil(every: .milliseconds(5)) { app.application.writesAwaited == 0 }
        #expect(app.application.writesAwaited == 0, "a write counted once, off once")
    }

    /// Commits so far by the thread that made them, from `lookout_commits_total`.
    func commits(_ app: LiveApp) async throws -> (onLoops: Double, byWriter: Double) {
        let response = try await app.request("GET", "/metrics")
        try #require(response.status == 200)
        let scrape = try Scrape(response.text)
        return (
            scrape.value("lookout_commits_total", ["thread": "loop"]) ?? 0,
            scrape.value("lookout_commits_total", ["thread": "writer"]) ?? 0
        )
    }

    @Test(
        "a write that finds no commit under way is committed on the loop that read it, and wakes its poll; with the limit at zero, by the writer",
        arguments: [true, false])
    func committedOnTheLoop(onLoop: Bool) async throws {
        let directory = temporaryDirectory()
        defer { remove(directory) }
        let file = try dataFile(directory)
        let app = try await LiveApp.start(dataDirectory: directory) {
            $0.dataFile = file
            if !onLoop { $0.loopCommitLimit = .zero }
        }
        let editor = try await app.editorHeaders()
        let tag = try #require(try await app.request("GET", "/v1/notes/1").header("ETag"))
        let before = try await commits(app)
        async let held = app.request("GET", "/v1/notes/1?wait=30", headers: [Self.json, ("If-None-Match", tag)])
        try await app.waitUntilHeld(1)
        let write = try await app.request("PATCH", "/v1/notes/1", headers: editor, body: #"{"title":"written"}"#)
        #expect(write.status == 200)
        #expect(try await held.json["title"] == "written")
        let after = try await commits(app)
        #expect(after.onLoops - before.onLoops == (onLoop ? 1 : 0))
        #expect(after.byWriter - before.byWriter == (onLoop ? 0 : 1))
        app.shutdown()
        // Acknowledged only once durable: there after a restart.
        let again = try await LiveApp.start(dataDirectory: directory) { $0.dataFile = file }
        defer { again.shutdown() }
        #expect(try await again.request("GET", "/v1/notes/1").json["title"] == "written")
    }

    @Test("once commits have averaged over the limit, a lone write goes to the writer thread")
    func slowCommitsGoToTheWriter() async throws {
        let directory = temporaryDirectory()
        defer { remove(directory) }
        let file = try dataFile(directory)
        // No commit takes under a nanosecond: the first write, with no average yet, is
        // committed on its loop; its time puts the average over the limit.
        let app = try await LiveApp.start(dataDirectory: directory) {
            $0.dataFile = file
            $0.loopCommitLimit = .nanoseconds(1)
        }
        defer { app.shutdown() }
        let editor = try await app.editorHeaders()
        let before = try await commits(app)
        for title in ["one", "two", "three"] {
            let write = try await app.request("PATCH", "/v1/notes/1", headers: editor, body: #"{"title":"\#(title)"}"#)
            #expect(write.status == 200)
        }
        let after = try await commits(app)
        #expect(after.onLoops - before.onLoops == 1)
        #expect(after.byWriter - before.byWriter == 2)
        #expect(try await app.request("GET", "/v1/notes/1").json["title"] == "three")
    }

    @Test("SQLite's log is checkpointed beside the commits once it passes 1,000 pages, and counted")
    func checkpointedBeside() async throws {
        let directory = temporaryDirectory()
        defer { remove(directory) }
        let file = try dataFile(directory)
        let app = try await LiveApp.start(dataDirectory: directory) { $0.dataFile = file }
        defer { app.shutdown() }
        let editor = try await app.editorHeaders()
        // ~50 pages of log each: 30 of them pass the 1,000 at which a checkpoint is asked for.
        let body = #"{"title":""# + String(repeating: "x", count: 200_000) + #""}"#
        for _ in 0..<30 {
            #expect(try await app.request("POST", "/v1/notes", headers: editor, body: body).status == 201)
        }
        func checkpoints(by: String) async throws -> Double {
            try Scrape(try await app.request("GET", "/metrics").text).value(
                "lookout_checkpoints_total", ["by": by]) ?? 0
        }
        try await waitUntil(every: .milliseconds(10)) { try await checkpoints(by: "queue") >= 1 }
        #expect(try await checkpoints(by: "queue") >= 1)
        #expect(try await checkpoints(by: "commit") == 0)
        #expect(try await app.request("GET", "/v1/notes").header("X-Total-Count") == "31")
    }

    @Test("the data file is imported once: later starts keep edits and add newly declared collections")
    func importOnce() async throws {
        let directory = temporaryDirectory()
        defer { remove(directory) }
        let file = try dataFile(directory)
        let first = try await LiveApp.start(dataDirectory: directory) { $0.dataFile = file }
        let editor = try await first.editorHeaders()
        _ = try await first.request("PATCH", "/v1/notes/1", headers: editor, body: #"{"title":"edited"}"#)
        first.shutdown()

        let changed = try dataFile(
            directory, documents: #"[{"id": 1, "title": "from the file again"}, {"id": 5}]"#,
            extra: #", {"name": "later", "public": true, "documents": [{"id": 1, "x": true}]}"#)
        let second = try await LiveApp.start(dataDirectory: directory) { $0.dataFile = changed }
        defer { second.shutdown() }
        #expect(try await second.request("GET", "/v1/notes/1").json["title"] == "edited")
        #expect(try await second.request("GET", "/v1/notes/5").status == 404)
        #expect(try await second.request("GET", "/v1/later/1").json == ["id": 1, "x": true])
    }

    @Test("a damaged database stops start-up with a message naming it, and is left untouched")
    func damaged() async throws {
        let directory = temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let database = directory + "/lookout.sqlite"
        let junk = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try junk.write(to: URL(fileURLWithPath: database))
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let app = try await LiveApp.start(dataDirectory: directory)
            app.shutdown()
            Issue.record("started on a damaged database")
        } catch {
            #expect("\(error)".contains(database), "\(error)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: database)) == junk)
    }

    @Test("a full database refuses writes with 503 and stores nothing; reads keep working")
    func full() async throws {
        try await withApp(configure: { $0.maxDatabaseBytes = 160 * 1024 }) { app in
            let editor = try await app.editorHeaders()
            let big = String(repeating: "x", count: 4000)
            var statuses: [Int] = []
            for _ in 0..<100 {
                let response = try await app.request(
                    "POST", "/v1/galleries", headers: editor, body: #"{"title":"\#(big)"}"#)
                statuses.append(response.status)
                if response.status == 503 {
                    #expect(try response.json["error"]?["code"] == "storage_unavailable")
                    #expect(response.header("Retry-After") != nil)
                    break
                }
            }
            #expect(statuses.last == 503, "\(statuses)")
            let stored = statuses.filter { $0 == 201 }.count
            let list = try await app.request("GET", "/v1/galleries")
            #expect(list.status == 200)
            #expect(list.header("X-Total-Count") == String(24 + stored), "the refused write is not served")
            let metrics = try await app.request("GET", "/metrics").text
            #expect(metrics.split(separator: "\n").contains("lookout_storage_errors_total 1"), "counted once")
        }
    }
}
