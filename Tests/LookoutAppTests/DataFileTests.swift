import LookoutDataFile
import LookoutJSON
import Testing

@Suite("Data file")
struct DataFileTests {
    static let hash = "$scrypt$ln=15,r=8,p=1$4gEKGwqPGqtc7cedSLcbgw$yOHn8B/WPF657Of0FkJibqECKMbQJkg4ri+yEfGyQDU"

    static func file(email: String) -> JSONValue {
        let users: [JSONValue] = ["ok@example.com", email].map { email in
            .object(["email": .string(email), "password_hash": .string(hash)])
        }
        return .object(["users": .array(users)])
    }

    @Test("a user's email with a control character, a space or over 254 bytes is refused, naming the entry")
    func userEmails() throws {
        let good = try DataFile(json: Self.file(email: "second@example.com"))
        #expect(good.users.map(\.email) == ["ok@example.com", "second@example.com"])
        for email in ["a\u{0}b@example.com", "a b@example.com", "", "x@" + String(repeating: "e", count: 253)] {
            #expect(throws: DataFileError.self, "\(email.debugDescription)") {
                try DataFile(json: Self.file(email: email))
            }
            do {
                _ = try DataFile(json: Self.file(email: email))
            } catch {
                #expect(error.description.hasPrefix("users[1].email"), "\(error)")
            }
        }
    }
}
