import Dispatch
import GRDB
import GRDBSQLite
import Synchronization

/// Copies the write-ahead log back into the database file from a connection of its own,
/// on a queue of its own, so that no commit waits for it.
///
/// SQLite's automatic checkpoint runs in the commit that takes the log past 1,000 frames,
/// before that commit returns, on whatever thread made it: an event loop, since a lone
/// durable write commits on the loop that read it. With 100,000 documents written at
/// random, that commit took ~7 ms, and so did every request on that loop behind it
/// (Benchmarks/README.md, stop 56). Here the writing connection's log hook
/// (`sqlite3_wal_hook`, which replaces the automatic checkpoint) asks for a checkpoint
/// at 1,000 frames, and this connection runs a passive one, which waits for no reader
/// or writer: commits go on appending to the log while it copies. The next write after a
/// checkpoint that copied every frame starts the log again from its beginning, as after an
/// automatic one.
///
/// A log that grows while its checkpoints fall behind (frames written faster than they
/// are copied, or a checkpoint that cannot finish) is checkpointed by the commit itself
/// past ``inlineFrames``, as SQLite would have done at 1,000: the log stays bounded.
final class Checkpointer: Sendable {
    /// When the writer asks for a checkpoint: SQLite's own automatic threshold.
    let requestFrames: Int32
    /// When the commit checkpoints the log itself.
    let inlineFrames: Int32
    private let connection: DatabaseQueue
    private let queue = DispatchQueue(label: "lookout.checkpoint")
    /// Whether a checkpoint is asked for and has not started yet.
    private let requested = Atomic<Bool>(false)
    /// Checkpoints run on the queue, and tried by a commit (``inlineFrames``).
    let background = Atomic<UInt64>(0)
    let inline = Atomic<UInt64>(0)

    init(path: String, requestFrames: Int32, inlineFrames: Int32) throws {
        self.requestFrames = requestFrames
        self.inlineFrames = max(requestFrames, inlineFrames)
        var configuration = Configuration()
        configuration.label = "lookout.checkpoint"
        connection = try DatabaseQueue(path: path, configuration: configuration)
        // A checkpoint syncs the log before it copies, and the file before it marks the
        // frames copied, unless synchronous is OFF; FULL is SQLite's default, said here.
        try connection.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
    }

    /// Installs the log hook on the writing connection `db`, in place of SQLite's automatic
    /// checkpoint. The hook holds this checkpointer unretained: ``uninstall(from:)`` before
    /// it goes.
    func install(on db: Database) {
        sqlite3_wal_hook(db.sqliteConnection, Self.hook, Unmanaged.passUnretained(self).toOpaque())
    }

    func uninstall(from db: Database) {
        sqlite3_wal_hook(db.sqliteConnection, nil, nil)
    }

    /// Called by SQLite on the committing thread after each commit, with the log's frames.
    private static let hook:
        @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafePointer<CChar>?, Int32) ->
            Int32 = { context, db, name, frames in
                guard let context else { return SQLITE_OK }
                Unmanaged<Checkpointer>.fromOpaque(context).takeUnretainedValue().committed(db, name, frames: frames)
                return SQLITE_OK
            }

    private func committed(_ db: OpaquePointer?, _ name: UnsafePointer<CChar>?, frames: Int32) {
        if frames >= inlineFrames {
            // What SQLite's automatic checkpoint does (sqlite3WalDefaultHook); busy (this
            // queue's checkpoint under way) is not an error: the next commit tries again.
            inline.add(1, ordering: .relaxed)
            sqlite3_wal_checkpoint(db, name)
            return
        }
        guard frames >= requestFrames, !requested.exchange(true, ordering: .acquiringAndReleasing) else { return }
        queue.async { [self] in
            requested.store(false, ordering: .releasing)
            // Busy or failed: the log is left as it is, and the next commit asks again.
            _ = try? connection.writeWithoutTransaction { db in try db.checkpoint(.passive) }
            background.add(1, ordering: .relaxed)
        }
    }

    /// Returns once every checkpoint asked for so far has run.
    func drain() {
        queue.sync {}
    }

    /// Holds this queue's checkpoints until `body` returns (tests: a checkpointer fallen behind).
    func holding<Result>(_ body: () throws -> Result) rethrows -> Result {
        queue.suspend()
        defer { queue.resume() }
        return try body()
    }
}
