import Foundation
import LookoutAuth
import LookoutTestSupport
import Testing

@Suite("Tokens")
struct TokenServiceTests {
    let key = SigningKey.generate()
    let clock = ManualWallClock(Date(timeIntervalSince1970: 1_800_000_000))
    let user = User(
        email: "Demo@Example.com", role: .reader, passwordHash: try! PasswordHash.make(password: "x", logRounds: 4))

    func service(key: SigningKey? = nil) async -> TokenService {
        let clock = clock
        return await TokenService(key: key ?? self.key, lifetime: .seconds(3600), now: { clock.now() })
    }

    @Test("an issued token verifies and carries sub, iat, exp (1 h), jti and scope, never a password")
    func issueAndVerify() async throws {
        let tokens = await service()
        let token = try await tokens.issue(for: user)
        let claims = try await tokens.verify(token)
        #expect(claims.sub.value == "demo@example.com")
        #expect(claims.scope == "reader")
        #expect(claims.exp.value.timeIntervalSince(claims.iat.value) == 3600)
        #expect(!claims.jti.value.isEmpty)
        let payload = try #require(token.split(separator: ".").dropFirst().first)
        let decoded = try #require(Data(base64Encoded: base64(payload)))
        let text = String(decoding: decoded, as: UTF8.self)
        #expect(!text.contains("password") && !text.contains("scrypt"))
        let second = try await tokens.issue(for: user)
        #expect(try await tokens.verify(second).jti != claims.jti)
    }

    @Test("a token expires after its lifetime")
    func expiry() async throws {
        let tokens = await service()
        let token = try await tokens.issue(for: user)
        clock.advance(seconds: 3599)
        _ = try await tokens.verify(token)
        clock.advance(seconds: 1)
        await #expect(throws: AuthError.tokenExpired) { try await tokens.verify(token) }
    }

    @Test("a token issued in the future is not yet valid")
    func notYetValid() async throws {
        let tokens = await service()
        let token = try await tokens.issue(for: user)
        clock.advance(seconds: -60)
        await #expect(throws: AuthError.tokenNotYetValid) { try await tokens.verify(token) }
    }

    @Test("a tampered payload, a foreign key, alg none and garbage are refused")
    func forged() async throws {
        let tokens = await service()
        let token = try await tokens.issue(for: user)
        var parts = token.split(separator: ".").map(String.init)
        let payload = String(decoding: Data(base64Encoded: base64(Substring(parts[1])))!, as: UTF8.self)
            .replacingOccurrences(of: "reader", with: "admin")
        parts[1] = base64URL(Array(payload.utf8))
        await #expect(throws: AuthError.self) { try await tokens.verify(parts.joined(separator: ".")) }

        let foreign = try await service(key: SigningKey.generate()).issue(for: user)
        await #expect(throws: AuthError.self) { try await tokens.verify(foreign) }

        let header = base64URL(Array(#"{"alg":"none","typ":"JWT"}"#.utf8))
        await #expect(throws: AuthError.self) { try await tokens.verify("\(header).\(parts[1]).") }

        for garbage in ["", "a.b", "a.b.c", "....", String(repeating: "x", count: 10_000)] {
            await #expect(throws: AuthError.self) { try await tokens.verify(garbage) }
        }
    }

    @Test("the signing key file is created once, private, and reused")
    func keyFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-key-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("signing-key").path
        let first = try SigningKey.loadOrCreate(at: path)
        let second = try SigningKey.loadOrCreate(at: path)
        #expect(first.bytes == second.bytes)
        #expect(first.id == second.id)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(throws: AuthError.self) { try SigningKey(base64: "c2hvcnQ=") }
    }

    private func base64(_ text: Substring) -> String {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.count % 4 != 0 { standard += "=" }
        return standard
    }

    private func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
