import Dispatch
import Foundation
import LookoutHTTP
import LookoutJSON
import LookoutPersistence
import LookoutStore
import Synchronization
import Testing

@testable import LookoutApp

/// Where writes are committed with SQLite: on the caller's thread (an event loop's) when
/// nothing else is committing or queued, and otherwise by the writer thread, in order.
@Suite("Writes committed on the loop or by the writer", .timeLimit(.minutes(1)))
struct WriteExecutorTests {
    /// A real SQLite database whose next commit, once ``hold()`` is called, waits until
    /// ``release()``: so a test can send a write while another is being committed.
    final class GatedJournal: StoreJournal {
        let database: SQLitePersistence
        /// The revisions of each commit, in the order they were made durable.
        let commits = Mutex<[[UInt64]]>([])
        private let holding = Atomic<Bool>(false)
        private let entered = DispatchSemaphore(value: 0)
        private let gate = DispatchSemaphore(value: 0)

        init(_ database: SQLitePersistence) {
            self.database = database
        }

        func hold() { holding.store(true, ordering: .relaxed) }

        /// Waits until the held commit has begun.
        func waitUntilHeld() -> Bool { entered.wait(timeout: .now() + 30) == .success }

        func release() { gate.signal() }

        func record(_ entries: [JournalEntry]) throws {
            try database.record(entries)
        }

        func record(after revision: UInt64, _ write: ([JournalEntry]) -> [JournalEntry]) throws {
            if holding.exchange(false, ordering: .relaxed) {
                entered.signal()
                gate.wait()
            }
            try database.record(after: revision) { committed in
                let entries = write(committed)
                commits.withLock { $0.append(entries.map(\.revision)) }
                return entries
            }
        }
    }

    /// A write setting the one item's `n`, answered 200.
    func setting(_ n: Int) -> PreparedWrite {
        PreparedWrite(
            write: Store.Write(.patch(collection: "items", id: 1, patch: ["n": .int(n)])),
            answer: { outcome in
                _ = try outcome.get()
                return HTTPResponse(status: 200)
            })
    }

    func executor(limit: Duration) throws -> (WriteExecutor, GatedJournal, Store, String) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-writes-\(UUID())").path
        let database = try SQLitePersistence(path: path)
        try database.create(epoch: "e")
        let journal = GatedJournal(database)
        let store = try Store(
            restoring: StoreImage(epoch: "e", revision: 0, collections: []),
            declarations: [try DocumentCollection(name: "items", documents: [["id": 1, "n": 0]])], journal: journal)
        return (WriteExecutor(store: store, placement: .loopWhenIdle(limit: limit)), journal, store, path)
    }

    func remove(_ path: String) {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    @Test("a write that comes while the loop commits is queued, and the writer commits it after, in order")
    func queuedBehindTheLoop() throws {
        let (writes, journal, store, path) = try executor(limit: .seconds(60))
        defer { remove(path) }
        let added = journal.commits.withLock { $0.count }
        journal.hold()
        let first = Mutex<Result<HTTPResponse, any Error>?>(nil)
        let firstDone = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let outcome = writes.applyHere(setting(1))
            first.withLock { $0 = outcome }
            firstDone.signal()
        }
        try #require(journal.waitUntilHeld(), "the first write's commit began")
        // A commit is under way: the second may not commit here, and goes to the writer.
        #expect(writes.applyHere(setting(2)) == nil)
        let second = Mutex<Result<HTTPResponse, any Error>?>(nil)
        let secondDone = DispatchSemaphore(value: 0)
        writes.submit(setting(2)) { outcome in
            second.withLock { $0 = outcome }
            secondDone.signal()
        }
        // Loops stay awake for both: the commit under way and the write queued.
        #expect(writes.awaited.count == 2)
        journal.release()
        try #require(firstDone.wait(timeout: .now() + 30) == .success)
        // The loop's commit ending hands the queued write to the writer thread.
        try #require(secondDone.wait(timeout: .now() + 30) == .success, "the queued write was committed")
        #expect(try first.withLock { $0 }?.get().status == 200)
        #expect(try second.withLock { $0 }?.get().status == 200)
        #expect(writes.commits == (onLoops: 1, byWriter: 1))
        #expect(journal.commits.withLock { Array($0.dropFirst(added)) } == [[2], [3]])
        var reads = ReadSet()
        #expect(store.snapshot().document(1, in: "items", reads: &reads)?["n"] == 2)

        // Idle again: the next write is committed on the caller's thread.
        #expect(try writes.applyHere(setting(3))?.get().status == 200)
        #expect(writes.commits == (onLoops: 2, byWriter: 1))
        #expect(store.snapshot().revision == 4)
    }

    @Test("after a commit of several writes, writes go to the writer until it commits one alone")
    func groupsKeepTheLoopOff() throws {
        let (writes, journal, store, path) = try executor(limit: .seconds(60))
        defer { remove(path) }
        let answered = DispatchSemaphore(value: 0)
        func submitted(_ n: Int) { writes.submit(setting(n)) { _ in answered.signal() } }
        func waitForAnswers(_ count: Int) throws {
            for _ in 0..<count { try #require(answered.wait(timeout: .now() + 30) == .success) }
        }
        // The writer's commit of the first write waits; two more queue behind it.
        journal.hold()
        submitted(1)
        try #require(journal.waitUntilHeld())
        #expect(writes.applyHere(setting(2)) == nil, "the writer is committing")
        submitted(2)
        submitted(3)
        journal.release()
        try waitForAnswers(3)
        #expect(writes.commits == (onLoops: 0, byWriter: 2), "the first alone, then the two queued behind it")
        // The last commit was a group of two: the next write goes to the writer too.
        #expect(writes.applyHere(setting(4)) == nil)
        submitted(4)
        try waitForAnswers(1)
        // That one was committed alone: the loop may commit again.
        #expect(try writes.applyHere(setting(5))?.get().status == 200)
        #expect(writes.commits == (onLoops: 1, byWriter: 3))
        let added = journal.commits.withLock { $0.count } - 4
        #expect(journal.commits.withLock { Array($0.dropFirst(added)) } == [[2], [3, 4], [5], [6]])
        var reads = ReadSet()
        #expect(store.snapshot().document(1, in: "items", reads: &reads)?["n"] == 5)
    }
}
