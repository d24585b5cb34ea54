import LookoutStore
import Synchronization

/// A view rendered from one snapshot: its body and what it read.
struct RenderedView: Sendable {
    let body: [UInt8]
    let reads: ReadSet
    /// The snapshot's revision; the view is current while the store is at it.
    let revision: UInt64
}

/// The latest rendering of each view, reused while the store stays at the revision it
/// was rendered from (every client asking for the same page shares one rendering).
///
/// Keys must come from a bounded set (collections, existing pages): a client must not be
/// able to grow the cache by asking for new keys. Each key holds one entry, replaced when
/// the store moves on.
final class RenderCache<Key: Hashable & Sendable>: Sendable {
    private let entries = Mutex<[Key: RenderedView]>([:])

    /// The view for `key` at `snapshot`, rendering it when the cached one is older.
    /// - Parameter render: records its reads and returns the body, or nil when there is
    ///   nothing to render, and whether to keep it.
    func view(
        for key: Key,
        at snapshot: StoreSnapshot,
        render: (inout ReadSet) -> (body: [UInt8], keep: Bool)?
    ) -> RenderedView? {
        if let cached = entries.withLock({ $0[key] }), cached.revision == snapshot.revision {
            return cached
        }
        // Rendered outside the lock; two threads may both render a missing entry once.
        var reads = ReadSet()
        guard let rendered = render(&reads) else { return nil }
        let view = RenderedView(body: rendered.body, reads: reads, revision: snapshot.revision)
        if rendered.keep {
            entries.withLock { entries in
                if (entries[key]?.revision ?? 0) <= view.revision { entries[key] = view }
            }
        }
        return view
    }
}
