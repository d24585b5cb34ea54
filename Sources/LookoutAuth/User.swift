/// Someone who can log in.
public struct User: Sendable, Equatable {
    /// What a user may do.
    public enum Role: String, Sendable, CaseIterable {
        /// Reads anything public and what its token allows.
        case reader
        /// Reads and writes documents.
        case editor
        /// Everything, including managing users.
        case admin
    }

    /// Lowercased email; also the token subject.
    public let email: String
    public let role: Role
    public let passwordHash: PasswordHash

    public init(email: String, role: Role, passwordHash: PasswordHash) {
        self.email = User.normalize(email)
        self.role = role
        self.passwordHash = passwordHash
    }

    /// Emails compare case-insensitively and without surrounding spaces.
    public static func normalize(_ email: String) -> String {
        var trimmed = Substring(email)
        while trimmed.first?.isWhitespace == true { trimmed.removeFirst() }
        while trimmed.last?.isWhitespace == true { trimmed.removeLast() }
        return trimmed.lowercased()
    }
}
