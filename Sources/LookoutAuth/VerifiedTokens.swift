import Synchronization

/// Tokens whose signature and header already checked out, by their exact text, so a
/// client presenting the same token again — every request, every woken long-poll — costs
/// a dictionary lookup instead of a signature check (an Ed25519 verify is ~100 µs here).
///
/// Only what cannot change for a given text is remembered: that it parses and is signed
/// by a key of the ring. Times and revocation are checked at every use. A change of the
/// key ring forgets everything, since a dropped key must stop verifying at once.
///
/// Bounded: two generations of at most `capacity` entries each; when the young one is
/// full it becomes the old one and the previous old one is dropped, so recently used
/// tokens stay and memory stays under `2 × capacity` entries.
final class VerifiedTokens: Sendable {
    private struct State {
        var ring: Int
        var young: [String: AccessClaims] = [:]
        var old: [String: AccessClaims] = [:]
    }

    private let capacity: Int
    private let state: Mutex<State>

    init(capacity: Int = 10_000) {
        self.capacity = capacity
        state = Mutex(State(ring: 0))
    }

    /// The claims remembered for `token` under the ring version `ring`.
    func claims(for token: String, ring: Int) -> AccessClaims? {
        state.withLock { state in
            guard state.ring == ring else { return nil }
            if let claims = state.young[token] { return claims }
            guard let claims = state.old[token] else { return nil }
            insert(token, claims, into: &state)
            return claims
        }
    }

    func remember(_ token: String, _ claims: AccessClaims, ring: Int) {
        state.withLock { state in
            if state.ring != ring {
                state = State(ring: ring)
            }
            insert(token, claims, into: &state)
        }
    }

    var count: Int { state.withLock { $0.young.count + $0.old.count } }

    private func insert(_ token: String, _ claims: AccessClaims, into state: inout State) {
        if state.young.count >= capacity {
            state.old = state.young
            state.young = [:]
        }
        state.young[token] = claims
    }
}
