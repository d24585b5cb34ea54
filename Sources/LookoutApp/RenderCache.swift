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

/// The renderings of the store's latest revision, by key (every client asking for the
/// same page at that revision shares one rendering).
///
/// A view is reused only at the revision it was rendered from, so when a rendering of a
/// newer revision arrives, every view kept is stale: they are all dropped at once, outside
/// the lock. Holds at most `capacity` views; when full, a view is rendered but not kept,
/// so clients asking for ever new keys cannot grow it, and a miss never scans it (with ten
/// thousand polls on ten thousand documents, a sweep per miss was most of a wake).
final class RenderCache<Key: Hashable & Sendable>: Sendable {
    private struct Generation {
        var revision: UInt64 = 0
        var views: [Key: RenderedView] = [:]
    }

    private let generation = Mutex(Generation())
    let capacity: Int

    init(capacity: Int = 1024) {
        self.capacity = capacity
    }

    /// The view for `key` at `snapshot`, rendering it when none is kept for that revision.
    /// Errors from `render` are passed on and nothing is kept.
    func view(
        for key: Key,
        at snapshot: StoreSnapshot,
        render: (StoreSnapshot) throws -> RenderedView
    ) rethrows -> RenderedView {
        let cached = generation.withLock { $0.revision == snapshot.revision ? $0.views[key] : nil }
        if let cached { return cached }
        // Rendered outside the lock; two threads may both render a missing entry once.
        let view = try render(snapshot)
        let stale: [Key: RenderedView]? = generation.withLock { generation in
            if view.revision > generation.revision {
                defer { generation = Generation(revision: view.revision, views: [key: view]) }
                return generation.views
            }
            if view.revision == generation.revision, generation.views.count < capacity {
                generation.views[key] = view
            }
            return nil
        }
        _ = stale  // released here, after the lock
        return view
    }

    /// Views kept right now.
    var count: Int { generation.withLock { $0.views.count } }
}
