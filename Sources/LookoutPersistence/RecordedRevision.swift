import LookoutStore

/// Where ``SQLitePersistence`` keeps the revision of the last recorded write.
///
/// Every transaction leaves its last revision in a row it wrote or in `meta`: a
/// membership row takes its entry's revision, and a document row holds the revisions
/// that created it, last changed its field names and last changed each field, so a
/// write that changes a document carries its revision there. Only a transaction whose
/// rows carry less writes `meta`'s revision row as well: one that deletes a document
/// without changing a membership, which the store does not make today. No row holds a
/// revision above the last, so the last is the largest of `meta`'s and every row's.
///
/// Writing `meta` at every commit put a second page into the log for each write: a
/// Lookout-shaped commit took 153–166 µs p50 with it and 133–140 µs without it, in
/// Python on this disk (Benchmarks/README.md, stop 47).
struct RecordedRevision: Sendable {
    let revision: UInt64
    /// The writing connection's `PRAGMA data_version` when `revision` was recorded or
    /// loaded. It changes only when another connection commits to the file, so while
    /// it stays the same nobody else has recorded a revision since. Nil when the
    /// connection held the file's ``ServingLock``, which leaves it the only writer of
    /// revisions.
    let dataVersion: Int64?

    /// The highest revision the rows written for `entries` carry.
    static func carried(by entries: [JournalEntry]) -> UInt64 {
        var carried: UInt64 = 0
        for entry in entries {
            if !entry.memberships.isEmpty { carried = max(carried, entry.revision) }
            for change in entry.documents {
                if let document = change.document { carried = max(carried, Self.carried(by: document)) }
            }
        }
        return carried
    }

    /// The last recorded revision, from `meta`'s revision row and every stored row.
    static func latest(meta: UInt64, collections: [CollectionImage]) -> UInt64 {
        var latest = meta
        for collection in collections {
            latest = max(latest, collection.membershipRevision)
            for document in collection.documents { latest = max(latest, carried(by: document)) }
        }
        return latest
    }

    private static func carried(by document: DocumentImage) -> UInt64 {
        max(document.created, document.fieldNamesRevision, document.revisions.values.max() ?? 0)
    }
}
