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

    public func record(_ entries: [JournalEntry]) throws {
        try state.withLock { state throws(PersistenceError) in
            guard let revision = state.image?.revision else { throw .failed("no history was created") }
            guard let first = entries.first, first.revision > revision else {
                if let first = entries.first { throw .failed("revision \(first.revision) does not follow \(revision)") }
                return
            }
            // In place: a copy of the image would copy every collection's documents.
            for entry in entries { state.image?.apply(entry) }
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
