import LookoutPersistence
import LookoutStore

#if canImport(Glibc)
    import Glibc
#endif

extension ReadinessCheck {
    /// `store`: the store answers with its state.
    ///
    /// The store is loaded from the database before the server starts, so this is `ok`
    /// whenever the server answers; it is listed so that the answer's shape stays the
    /// same once a store can catch up after start (several instances on PostgreSQL).
    static func store(_ store: Store) -> ReadinessCheck {
        ReadinessCheck(name: "store") {
            _ = store.snapshot()
            return .ok
        }
    }

    /// `storage`: the data directory takes a durable write. A small file is created in
    /// it, written, fsynced and removed.
    ///
    /// Fails with e.g. `data directory /x is not writable: Permission denied` (or `Not a
    /// directory`, `No such file or directory` when it was replaced or removed).
    static func storage(dataDirectory path: String) -> ReadinessCheck {
        ReadinessCheck(name: "storage") {
            var random = SystemRandomNumberGenerator()
            let probe = path + "/.lookout-ready-" + String(random.next() as UInt64, radix: 16)
            let file = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard file >= 0 else { return failure(errno, "data directory \(path) is not writable") }
            let bytes: [UInt8] = Array("ready\n".utf8)
            let written = bytes.withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
            var status: Status = .ok
            if written != bytes.count {
                status = failure(errno, "cannot write to data directory \(path)")
            } else if fsync(file) != 0 {
                status = failure(errno, "cannot sync a file in data directory \(path)")
            }
            close(file)
            if unlink(probe) != 0, status == .ok {
                status = failure(errno, "cannot remove a file from data directory \(path)")
            }
            return status
        }
    }

    /// `database`: the database takes a write now (a full disk or a lost database fails it).
    static func database(_ persistence: any Persistence) -> ReadinessCheck {
        ReadinessCheck(name: "database") {
            do {
                try persistence.checkWritable()
                return .ok
            } catch {
                return .failing(String(describing: error))
            }
        }
    }

    /// `changes`: the store follows the shared database's commits. Not ready before the
    /// first catch-up after start, nor while the connection is lost (reads are served
    /// then, possibly stale, and writes refused).
    static func changes(_ feed: PostgresChangeFeed) -> ReadinessCheck {
        ReadinessCheck(name: "changes") {
            switch feed.status {
            case .following: .ok
            case .starting: .failing("catching up with the database")
            case .disconnected(let reason): .failing("not following the database: \(reason)")
            case .stranded(let reason): .failing(reason)
            }
        }
    }

    /// `what`, and the reason for `code`; pass `errno` first, before anything can change it.
    private static func failure(_ code: Int32, _ what: String) -> Status {
        .failing("\(what): \(String(cString: strerror(code)))")
    }
}
