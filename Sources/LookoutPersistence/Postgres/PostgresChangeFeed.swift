import Dispatch
import Logging
import LookoutStore
import PostgresNIO
import Synchronization

#if canImport(Foundation)
    import Foundation
#endif

/// Keeps a ``Store`` up to date with the commits other instances make to the same
/// PostgreSQL database, waking the local waiters on what they changed.
///
/// On a connection of its own it `LISTEN`s on `lookout_changes`; on each notification,
/// every `pollInterval` (should one be lost), and after (re)connecting, it reads
/// `lookout_changes` after the store's revision in revision order and hands the entries
/// to ``Store/applyCommitted(_:)``, which skips what it has and stops at a gap: nothing
/// is missed or applied twice. A lost connection is opened again with backoff.
///
/// Runs on a thread of its own: its calls to the database block.
public final class PostgresChangeFeed: Sendable {
    /// Whether the store follows the database.
    public enum Status: Sendable, Equatable {
        /// Not yet caught up with the database since start.
        case starting
        /// Caught up at the last read, at this revision.
        case following(UInt64)
        /// The connection is lost; reconnecting.
        case disconnected(String)
        /// The database no longer keeps commits the store is missing (it was cut off for
        /// longer than ``PostgresPersistence/retainedChanges`` commits): only a restart,
        /// which loads the current state, brings it back.
        case stranded(String)
    }

    /// What ``catchUp()`` throws when the next commit the store needs is gone.
    public struct Stranded: Error, CustomStringConvertible {
        public let description: String
    }

    private let store: Store
    private let applying: @Sendable (() -> UInt64) -> UInt64
    private let link: PostgresLink
    private let pollInterval: Duration
    private let logger: Logger
    private let wakeups = DispatchSemaphore(value: 0)
    private let stopped = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    private let state = Mutex(Status.starting)

    /// A feed into `store` from the database `persistence` uses; ``start()`` starts it.
    /// - Parameter applying: runs each application of entries to the store (the HTTP
    ///   layer batches the resumption of the long-polls it wakes).
    public init(
        store: Store,
        database persistence: PostgresPersistence,
        pollInterval: Duration = .seconds(1),
        logger: Logger = Logger(label: "lookout.changes"),
        applying: @escaping @Sendable (() -> UInt64) -> UInt64 = { $0() }
    ) {
        self.store = store
        self.applying = applying
        self.pollInterval = pollInterval
        self.logger = logger
        let wakeups = wakeups
        link = PostgresLink(
            configuration: persistence.configuration, logger: logger,
            prepare: { connection in
                connection.addListener(channel: PostgresPersistence.channel) { _, _ in wakeups.signal() }
                _ = try connection.query("LISTEN lookout_changes", logger: logger).wait()
            })
    }

    /// The last status.
    public var status: Status { state.withLock { $0 } }

    /// Starts following, on a thread of its own.
    public func start() {
        let thread = Thread { [self] in
            run()
            finished.signal()
        }
        thread.name = "lookout.changes"
        thread.start()
    }

    /// Stops following and closes the connection; returns once the thread has ended.
    public func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        wakeups.signal()
        finished.wait()
        link.close()
    }

    /// Reads and applies what was committed after the store's revision, now, on the
    /// calling thread.
    /// - Returns: the store's revision afterwards.
    /// - Throws: ``PersistenceError`` when the database cannot be read; ``Stranded`` when
    ///   it no longer keeps the next commit the store needs.
    @discardableResult
    public func catchUp() throws -> UInt64 {
        let (revision, missing) = try link.withConnection { session -> (UInt64, Range<UInt64>?) in
            while true {
                let before = store.snapshot().revision
                let entries = try PostgresPersistence.changes(after: before, in: session)
                if let first = entries.first?.revision, first > before + 1 { return (before, (before + 1)..<first) }
                let revision = applying { store.applyCommitted(entries) }
                if entries.count < PostgresPersistence.batch { return (revision, nil) }
            }
        }
        if let missing {
            throw Stranded(
                description: "revisions \(missing.lowerBound)...\(missing.upperBound - 1) are no longer kept in "
                    + "lookout_changes: restart this instance to load the current state")
        }
        return revision
    }

    private func run() {
        while !stopped.load(ordering: .relaxed) {
            var wait = pollInterval
            do {
                let revision = try catchUp()
                let was = state.withLock { state in
                    defer { state = .following(revision) }
                    return state
                }
                if case .disconnected = was { logger.info("following the database again at revision \(revision)") }
            } catch let stranded as Stranded {
                let was = state.withLock { state in
                    defer { state = .stranded(stranded.description) }
                    return state
                }
                if case .stranded = was {} else { logger.error("cannot follow the database: \(stranded)") }
            } catch {
                let was = state.withLock { state in
                    defer { state = .disconnected(String(describing: error)) }
                    return state
                }
                if case .disconnected = was {} else { logger.warning("lost the database: \(error)") }
                wait = .milliseconds(100)
            }
            let nanoseconds = wait.components.seconds * 1_000_000_000 + wait.components.attoseconds / 1_000_000_000
            _ = wakeups.wait(timeout: .now() + .nanoseconds(Int(nanoseconds)))
        }
    }
}
