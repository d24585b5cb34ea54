import LookoutJSON

/// A store's whole state, as storage keeps it and a store restarts from: everything a
/// cursor depends on (the epoch, every revision) survives a restart.
public struct StoreImage: Sendable, Equatable {
    public var epoch: String
    /// The revision of the last committed write.
    public var revision: UInt64
    public var collections: [CollectionImage]

    public init(epoch: String, revision: UInt64, collections: [CollectionImage]) {
        self.epoch = epoch
        self.revision = revision
        self.collections = collections
    }

    /// This image after `entry`: what storage must hold once it has recorded it.
    /// Costs O(log n) per document changed: documents stay sorted by id, so each change
    /// is found by binary search instead of scanning and re-sorting the collection.
    public mutating func apply(_ entry: JournalEntry) {
        revision = entry.revision
        for name in entry.memberships {
            let index = collections.partitioningIndex { $0.name >= name }
            if index < collections.endIndex, collections[index].name == name {
                collections[index].membershipRevision = entry.revision
            } else {
                collections.insert(
                    CollectionImage(name: name, membershipRevision: entry.revision, documents: []), at: index)
            }
        }
        for change in entry.documents {
            let collection = collections.partitioningIndex { $0.name >= change.collection }
            guard collection < collections.endIndex, collections[collection].name == change.collection else { continue }
            let position = collections[collection].documents.partitioningIndex { $0.id >= change.id }
            let found =
                position < collections[collection].documents.endIndex
                && collections[collection].documents[position].id == change.id
            switch (found, change.document) {
            case (true, let document?): collections[collection].documents[position] = document
            case (true, nil): collections[collection].documents.remove(at: position)
            case (false, let document?): collections[collection].documents.insert(document, at: position)
            case (false, nil): break
            }
        }
    }
}

/// One collection's documents and the revision that last changed its membership.
public struct CollectionImage: Sendable, Equatable {
    public var name: String
    public var membershipRevision: UInt64
    /// By id.
    public var documents: [DocumentImage]

    public init(name: String, membershipRevision: UInt64, documents: [DocumentImage]) {
        self.name = name
        self.membershipRevision = membershipRevision
        self.documents = documents
    }
}

/// One document with the revisions that last changed each of its fields.
public struct DocumentImage: Sendable, Equatable {
    /// All fields, `id` first.
    public var fields: JSONObject
    /// Per field name; a field not listed has not changed since the document was created.
    public var revisions: [String: UInt64]
    public var created: UInt64
    /// When a field that is not ignored was last added or removed.
    public var fieldNamesRevision: UInt64

    public init(fields: JSONObject, revisions: [String: UInt64], created: UInt64, fieldNamesRevision: UInt64) {
        self.fields = fields
        self.revisions = revisions
        self.created = created
        self.fieldNamesRevision = fieldNamesRevision
    }

    public var id: Int { fields["id"]?.intValue ?? 0 }
}

/// One committed write as storage records it: the revision, and the state after it of
/// every document and membership it changed.
public struct JournalEntry: Sendable, Equatable {
    public struct DocumentChange: Sendable, Equatable {
        public let collection: String
        public let id: Int
        /// The document after the write; nil when it was deleted.
        public let document: DocumentImage?

        public init(collection: String, id: Int, document: DocumentImage?) {
            self.collection = collection
            self.id = id
            self.document = document
        }
    }

    public let revision: UInt64
    /// Collections whose membership changed (and now has `revision`), or that are new.
    public let memberships: [String]
    public let documents: [DocumentChange]

    public init(revision: UInt64, memberships: [String], documents: [DocumentChange]) {
        self.revision = revision
        self.memberships = memberships
        self.documents = documents
    }
}

/// Where a store makes its writes durable. ``Store`` records each write that changes
/// something, in revision order, under its write lock, and publishes the write (and
/// acknowledges it) only after the journal returns. Several writes may be recorded in one
/// call: a group commit, durable together, at the cost of one.
public protocol StoreJournal: Sendable {
    /// Makes `entries` (consecutive revisions, in order) durable together, or throws and
    /// keeps none of them.
    func record(_ entries: [JournalEntry]) throws

    /// Makes the entries `write` returns durable together, or nothing when it returns none.
    ///
    /// A journal other writers share (several instances on one database) holds its
    /// write lock while `write` runs, and gives it the entries the others committed
    /// after `revision`, in order, for the store to apply before planning its own on
    /// top: so the entries follow them and no write is planned on a stale state.
    func record(after revision: UInt64, _ write: ([JournalEntry]) -> [JournalEntry]) throws
}

extension StoreJournal {
    /// For a journal only one store writes: nobody else commits.
    public func record(after revision: UInt64, _ write: ([JournalEntry]) -> [JournalEntry]) throws {
        let entries = write([])
        if !entries.isEmpty { try record(entries) }
    }

    /// Makes one entry durable.
    public func record(_ entry: JournalEntry) throws {
        try record([entry])
    }
}

extension Array {
    /// The first index whose element satisfies `belongs`, for an array in which every
    /// element that satisfies it comes after every element that does not.
    fileprivate func partitioningIndex(where belongs: (Element) -> Bool) -> Int {
        var low = startIndex
        var high = endIndex
        while low < high {
            let middle = low + (high - low) / 2
            if belongs(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
