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

    /// Longest email accepted, in UTF-8 bytes (RFC 5321's limit on a path is 256 with
    /// its angle brackets).
    public static let maxEmailBytes = 254

    /// Whether `email`, normalized, can name a user: not empty, at most ``maxEmailBytes``
    /// bytes, and free of control, format and separator characters (spaces included).
    ///
    /// Emails reach the database and the token's `sub`: a NUL or a control character
    /// there could be cut off by one layer and kept by another (a lookup stopping at NUL
    /// would find another user than the one the throttle counts), so such text never
    /// names a user.
    public static func isValidEmail(_ email: String) -> Bool {
        let normalized = normalize(email)
        guard !normalized.isEmpty, normalized.utf8.count <= maxEmailBytes else { return false }
        return normalized.unicodeScalars.allSatisfy { scalar in
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .spaceSeparator, .surrogate,
                .privateUse, .unassigned:
                false
            default: true
            }
        }
    }

    /// Emails compare case-insensitively and without surrounding spaces.
    public static func normalize(_ email: String) -> String {
        var trimmed = Substring(email)
        while trimmed.first?.isWhitespace == true { trimmed.removeFirst() }
        while trimmed.last?.isWhitespace == true { trimmed.removeLast() }
        return trimmed.lowercased()
    }
}
