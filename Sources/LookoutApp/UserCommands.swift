import LookoutAuth

/// What `lookout user add|list|remove|passwd` do to the stored users. Changes count at
/// once, even while the server runs: login looks users up at each attempt.
public enum UserCommands {
    /// Adds a user with a new scrypt hash of `password`.
    /// - Throws: ``StartupError`` when the email is taken (use ``passwd(_:password:in:)``),
    ///   the password is empty, or there is no database yet.
    public static func add(
        _ email: String,
        role: User.Role,
        password: String,
        in configuration: AppConfiguration
    ) throws {
        let users = try records(configuration)
        let email = User.normalize(email)
        guard email.contains("@"), User.isValidEmail(email) else {
            throw StartupError(
                "'\(email)' is not an email: at most \(User.maxEmailBytes) bytes, no spaces or control characters")
        }
        guard try users.user(email) == nil else {
            throw StartupError("\(email) is already a user; use `lookout user passwd` to change the password")
        }
        try users.put(User(email: email, role: role, passwordHash: try hash(password)))
    }

    /// Gives a user a new password, keeping the role.
    public static func passwd(_ email: String, password: String, in configuration: AppConfiguration) throws {
        let users = try records(configuration)
        guard let user = try users.user(email) else { throw StartupError("no user \(User.normalize(email))") }
        try users.put(User(email: user.email, role: user.role, passwordHash: try hash(password)))
    }

    /// Gives a user another role. Their refresh tokens then give tokens of no more than it.
    public static func setRole(_ email: String, role: User.Role, in configuration: AppConfiguration) throws {
        let users = try records(configuration)
        guard let user = try users.user(email) else { throw StartupError("no user \(User.normalize(email))") }
        try users.put(User(email: user.email, role: role, passwordHash: user.passwordHash))
    }

    public static func remove(_ email: String, in configuration: AppConfiguration) throws {
        let users = try records(configuration)
        guard try users.user(email) != nil else { throw StartupError("no user \(User.normalize(email))") }
        try users.remove(email)
    }

    /// Every user's email and role, by email.
    public static func list(in configuration: AppConfiguration) throws -> [(email: String, role: User.Role)] {
        try records(configuration).all().map { ($0.email, $0.role) }
    }

    private static func records(_ configuration: AppConfiguration) throws -> UserRecords {
        UserRecords(persistence: try DataCommands.openExisting(configuration))
    }

    private static func hash(_ password: String) throws -> PasswordHash {
        do {
            return try PasswordHash.make(password: password)
        } catch {
            throw StartupError("\(error)")
        }
    }
}
