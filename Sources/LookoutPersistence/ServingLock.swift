import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The lock a server holds on its SQLite database for as long as it serves it, and an
/// import for as long as it replaces it: a second server, or an import, on the same file
/// is refused before it opens the database, not at its first write that does not follow
/// the other's.
///
/// It is a `flock` on a file of its own beside the database (`lookout.sqlite.lock`), not
/// on the database: SQLite locks the database with POSIX locks, and closing any descriptor
/// of a file drops all of a process's POSIX locks on it. The kernel releases the lock when
/// the process ends, however it ends, so a lock file left behind by a crash holds nothing.
/// Commands that work beside a running server (`lookout user`, `export`, `backup`) do not
/// take it.
public final class ServingLock: Sendable {
    /// The lock file: the database's path with `.lock` appended.
    public let path: String
    /// The locked descriptor; -1 once released.
    private let descriptor: Mutex<Int32>

    /// Takes the lock of the database at `database`, or throws at once when another
    /// process (or another lock in this one) holds it.
    /// - Throws: ``PersistenceError/unavailable(_:)``: held elsewhere, or the lock file
    ///   cannot be made.
    public init(database: String) throws(PersistenceError) {
        path = database + ".lock"
        let opened = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard opened >= 0 else {
            throw .unavailable("\(path) cannot be opened: \(String(cString: strerror(errno)))")
        }
        guard flock(opened, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(opened)
            if code == EWOULDBLOCK {
                throw .unavailable(
                    "\(database) is in use: another Lookout server serves it, or an import replaces it (it holds \(path))"
                )
            }
            throw .unavailable("\(path) cannot be locked: \(String(cString: strerror(code)))")
        }
        descriptor = Mutex(opened)
    }

    /// Whether this still holds the lock: until ``release()``.
    public var isHeld: Bool { descriptor.withLock { $0 >= 0 } }

    /// Lets the lock go; another server may then take it. Safe to call more than once.
    public func release() {
        descriptor.withLock { descriptor in
            guard descriptor >= 0 else { return }
            close(descriptor)
            descriptor = -1
        }
    }

    deinit { release() }
}
