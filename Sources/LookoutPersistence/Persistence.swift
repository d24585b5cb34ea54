import LookoutJSON
import LookoutStore

/// Durable storage behind a ``Store``: it records every write (as a ``StoreJournal``)
/// and gives the whole state back at the next start. Also keeps small records outside
/// the store, by kind and key: users, refresh tokens.
///
/// Implementations: ``SQLitePersistence`` (the embedded default),
/// ``MemoryPersistence`` (nothing survives the process) and ``PostgresPersistence``
/// (shared by several instances). All pass one contract suite.
public protocol Persistence: StoreJournal {
    /// The stored state, or nil when storage holds none yet (a first start).
    func load() throws(PersistenceError) -> StoreImage?
    /// Starts a new, empty history with `epoch`.
    /// - Precondition: storage holds no state (``load()`` returned nil).
    func create(epoch: String) throws(PersistenceError)
    /// The records of `kind`, by key.
    func records(_ kind: String) throws(PersistenceError) -> [String: JSONValue]
    /// The record of `kind` under `key`, if there is one.
    func record(_ kind: String, key: String) throws(PersistenceError) -> JSONValue?
    /// Stores `value` under `kind` and `key`, durably; nil removes it.
    func putRecord(_ value: JSONValue?, kind: String, key: String) throws(PersistenceError)
    /// Throws unless a write could be stored now (for readiness checks).
    func checkWritable() throws(PersistenceError)
}

/// Why storage failed.
public enum PersistenceError: Error, Equatable, CustomStringConvertible {
    /// The database exists but is not one Lookout can read: damaged, or something else.
    case corrupt(String)
    /// The database cannot be opened or read (permissions, a missing directory, ...).
    case unavailable(String)
    /// No space left: the disk, or the configured size limit, is full.
    case full(String)
    /// Any other failure of a read or write.
    case failed(String)

    public var description: String {
        switch self {
        case .corrupt(let reason): "the database is damaged or not a Lookout database: \(reason)"
        case .unavailable(let reason): "the database cannot be opened: \(reason)"
        case .full(let reason): "no space left for the database: \(reason)"
        case .failed(let reason): reason
        }
    }
}
