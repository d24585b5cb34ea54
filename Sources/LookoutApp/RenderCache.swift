import LookoutStore
import Synchronization

/// A view rendered from one snapshot: its body, its own headers and what it read.
struct RenderedView: Sendable {
    let body: [UInt8]
    /// Headers that belong to the content, such as `Link` and `X-Total-Count`.
    var headers: [(String, String)] = []
    /// Headers for caches (`Vary`, `Cache-Control`), sent with a 304 for the view too.
    var caching: [(String, String)] = []
    let reads: ReadSet
    /// The snapshot's revision; the view is current while the store is at it.
    let revision: UInt64
    /// The cache key it is rendered under, which names its bytes at `revision` for every
    /// request with that key (grant and ``RequestContext/viewKey``); nil when not cached.
    var sharedAs: String? = nil

    /// Whether a client holding `other` would see nothing new in this one.
    func hasSameContent(as other: RenderedView) -> Bool {
        body == other.body && headers.elementsEqual(other.headers) { $0 == $1 }
    }
}

/// The latest rendering of each view, reused while the store stays at the revision it
/// was rendered from (every client asking for the same page shares one rendering).
///
/// Holds at most `capacity` views, one per key, each replaced when the store moves on. A
/// new key finds room by evicting views of older revisions; when every view is current
/// it is rendered but not kept, so clients asking for ever new keys cannot grow it.
final class RenderCache<Key: Hashable & Sendable>: Sendable {
    private let entries = Mutex<[Key: RenderedView]>([:])
    let capacity: Int

    init(capacity: Int = 1024) {
        self.capacity = capacity
    }

    /// The view for `key` at `snapshot`, rendering it when the cached one is older.
    /// Errors from `render` are passed on and nothing is kept.
    func view(
        for key: Key,
        at snapshot: StoreSnapshot,
        render: (StoreSnapshot) throws -> RenderedView
    ) rethrows -> RenderedView {
        if let cached = entries.withLock({ $0[key] }), cached.revision == snapshot.revision {
            return cached
        }
        // Rendered outside the lock; two threads may both render a missing entry once.
        let view = try render(snapshot)
        entries.withLock { entries in
            if let existing = entries[key] {
                if existing.revision <= view.revision { entries[key] = view }
                return
            }
            if entries.count >= capacity {
                entries = entries.filter { $0.value.revision >= view.revision }
            }
            if entries.count < capacity { entries[key] = view }
        }
        return view
    }

    /// Views kept right now.
    var count: Int { entries.withLock { $0.count } }
}
