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
        var young: [TokenText: AccessClaims] = [:]
        var old: [TokenText: AccessClaims] = [:]
    }

    /// A token's text as a key: compared in full, hashed by its last ``hashedBytes`` bytes.
    ///
    /// Those are the end of its signature, which nobody without a signing key can choose,
    /// and only tokens whose signature verified are stored, so no client can make stored
    /// keys collide. Hashing the whole text (~250 bytes) was ~1,900 instructions per
    /// lookup, once per write and per request with a token (callgrind, Benchmarks/README.md
    /// stop 52); a text that is not stored costs no more than before to look up and miss.
    struct TokenText: Hashable {
        static let hashedBytes = 32
        let text: String

        static func == (left: TokenText, right: TokenText) -> Bool { left.text == right.text }

        func hash(into hasher: inout Hasher) {
            var text = text  // withUTF8 is mutating; a native string is not copied
            text.withUTF8 { bytes in
                hasher.combine(
                    bytes: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes).suffix(Self.hashedBytes)))
            }
        }
    }

    private let capacity: Int
    private let state: Mutex<State>

    init(capacity: Int = 10_000) {
        self.capacity = capacity
        state = Mutex(State(ring: 0))
    }

    /// The claims remembered for `token` under the ring version `ring`.
    func claims(for token: String, ring: Int) -> AccessClaims? {
        let token = TokenText(text: token)
        return state.withLock { state in
            guard state.ring == ring else { return nil }
            if let claims = state.young[token] { return claims }
            guard let claims = state.old[token] else { return nil }
            insert(token, claims, into: &state)
            return claims
        }
    }

    func remember(_ token: String, _ claims: AccessClaims, ring: Int) {
        let token = TokenText(text: token)
        state.withLock { state in
            if state.ring != ring {
                state = State(ring: ring)
            }
            insert(token, claims, into: &state)
        }
    }

    var count: Int { state.withLock { $0.young.count + $0.old.count } }

    private func insert(_ token: TokenText, _ claims: AccessClaims, into state: inout State) {
        if state.young.count >= capacity {
            state.old = state.young
            state.young = [:]
        }
        state.young[token] = claims
    }
}
