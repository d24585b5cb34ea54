import Foundation
import LookoutApp
import LookoutJSON
import Testing

/// `lookout export`, `import` and `backup` on real data directories.
@Suite("Export, import and backup", .timeLimit(.minutes(2)))
struct DataCommandTests {
    func configuration(_ directory: String) -> AppConfiguration {
        AppConfiguration(dataDirectory: directory)
    }

    func temporaryDirectory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("lookout-data-\(UUID())").path
    }

    @Test("export gives a data file that imports to the same state; import refuses a used directory without --replace")
    func roundTrip() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(throws: StartupError.self) { try DataCommands.export(configuration(directory)) }
        let app = try await LiveApp.start(dataDirectory: directory)
        let editor = try await app.editorHeaders()
        _ = try await app.request("PATCH", "/v1/galleries/2", headers: editor, body: #"{"title":"書き換え"}"#)
        let exported = try DataCommands.export(configuration(directory))
        app.shutdown()

        let file = directory + "-export.json"
        defer { try? FileManager.default.removeItem(atPath: file) }
        try Data(exported).write(to: URL(fileURLWithPath: file))
        let json = try JSONParser.parse(exported)
        let galleries = try #require(json["collections"]?.arrayValue?.first { $0["name"] == "galleries" })
        #expect(galleries["documents"]?.arrayValue?.first { $0["id"] == 2 }?["title"] == "書き換え")
        #expect(galleries["public"] == true)
        let reviews = try #require(json["collections"]?.arrayValue?.first { $0["name"] == "reviews" })
        #expect(reviews["public"] == ["pickup_id", "rating", "comment"])
        #expect(json["users"]?.arrayValue?.count == 2)

        #expect(throws: StartupError.self) {
            try DataCommands.importFile(file, into: configuration(directory), replace: false)
        }
        let other = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: other) }
        let counts = try DataCommands.importFile(file, into: configuration(other), replace: false)
        #expect(counts.collections == 5 && counts.documents == 73 && counts.users == 2)
        #expect(try DataCommands.export(configuration(other)) == exported)
        _ = try DataCommands.importFile(file, into: configuration(directory), replace: true)
        #expect(try DataCommands.export(configuration(directory)) == exported)
    }

    @Test("import --replace is refused while a server serves the database, which keeps its state")
    func importBesideServer() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let app = try await LiveApp.start(dataDirectory: directory)
        let editor = try await app.editorHeaders()
        _ = try await app.request("PATCH", "/v1/galleries/2", headers: editor, body: #"{"title":"kept"}"#)
        let file = directory + "-export.json"
        defer { try? FileManager.default.removeItem(atPath: file) }
        try Data(try DataCommands.export(configuration(directory))).write(to: URL(fileURLWithPath: file))
        #expect {
            try DataCommands.importFile(file, into: configuration(directory), replace: true)
        } throws: { error in
            "\(error)".contains("is in use")
        }
        let after = try await app.request("PATCH", "/v1/galleries/2", headers: editor, body: #"{"title":"still"}"#)
        #expect(after.status == 200)
        app.shutdown()
        let exported = try JSONParser.parse(try DataCommands.export(configuration(directory)))
        let galleries = try #require(exported["collections"]?.arrayValue?.first { $0["name"] == "galleries" })
        #expect(galleries["documents"]?.arrayValue?.first { $0["id"] == 2 }?["title"] == "still")
        _ = try DataCommands.importFile(file, into: configuration(directory), replace: true)
        let imported = try JSONParser.parse(try DataCommands.export(configuration(directory)))
        let replaced = try #require(imported["collections"]?.arrayValue?.first { $0["name"] == "galleries" })
        #expect(replaced["documents"]?.arrayValue?.first { $0["id"] == 2 }?["title"] == "kept")
    }

    @Test("an online backup taken while writes go on opens as a complete database")
    func onlineBackup() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let app = try await LiveApp.start(dataDirectory: directory)
        defer { app.shutdown() }
        let editor = try await app.editorHeaders()
        async let writes: [Int] = {
            var statuses: [Int] = []
            for index in 0..<20 {
                statuses.append(
                    try await app.request("POST", "/v1/galleries", headers: editor, body: #"{"title":"w\#(index)"}"#)
                        .status)
            }
            return statuses
        }()
        let destination = directory + "-backup.sqlite"
        defer { try? FileManager.default.removeItem(atPath: destination) }
        try DataCommands.backup(configuration(directory), to: destination)
        #expect(try await writes.allSatisfy { $0 == 201 })
        let restored = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: restored) }
        try FileManager.default.createDirectory(atPath: restored, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: destination, toPath: restored + "/lookout.sqlite")
        let copy = try JSONParser.parse(try DataCommands.export(configuration(restored)))
        let count = copy["collections"]?.arrayValue?.first { $0["name"] == "galleries" }?["documents"]?.arrayValue?
            .count
        #expect((24...44).contains(count ?? 0), "\(String(describing: count))")
    }
}
