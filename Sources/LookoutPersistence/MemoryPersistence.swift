import LookoutJSON
import LookoutStore
import Synchronization

/// Storage in memory: the same contract as ``SQLitePersistence``, for tests and for
/// running without a disk. Nothing survives the process.
public final class MemoryPersistence: Persistence {
    private struct State {
        var image: StoreImage?
        var records: [String: [String: JSONValue]] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    public func load() throws(PersistenceError) -> StoreImage? {
        state.withLock { $0.image }
    }

    public func create(epoch: String) throws(PersistenceError) {
        state.withLock { $0.image = StoreImage(epoch: epoch, revision: 0, collections: []) }
    }

    public func record(_ entry: JournalEntry) throws {
        try state.withLock { state throws(PersistenceError) in
            guard let revision = state.image?.revision else { throw .failed("no history was created") }
            guard entry.revision > revision else {
                throw .failed("revision \(entry.revision) does not follow \(revision)")
            }
            // In place: a copy of the image would copy every collection's documents.
            state.image?.apply(entry)
        }
    }

    public func records(_ kind: String) throws(PersistenceError) -> [String: JSONValue] {
        state.withLock { $0.records[kind] ?? [:] }
    }

    public func record(_ kind: String, key: String) throws(PersistenceError) -> JSONValue? {
        state.withLock { $0.records[kind]?[key] }
    }

    public func putRecord(_ value: JSONValue?, kind: String, key: String) throws(PersistenceError) {
        state.withLock { $0.records[kind, default: [:]][key] = value }
    }

    public func checkWritable() throws(PersistenceError) {}
}

extension StoreImage {
    /// This image after `entry`: what storage must hold once it has recorded it.
    /// Costs O(log n) per document changed: documents stay sorted by id, so each change
    /// is found by binary search instead of scanning and re-sorting the collection.
    mutating func apply(_ entry: JournalEntry) {
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
