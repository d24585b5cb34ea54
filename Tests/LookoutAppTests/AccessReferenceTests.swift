import Foundation
import LookoutJSON
import LookoutTestSupport
import Testing

/// The server's reads against ``ReferenceAccess``, written from README "Who may read
/// what" alone: random data files (``AccessWorld``), random reads
/// (``RandomAccessRequest``) by random readers, status, body and caching headers compared.
///
/// Each answer's `ETag` is checked too: the data is written in two rounds, first what a
/// reader without a token may see, then only what it may not, so an answer for such a
/// reader whose `ETag` is newer than the first round read (and would wait on) a field it
/// may not see.
///
/// The seed is printed; `LOOKOUT_ACCESS_SEED=<n>` repeats a run, and
/// `LOOKOUT_ACCESS_DEBUG=1` prints every read with its answer and the expected one.
@Suite("Who may read what, against a reference", .serialized, .timeLimit(.minutes(3)))
struct AccessReferenceTests {
    static let json = ("Content-Type", "application/json")
    static let worlds = 5
    static let readsPerWorld = 300

    /// How a request's reader is sent.
    enum ReaderKind: CaseIterable {
        case anonymous, holder, expired, junk, basic
    }

    /// The tokens of one app.
    struct Tokens {
        let valid: String
        let expired: String
    }

    @Test("random reads of random data files, by random readers, answer as the README's rules say")
    func randomReads() async throws {
        let seed = AccessWorld.seed
        print("AccessReferenceTests.randomReads seed: \(seed) (LOOKOUT_ACCESS_SEED repeats it)")
        var counts: [String: Int] = [:]
        var mismatches: [String] = []
        for round in 0..<Self.worlds {
            let worldSeed = seed &+ UInt64(round) &* 0x9E37_79B9
            try await compare(worldSeed, seed: seed, counts: &counts, mismatches: &mismatches)
        }
        let total = Self.worlds * Self.readsPerWorld
        print("AccessReferenceTests: \(total) reads: \(counts.sorted { $0.key < $1.key })")
        if mismatches.count > 1 {
            let listed = mismatches.prefix(15).joined(separator: "\n")
            Issue.record(
                "\(mismatches.count) of \(total) reads disagree with the reference (seed \(seed)); the first 15:\n\(listed)"
            )
        }
        // The generator must keep making the reads that matter.
        for kind in ["200 public fields", "200 holder", "200 everyone", "401 token_required", "401 token error", "400"]
        {
            #expect(counts[kind, default: 0] >= total / 100, "too few '\(kind)' answers: \(counts)")
        }
        #expect(counts["200 public fields, expanded", default: 0] >= total / 100, "\(counts)")
    }

    /// Serves the world `worldSeed` makes, writes to it in two rounds, and compares random reads.
    func compare(_ worldSeed: UInt64, seed: UInt64, counts: inout [String: Int], mismatches: inout [String])
        async throws
    {
        var world = try AccessWorld(seed: worldSeed)
        let file = try world.writeDataFile()
        defer { try? FileManager.default.removeItem(atPath: file) }
        let clock = ManualWallClock()
        let app = try await LiveApp.start(clock: clock) { $0.dataFile = file }
        defer {
            app.shutdown()
            try? FileManager.default.removeItem(atPath: app.dataDirectory)
        }
        let expired = try await app.login()
        clock.advance(seconds: 3601)
        let tokens = Tokens(valid: try await app.login(), expired: expired)
        let editor = try await app.editorHeaders()

        var random = SplitMix64(seed: worldSeed ^ 0x5752_4954_4553)
        // Round one: fields a reader without a token may see; round two: only others.
        try await write(&world, app, editor, visible: true, &random)
        let publicRevision = try await revision(app)
        try await write(&world, app, editor, visible: false, &random)
        #expect(try await revision(app) > publicRevision, "round two wrote nothing (seed \(seed))")

        let model = ReferenceAccess(world: world)
        let requests = RandomAccessRequest(world: world)
        for _ in 0..<Self.readsPerWorld {
            let target = requests.make(&random)
            let kind = Self.randomReader(&random)
            let expected = model.answer(target, by: Self.reader(kind))
            let response = try await app.request("GET", target, headers: Self.headers(kind, tokens))
            counts[Self.label(expected, target), default: 0] += 1
            var problem = Self.mismatch(expected, response)
            if problem == nil, case .ok(_, let viewer) = expected, viewer != .holder,
                let tag = response.header("ETag"), let revision = Self.revision(ofTag: tag), revision > publicRevision
            {
                problem = "ETag \(tag) is newer than the last write to what this reader may see (\(publicRevision))"
            }
            if ProcessInfo.processInfo.environment["LOOKOUT_ACCESS_DEBUG"] != nil {
                print(
                    "GET \(target) as \(kind): \(response.status) \(response.text.prefix(300))\n  expected \(expected)")
            }
            guard let problem else { continue }
            let line = "GET \(target) as \(kind): \(problem)"
            if mismatches.isEmpty {
                Issue.record(
                    "First mismatch (seed \(seed), world \(worldSeed)): \(line)\nexpected: \(expected)\nactual: \(response.status) \(response.text.prefix(2000))"
                )
            }
            mismatches.append(line)
        }
    }

    // MARK: - Readers

    /// Mostly readers without a token and token holders; a third of the time a token that
    /// does not verify.
    static func randomReader(_ random: inout SplitMix64) -> ReaderKind {
        switch Int.random(in: 0..<100, using: &random) {
        case 0..<35: .anonymous
        case 35..<67: .holder
        case 67..<85: .expired
        case 85..<93: .junk
        default: .basic
        }
    }

    static func reader(_ kind: ReaderKind) -> ReferenceAccess.Reader {
        switch kind {
        case .anonymous: .anonymous
        case .holder: .holder
        case .expired: .refused(code: "token_expired")
        case .junk, .basic: .refused(code: "invalid_token")
        }
    }

    static func headers(_ kind: ReaderKind, _ tokens: Tokens) -> [(String, String)] {
        switch kind {
        case .anonymous: [json]
        case .holder: [json, ("Authorization", "Bearer \(tokens.valid)")]
        case .expired: [json, ("Authorization", "Bearer \(tokens.expired)")]
        case .junk: [json, ("Authorization", "Bearer junk")]
        case .basic: [json, ("Authorization", "Basic ZGVtbzpkZW1v")]
        }
    }

    // MARK: - Writes

    /// PATCHes a few documents of each collection: when `visible`, fields a reader without
    /// a token may see; else only fields it may not (never of a `"public": true`
    /// collection). Each write changes its value, and `world` follows.
    func write(
        _ world: inout AccessWorld,
        _ app: LiveApp,
        _ editor: [(String, String)],
        visible: Bool,
        _ random: inout SplitMix64
    ) async throws {
        var serial = visible ? 100 : 200
        for collection in world.collections {
            let open = AccessWorld.publicFields(of: collection)
            let plain = collection.fields.filter { collection.target(of: $0) == nil }
            let fields = plain.filter { field in (open?.contains(field) ?? true) == visible }
            guard !fields.isEmpty else { continue }
            for document in collection.documents.shuffled(using: &random).prefix(3) {
                let id = document["id"]!.intValue!
                let field = fields.randomElement(using: &random)!
                serial += 1
                let value: JSONValue =
                    AccessWorld.numberFields.contains(field)
                    ? .int(serial)
                    : AccessWorld.booleanFields.contains(field) ? .bool(document[field] != true) : .string("w\(serial)")
                let patch: JSONObject = [field: value]
                let response = try await app.request(
                    "PATCH", "/v1/\(collection.name)/\(id)", headers: editor,
                    body: String(decoding: JSONWriter.encode(.object(patch)), as: UTF8.self))
                try #require(response.status == 200, "PATCH \(collection.name)/\(id): \(response.text)")
                world.apply(patch, to: id, in: collection.name)
            }
        }
    }

    /// `lookout_store_revision` from `/metrics`.
    func revision(_ app: LiveApp) async throws -> UInt64 {
        let text = try await app.request("GET", "/metrics").text
        let line = text.split(separator: "\n").first { $0.hasPrefix("lookout_store_revision ") }
        return try #require(line.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }.map { UInt64($0) })
    }

    static func revision(ofTag tag: String) -> UInt64? {
        tag.split(separator: "-").last.flatMap { UInt64($0.filter(\.isASCIIDigit)) }
    }

    // MARK: - Comparing

    /// Why `response` differs from `expected`, or nil when it agrees.
    static func mismatch(_ expected: ReferenceAccess.Answer, _ response: TestHTTPResponse) -> String? {
        let code = try? response.json["error"]?["code"]?.stringValue
        switch expected {
        case .notFound:
            return response.status == 404 ? nil : "status \(response.status), expected 404"
        case .tokenError(let expectedCode):
            guard response.status == 401, code == expectedCode else {
                return "status \(response.status) \(code ?? ""), expected 401 \(expectedCode)"
            }
            return challenged(response)
        case .refused(let tokenRequired, let invalid):
            if tokenRequired, response.status == 401, code == "token_required" { return challenged(response) }
            if response.status == 400, code == "invalid_parameter" {
                let message = (try? response.json["error"]?["message"]?.stringValue) ?? ""
                if invalid.contains(where: { message.hasPrefix("Parameter '\($0)'") }) { return nil }
                return "400 naming the wrong parameter: \(message); expected one of \(invalid)"
            }
            let wanted = (tokenRequired ? ["401 token_required"] : []) + invalid.map { "400 naming \($0)" }
            return "status \(response.status) \(code ?? ""), expected \(wanted.joined(separator: " or "))"
        case .ok(let body, let viewer):
            guard response.status == 200 else { return "status \(response.status): \(response.text.prefix(300))" }
            var problems: [String] = []
            switch body {
            case .list(let list):
                if let problem = QueryReferenceTests.mismatch(.list(list), response) { problems.append(problem) }
            case .document(let document):
                if let actual = try? response.json, !QueryReferenceTests.sameJSON(actual, .object(document)) {
                    problems.append("body \(response.text), expected \(QueryReferenceTests.compact(.object(document)))")
                }
            case .values(let values):
                let actual = try? response.json["values"]
                if !(actual.map { QueryReferenceTests.sameJSON($0, .object(values)) } ?? false) {
                    problems.append("values \(response.text), expected \(QueryReferenceTests.compact(.object(values)))")
                }
            }
            let vary = response.header("Vary")
            let cacheControl = response.header("Cache-Control")
            let expectedVary = viewer == .everyone ? nil : "Authorization"
            let expectedCacheControl = viewer == .holder ? "private" : nil
            if vary != expectedVary || cacheControl != expectedCacheControl {
                problems.append(
                    "Vary \(vary ?? "none"), Cache-Control \(cacheControl ?? "none"); expected \(expectedVary ?? "none"), \(expectedCacheControl ?? "none")"
                )
            }
            return problems.isEmpty ? nil : problems.joined(separator: "; ")
        }
    }

    static func challenged(_ response: TestHTTPResponse) -> String? {
        response.header("WWW-Authenticate")?.hasPrefix("Bearer") == true ? nil : "401 without WWW-Authenticate: Bearer"
    }

    /// What kind of answer `expected` is, to count.
    static func label(_ expected: ReferenceAccess.Answer, _ target: String) -> String {
        switch expected {
        case .ok(_, .publicFields): target.contains("expand=") ? "200 public fields, expanded" : "200 public fields"
        case .ok(_, .holder): "200 holder"
        case .ok(_, .everyone): "200 everyone"
        case .refused(true, _): "401 token_required"
        case .refused(false, _): "400"
        case .tokenError: "401 token error"
        case .notFound: "404"
        }
    }
}
