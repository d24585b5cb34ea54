import Foundation
import LookoutJSON
import Testing

@testable import LookoutAuth

@Suite("Signing key file")
struct KeyRingFileTests {
    let directory: String
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-keys-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    @Test("the ring is created once, private, and read back the same")
    func createOnce() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = KeyRingFile(directory: directory)
        #expect(try file.load() == nil)
        let first = try file.loadOrCreate(algorithm: .edDSA, now: now)
        let second = try file.loadOrCreate(algorithm: .hs256, now: now)
        #expect(first.active.id == second.active.id)
        #expect(second.active.algorithm == .edDSA)
        #expect(first.active.privateBytes == second.active.privateBytes)
        let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".tmp") }
        #expect(leftovers.isEmpty)
    }

    @Test("the old single key file is adopted, so tokens it signed stay valid")
    func legacyKey() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let legacy = SigningKey.generate()
        try (Data(legacy.privateBytes).base64EncodedString() + "\n").write(
            toFile: directory + "/signing-key", atomically: true, encoding: .utf8)
        let ring = try KeyRingFile(directory: directory).loadOrCreate(algorithm: .edDSA, now: now)
        #expect(ring.active.id == legacy.id)
        #expect(ring.active.algorithm == .hs256)
    }

    @Test("rotate keeps the old key as retired, drops long-retired ones, and a running service picks it up")
    func rotate() async throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = KeyRingFile(directory: directory)
        let first = try file.loadOrCreate(algorithm: .hs256, now: now)
        let keys = SigningKeys(file: file, ring: first)
        let tokens = TokenService(keys: keys, now: { [now] in now.addingTimeInterval(5) })
        let user = User(
            email: "a@example.com", role: .reader, passwordHash: try PasswordHash.make(password: "x", logRounds: 4))
        let early = TokenService(keys: SigningKeys(fixed: first), now: { [now] in now }).issue(for: user).token
        _ = try tokens.verify(early)
        let second = try file.rotate(to: .edDSA, now: now.addingTimeInterval(10), keepRetired: .seconds(60))
        #expect(second.entries.map(\.key.id) == [second.active.id, first.active.id])
        #expect(second.entries[1].retired == now.addingTimeInterval(10))
        #expect(try file.load()?.entries.map(\.key.id) == second.entries.map(\.key.id))

        let third = try file.rotate(to: nil, now: now.addingTimeInterval(100), keepRetired: .seconds(60))
        #expect(third.active.algorithm == .edDSA)
        #expect(third.entries.map(\.key.id) == [third.active.id, second.active.id])

        // The service looks at the file at most once a second.
        #expect(keys.ring.active.id == first.active.id)
        try await Task.sleep(for: .milliseconds(1100))
        #expect(keys.ring.active.id == third.active.id)
        // The first key was dropped: a token it signed stops verifying, although it was verified before.
        #expect(throws: AuthError.invalidToken("the token was not signed by a known key")) { try tokens.verify(early) }
    }

    @Test("damaged key files are refused with a reason, never replaced")
    func damaged() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = KeyRingFile(directory: directory)
        let ring = try file.loadOrCreate(algorithm: .hs256, now: now)
        var contents = ring.fileContents
        contents = ["keys": [["kid": "x", "alg": "HS256", "key": "AAAA", "created": 1]]]
        for bad in ["not json", String(decoding: JSONWriter.encode(contents), as: UTF8.self), #"{"keys":[]}"#] {
            try bad.write(toFile: file.path, atomically: true, encoding: .utf8)
            #expect(throws: AuthError.self) { try file.loadOrCreate(algorithm: .hs256, now: now) }
            #expect(try String(contentsOfFile: file.path, encoding: .utf8) == bad)
        }
    }
}
