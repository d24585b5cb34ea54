import LookoutAuth
import Testing

@Suite("Passwords")
struct PasswordTests {
    @Test("a PHC scrypt string made by Python's hashlib verifies here")
    func interoperable() throws {
        // hashlib.scrypt(b"demo-password", salt=..., n=2**15, r=8, p=1, dklen=32), as in the demo data.
        let hash = try PasswordHash(
            "$scrypt$ln=15,r=8,p=1$4gEKGwqPGqtc7cedSLcbgw$yOHn8B/WPF657Of0FkJibqECKMbQJkg4ri+yEfGyQDU")
        #expect(hash.matches("demo-password"))
        #expect(!hash.matches("demo-passwordx"))
        #expect(!hash.matches(""))
        #expect(
            hash.description
                == "$scrypt$ln=15,r=8,p=1$4gEKGwqPGqtc7cedSLcbgw$yOHn8B/WPF657Of0FkJibqECKMbQJkg4ri+yEfGyQDU")
    }

    @Test("a made hash round-trips through its text, including non-ASCII passwords")
    func make() throws {
        let hash = try PasswordHash.make(password: "pässwörd-寿司", logRounds: 4)
        let parsed = try PasswordHash(hash.description)
        #expect(parsed == hash)
        #expect(parsed.matches("pässwörd-寿司"))
        #expect(!parsed.matches("passwort-寿司"))
        #expect(throws: AuthError.self) { try PasswordHash.make(password: "", logRounds: 4) }
    }

    @Test(
        "malformed hash strings are refused",
        arguments: [
            "", "scrypt", "$argon2id$v=19$x$y", "$scrypt$ln=99,r=8,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
            "$scrypt$ln=4$c2FsdHNhbHQ$aGFzaA",
        ])
    func malformed(_ text: String) {
        #expect(throws: AuthError.self) { try PasswordHash(text) }
    }

    @Test("the directory finds users case-insensitively and refuses unknown emails and wrong passwords alike")
    func directory() throws {
        let users = try UserDirectory([
            User(
                email: "a@example.com", role: .editor, passwordHash: try PasswordHash.make(password: "pw", logRounds: 4)
            )
        ])
        #expect(try users.authenticate(email: " A@Example.com ", password: "pw").role == .editor)
        #expect(throws: AuthError.invalidCredentials) {
            try users.authenticate(email: "a@example.com", password: "nope")
        }
        #expect(throws: AuthError.invalidCredentials) { try users.authenticate(email: "b@example.com", password: "pw") }
    }
}
