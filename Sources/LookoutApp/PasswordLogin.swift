import LookoutAuth

/// A password check as both login endpoints make it: throttled per account and per
/// client address, the scrypt work off the task threads.
struct PasswordLogin: Sendable {
    let users: UserDirectory
    /// Failed logins slow down, then lock the account and the client address for a while.
    let throttle: LoginThrottle
    /// Password checks (scrypt) run here, as many at once as there are cores.
    let passwords = BlockingQueue.perCore(label: "lookout.passwords")

    /// The user with this email and password.
    /// - Throws: 400 `invalid_body` for text that cannot be an email (control characters,
    ///   too long), before anything is looked up or counted; 429 `too_many_attempts` while
    ///   the account or address is locked, without a password check;
    ///   ``AuthError/invalidCredentials`` after a delay that grows with repeated failures;
    ///   a storage error as it is.
    func authenticate(email: String, password: String, from address: String) async throws -> User {
        guard User.isValidEmail(email) else {
            throw APIError.badRequest(
                "invalid_body",
                "The email must be at most \(User.maxEmailBytes) bytes, without spaces or control characters.")
        }
        do {
            try throttle.check(email: email, address: address)
        } catch {
            throw APIError.tooManyAttempts(retryAfter: error.retryAfter)
        }
        let user: User
        do {
            user = try await passwords.run { [users] in try users.authenticate(email: email, password: password) }
        } catch AuthError.invalidCredentials {
            // The 401 is held a while after repeated failures; a held request costs no thread.
            let delay = throttle.failed(email: email, address: address)
            if delay > 0 { try await Task.sleep(for: .seconds(delay)) }
            throw AuthError.invalidCredentials
        }
        throttle.succeeded(email: email)
        return user
    }
}
