import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Access tokens revoked before they expire: by token id (`jti`), and by the
/// refresh-token family (`sid`) they were issued from.
///
/// Each entry is kept until no token it names can still be current, then forgotten, so
/// the set stays as small as the tokens alive.
public final class Revocations: Sendable {
    private struct State {
        /// Token id → when the token expires.
        var tokens: [String: Date] = [:]
        /// Family id → when the last token issued from it expires at the latest.
        var sessions: [String: Date] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// Revokes the token `id` until it expires.
    public func revoke(tokenID id: String, until expiry: Date) {
        state.withLock { $0.tokens[id] = max(expiry, $0.tokens[id] ?? expiry) }
    }

    /// Revokes every token of the family `id` issued before `until`.
    public func revoke(session id: String, until expiry: Date) {
        state.withLock { $0.sessions[id] = max(expiry, $0.sessions[id] ?? expiry) }
    }

    public func isRevoked(_ claims: AccessClaims) -> Bool {
        state.withLock { state in
            if state.tokens[claims.id] != nil { return true }
            guard let session = claims.session else { return false }
            return state.sessions[session] != nil
        }
    }

    /// Forgets entries whose tokens have all expired by `now`.
    public func prune(at now: Date) {
        state.withLock { state in
            state.tokens = state.tokens.filter { $0.value > now }
            state.sessions = state.sessions.filter { $0.value > now }
        }
    }

    /// How many entries are held.
    public var count: Int { state.withLock { $0.tokens.count + $0.sessions.count } }
}
