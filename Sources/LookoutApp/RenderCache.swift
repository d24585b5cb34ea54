import Synchronization

/// Rendered response bodies of read-only views, made once and shared.
///
/// The store does not change while the service runs yet, so an entry never goes stale.
/// Keys must come from a bounded set (collections, existing pages): a client must not be
/// able to grow the cache by asking for new keys.
final class RenderCache<Key: Hashable & Sendable>: Sendable {
    private let entries = Mutex<[Key: [UInt8]]>([:])

    /// The cached body for `key`, or what `render` makes of it, kept when `render` says so.
    /// - Parameter render: returns the body, or nil when there is nothing to render, and
    ///   whether to keep it.
    func body(for key: Key, render: () -> (body: [UInt8], keep: Bool)?) -> [UInt8]? {
        if let body = entries.withLock({ $0[key] }) {
            return body
        }
        // Rendered outside the lock; two threads may both render a missing entry once.
        guard let rendered = render() else { return nil }
        if rendered.keep {
            entries.withLock { $0[key] = rendered.body }
        }
        return rendered.body
    }
}
