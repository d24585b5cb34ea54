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
    /// request with that key; nil when not cached.
    var sharedAs: ViewCacheKey? = nil

    /// Whether a client holding `other` would see nothing new in this one.
    func hasSameContent(as other: RenderedView) -> Bool {
        body == other.body && headers.elementsEqual(other.headers) { $0 == $1 }
    }
}

/// What a shared rendering is kept under: the grant it was rendered for and the
/// request's ``RequestContext/viewKey``. Requests with equal keys see the same bytes at a
/// revision.
///
/// Two parts, not one string: joined, they were a new string (an allocation, a copy and a
/// free) every time a view was rendered or found, which is every poll a fan-out wakes.
struct ViewCacheKey: Hashable, Sendable {
    let grant: ReadGrant
    let view: String
}

/// What holds for one revision of the store and is kept for it (``RevisionCache``).
protocol RevisionBound: Sendable {
    /// The revision it holds for: it is current while the store is at it.
    var revision: UInt64 { get }
    /// About how many bytes keeping it holds.
    var size: Int { get }
}

extension RenderedView: RevisionBound {
    /// Its body, and its read set (kept for the long-polls that wait on it), which for a
    /// list over many documents is the larger part.
    var size: Int {
        body.count + reads.keys.count * MemoryLayout<StoreKey>.stride + 256
    }
}

/// The renderings of the store's latest revision, by key (every client asking for the
/// same page at that revision shares one rendering).
typealias RenderCache<Key: Hashable & Sendable> = RevisionCache<Key, RenderedView>

/// Values made from the store's latest revision, by key.
///
/// A value is reused only at the revision it was made from, so when a value of a newer
/// revision arrives, every value kept is stale: they are all dropped at once, outside the
/// lock. Holds at most `capacity` values of at most `byteCapacity` bytes in all; when full,
/// a value is made but not kept, so clients asking for ever new keys cannot grow it (1,024
/// cold list views over 20,000 documents, each with its read set, held 1.3 GB), and a
/// miss never scans it (with ten thousand polls on ten thousand documents, a sweep per
/// miss was most of a wake).
final class RevisionCache<Key: Hashable & Sendable, Value: RevisionBound>: Sendable {
    private struct Generation {
        var revision: UInt64 = 0
        var values: [Key: Value] = [:]
        var bytes = 0
    }

    private let generation = Mutex(Generation())
    let capacity: Int
    let byteCapacity: Int

    init(capacity: Int = 1024, byteCapacity: Int = 64 << 20) {
        self.capacity = capacity
        self.byteCapacity = byteCapacity
    }

    /// The value kept for `key` at `revision`, if any.
    func value(for key: Key, at revision: UInt64) -> Value? {
        generation.withLock { $0.revision == revision ? $0.values[key] : nil }
    }

    /// Keeps `value` for `key` at its revision, unless a newer revision is kept already
    /// or there is no room; a newer revision drops every value kept.
    func keep(_ value: Value, for key: Key) {
        let stale: [Key: Value]? = generation.withLock { generation in
            let size = value.size
            if value.revision > generation.revision {
                defer {
                    generation =
                        size <= byteCapacity
                        ? Generation(revision: value.revision, values: [key: value], bytes: size)
                        : Generation(revision: value.revision)
                }
                return generation.values
            }
            guard value.revision == generation.revision else { return nil }
            let replaced = generation.values[key]?.size
            let count = generation.values.count - (replaced == nil ? 0 : 1)
            let bytes = generation.bytes - (replaced ?? 0)
            if count < capacity, bytes + size <= byteCapacity {
                generation.values[key] = value
                generation.bytes = bytes + size
            }
            return nil
        }
        _ = stale  // released here, after the lock
    }

    /// Values kept right now.
    var count: Int { generation.withLock { $0.values.count } }
}

extension RevisionCache where Value == RenderedView {
    /// The view for `key` at `snapshot`, rendering it when none is kept for that revision.
    /// Errors from `render` are passed on and nothing is kept.
    func view(
        for key: Key,
        at snapshot: StoreSnapshot,
        render: (StoreSnapshot) throws -> RenderedView
    ) rethrows -> RenderedView {
        if let cached = value(for: key, at: snapshot.revision) { return cached }
        // Rendered outside the lock; two threads may both render a missing entry once.
        let view = try render(snapshot)
        keep(view, for: key)
        return view
    }
}
