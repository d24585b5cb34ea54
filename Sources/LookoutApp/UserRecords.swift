import LookoutAuth
import LookoutJSON
import LookoutPersistence

/// The users as storage keeps them: a record `{"role", "password_hash"}` per email, of
/// kind `users`. Login reads them here at each attempt; `lookout user` changes them.
struct UserRecords: Sendable {
    static let kind = "users"

    let persistence: any Persistence

    func user(_ email: String) throws -> User? {
        let email = User.normalize(email)
        return try persistence.record(Self.kind, key: email).map { try Self.user(email, $0) }
    }

    /// Every user, by email.
    func all() throws -> [User] {
        try persistence.records(Self.kind).sorted { $0.key < $1.key }.map { try Self.user($0.key, $0.value) }
    }

    func put(_ user: User) throws {
        try persistence.putRecord(Self.record(of: user), kind: Self.kind, key: user.email)
    }

    func remove(_ email: String) throws {
        try persistence.putRecord(nil, kind: Self.kind, key: User.normalize(email))
    }

    static func record(of user: User) -> JSONValue {
        ["role": .string(user.role.rawValue), "password_hash": .string(user.passwordHash.description)]
    }

    static func user(_ email: String, _ record: JSONValue) throws(StartupError) -> User {
        guard let roleName = record["role"]?.stringValue, let role = User.Role(rawValue: roleName),
            let hashText = record["password_hash"]?.stringValue, let hash = try? PasswordHash(hashText)
        else { throw StartupError("stored user \(email) is damaged") }
        return User(email: email, role: role, passwordHash: hash)
    }
}
