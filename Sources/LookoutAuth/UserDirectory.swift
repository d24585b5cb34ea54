/// The users who can log in, by email.
public struct UserDirectory: Sendable {
    private let users: [String: User]
    /// Checked when the email is unknown, so that a miss costs as much as a wrong password
    /// and response time does not reveal which emails exist.
    private let decoy: PasswordHash

    /// - Throws: ``AuthError/invalidConfiguration(_:)`` when two users share an email.
    public init(_ users: [User]) throws(AuthError) {
        var byEmail: [String: User] = [:]
        for user in users {
            guard byEmail.updateValue(user, forKey: user.email) == nil else {
                throw .invalidConfiguration("user \(user.email) is listed twice")
            }
        }
        self.users = byEmail
        decoy = PasswordHash.decoy(costing: users.first?.passwordHash)
    }

    public var count: Int { users.count }

    public func user(email: String) -> User? {
        users[User.normalize(email)]
    }

    /// The user with this email and password.
    /// - Throws: ``AuthError/invalidCredentials`` for an unknown email or a wrong password,
    ///   after the same amount of work either way.
    /// - Warning: costs one scrypt computation; call it off latency-sensitive threads.
    public func authenticate(email: String, password: String) throws(AuthError) -> User {
        guard let user = user(email: email) else {
            _ = decoy.matches(password)
            throw .invalidCredentials
        }
        guard user.passwordHash.matches(password) else { throw .invalidCredentials }
        return user
    }
}
