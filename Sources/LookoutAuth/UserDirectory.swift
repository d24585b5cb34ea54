/// The users who can log in, looked up by email as they log in.
public struct UserDirectory: Sendable {
    private let lookup: @Sendable (_ email: String) throws -> User?
    /// Checked when the email is unknown, so that a miss costs as much as a wrong password
    /// and response time does not reveal which emails exist.
    private let decoy: PasswordHash

    /// Users found by `lookup` (given a normalized email) at each login, so users added,
    /// removed or given a new password while the server runs count at once.
    /// - Parameter decoyCost: a hash whose scrypt parameters an unknown email's decoy
    ///   check uses; the defaults of ``PasswordHash/make(password:logRounds:blockSize:parallelism:)`` when nil.
    public init(decoyCost: PasswordHash? = nil, lookup: @escaping @Sendable (_ email: String) throws -> User?) {
        self.lookup = lookup
        decoy = PasswordHash.decoy(costing: decoyCost)
    }

    /// A fixed set of users.
    /// - Throws: ``AuthError/invalidConfiguration(_:)`` when two users share an email.
    public init(_ users: [User]) throws(AuthError) {
        var byEmail: [String: User] = [:]
        for user in users {
            guard byEmail.updateValue(user, forKey: user.email) == nil else {
                throw .invalidConfiguration("user \(user.email) is listed twice")
            }
        }
        self.init(decoyCost: users.first?.passwordHash) { [byEmail] in byEmail[$0] }
    }

    public func user(email: String) throws -> User? {
        try lookup(User.normalize(email))
    }

    /// The user with this email and password.
    /// - Throws: ``AuthError/invalidCredentials`` for an unknown email or a wrong password,
    ///   after the same amount of work either way; the lookup's own errors as they are.
    /// - Warning: costs one scrypt computation; call it off latency-sensitive threads.
    public func authenticate(email: String, password: String) throws -> User {
        guard let user = try user(email: email) else {
            _ = decoy.matches(password)
            throw AuthError.invalidCredentials
        }
        guard user.passwordHash.matches(password) else { throw AuthError.invalidCredentials }
        return user
    }
}
