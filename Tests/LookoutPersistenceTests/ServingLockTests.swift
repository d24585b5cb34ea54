import Foundation
import LookoutTestSupport
import Testing

@testable import LookoutPersistence

/// The lock a server holds on its SQLite database (``ServingLock``), seen from another
/// process as util-linux's `flock` sees it.
@Suite("SQLite storage: the serving lock")
struct ServingLockTests {
    /// Whether another process can take the lock file at `path` now.
    static func freeElsewhere(_ path: String) throws -> Bool {
        let run = try ChildProcess.run("/usr/bin/flock", ["--nonblock", "--exclusive", path, "true"])
        #expect(run.ending == .exited(0) || run.ending == .exited(1), "\(run.output)")
        return run.ending == .exited(0)
    }

    @Test("held, it refuses another process and another lock in this one; released, it is free")
    func exclusive() throws {
        let directory = temporaryPath("lock")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let database = directory + "/lookout.sqlite"
        let lock = try ServingLock(database: database)
        #expect(lock.path == database + ".lock")
        #expect(try !Self.freeElsewhere(lock.path))
        #expect {
            _ = try ServingLock(database: database)
        } throws: { error in
            guard case .unavailable(let reason) = error as? PersistenceError else { return false }
            return reason.contains("in use") && reason.contains(lock.path)
        }
        lock.release()
        lock.release()
        #expect(try Self.freeElsewhere(lock.path))
        let again = try ServingLock(database: database)
        #expect(try !Self.freeElsewhere(again.path))
    }

    @Test("the lock file is private, and a lock file left behind holds nothing")
    func leftBehind() throws {
        let directory = temporaryPath("lock")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let database = directory + "/lookout.sqlite"
        do { _ = try ServingLock(database: database) }
        #expect(FileManager.default.fileExists(atPath: database + ".lock"))
        let mode = try FileManager.default.attributesOfItem(atPath: database + ".lock")[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try Self.freeElsewhere(database + ".lock"))
        _ = try ServingLock(database: database)
    }
}
