/// What a journal shared with other writers (several instances on one database) throws
/// when the store's snapshot is behind it: other writers committed `committed` first,
/// so the entry offered does not follow the journal's last revision.
///
/// ``Store`` applies `committed` (waking the waiters on what they changed, as a local
/// write would) and plans the write again against the newer state: an `If-Match` that
/// has gone stale is refused then, and a created document gets an id free in it.
public protocol JournalConflict: Error {
    /// The entries committed after the store's revision, in revision order, starting at
    /// the store's revision + 1; empty when the error is of another kind.
    var committed: [JournalEntry] { get }
}
