import Foundation
import LookoutJSON
import LookoutStore
import Synchronization
import Testing

/// The store and its registrar together, randomized against a model: sessions read
/// random fields from snapshots and wait; writers patch random fields (often with the
/// value already there, sometimes an ignored field); a sweeper cancels at deadlines.
@Suite("Store, randomized against a model", .timeLimit(.minutes(2)))
struct StoreModelTests {
    static let documentCount = 40
    static let fields = ["a", "b", "c", "d", "quiet"]

    enum Outcome {
        case pending
        case atOnce(changed: [String], revision: UInt64)
        case woken(changed: [String], revision: UInt64, visibleRevision: UInt64)
        case cancelled(logLength: Int)
    }

    final class Session: SweptSession {
        let keys: [(id: Int, field: String)]
        /// How long it waits once registered.
        let patience: Duration
        let deadline = Mutex<ContinuousClock.Instant?>(nil)
        let cursor = Mutex<UInt64>(0)
        let waiter = Mutex<FieldRegistrar.WaiterID?>(nil)
        let outcome = Mutex<Outcome>(.pending)

        var isPending: Bool {
            if case .pending = outcome.withLock({ $0 }) { return true }
            return false
        }
        let wakes = Atomic<Int>(0)

        init(keys: [(id: Int, field: String)], patience: Duration) {
            self.keys = keys
            self.patience = patience
        }

        var names: Set<String> { Set(keys.map { "docs/\($0.id).\($0.field)" }) }
    }

    @Test("woken by the first real change to what it read, seeing it; never for equal or ignored writes; never lost")
    func model() async throws {
        var generator = SystemRandomNumberGenerator()
        let documents: [JSONValue] = (1...Self.documentCount).map { id in
            .object(JSONObject([("id", .int(id))] + Self.fields.map { ($0, JSONValue.int(0)) }))
        }
        let store = try Store(
            [try DocumentCollection(name: "docs", options: .init(ignored: ["quiet"]), documents: documents)], epoch: "m"
        )
        // Every commit in order, with the keys it changed (names), serialized with the writes.
        let log = Mutex<[(revision: UInt64, changed: Set<String>)]>([])
        let clock = ContinuousClock()
        let sessions = (0..<2_500).map { _ in
            let count = Int.random(in: 1...4, using: &generator)
            let keys = (0..<count).map { _ in
                (
                    id: Int.random(in: 1...Self.documentCount, using: &generator),
                    field: Self.fields.randomElement(using: &generator)!
                )
            }
            return Session(keys: keys, patience: .milliseconds(Int.random(in: 1...100, using: &generator)))
        }

        let done = Atomic<Bool>(false)
        let writers = (0..<2).map { _ in
            Thread {
                var generator = SystemRandomNumberGenerator()
                // Bounded, so that on a loaded machine the writers cannot crowd out the
                // rest of the test (and grow the log it checks without end).
                var writes = 0
                while !done.load(ordering: .acquiring), writes < 3_000 {
                    writes += 1
                    let id = Int.random(in: 1...Self.documentCount, using: &generator)
                    let field = Self.fields.randomElement(using: &generator)!
                    // Equal to the stored value a third of the time: such writes change nothing.
                    let value = JSONValue.int(Int.random(in: 0...2, using: &generator))
                    log.withLock { log in
                        let commit = try! store.apply(
                            .patch(collection: "docs", id: id, patch: JSONObject([(field, value)])))
                        if !commit.changed.isEmpty {
                            log.append((commit.revision, Set(commit.changed.map(\.description))))
                        }
                    }
                    usleep(UInt32.random(in: 50...250, using: &generator))
                }
            }
        }
        writers.forEach { $0.start() }

        // The sweeper, started with the readers: cancels each session at its deadline,
        // noting how much of the log had been committed when it did.
        async let swept: Void = sweep(sessions) { session, id in
            log.withLock { log in
                if store.cancel(id) {
                    session.outcome.withLock { $0 = .cancelled(logLength: log.count) }
                }
            }
        }

        await onThread {
            DispatchQueue.concurrentPerform(iterations: 2) { part in
                var generator = SystemRandomNumberGenerator()
                for session in sessions[(part * sessions.count / 2)..<((part + 1) * sessions.count / 2)] {
                    let snapshot = store.snapshot()
                    var reads = ReadSet()
                    for key in session.keys {
                        _ = snapshot.document(key.id, in: "docs", fields: [key.field], reads: &reads)
                    }
                    session.cursor.withLock { $0 = reads.revision }
                    if Bool.random(using: &generator) { usleep(UInt32.random(in: 0...300, using: &generator)) }
                    let registration = store.wait(for: reads, after: reads.revision) { change in
                        session.wakes.add(1, ordering: .relaxed)
                        let visible = store.snapshot().revision
                        session.outcome.withLock {
                            $0 = .woken(changed: change.changed, revision: change.revision, visibleRevision: visible)
                        }
                    }
                    switch registration {
                    case .waiting(let id):
                        session.waiter.withLock { $0 = id }
                        session.deadline.withLock { $0 = clock.now + session.patience }
                    case .alreadyChanged(let keys, let revision):
                        session.outcome.withLock { $0 = .atOnce(changed: store.names(of: keys), revision: revision) }
                    }
                }
            }
        }

        await swept
        done.store(true, ordering: .releasing)
        while writers.contains(where: \.isExecuting) { try await Task.sleep(for: .milliseconds(1)) }

        // Each commit with what it changed that can wake anyone (ignored fields left out).
        let commits = log.withLock { $0 }.map { commit in
            (revision: commit.revision, changed: commit.changed.filter { !$0.hasSuffix(".quiet") })
        }
        #expect(commits.count > 100)
        // Commit positions by changed key, so that each session's check is cheap.
        var commitsByName: [String: [Int]] = [:]
        for (offset, commit) in commits.enumerated() {
            for name in commit.changed { commitsByName[name, default: []].append(offset) }
        }
        #expect(store.waiterCount == 0, "nothing stays registered")
        var tally = (atOnce: 0, woken: 0, cancelled: 0)
        for session in sessions {
            let cursor = session.cursor.withLock { $0 }
            let names = session.names
            // Changes after the cursor to what the session read.
            var seen = Set<Int>()
            let relevant = names.flatMap { commitsByName[$0] ?? [] }
                .filter { commits[$0].revision > cursor && seen.insert($0).inserted }
                .sorted()
                .map { (offset: $0, element: commits[$0]) }
            #expect(session.wakes.load(ordering: .relaxed) <= 1)
            switch session.outcome.withLock({ $0 }) {
            case .pending:
                Issue.record("a session never ended")
            case .atOnce(let changed, let revision):
                tally.atOnce += 1
                #expect(!changed.isEmpty && names.isSuperset(of: changed))
                #expect(relevant.contains { $0.element.revision == revision })
            case .woken(let changed, let revision, let visible):
                tally.woken += 1
                #expect(revision == relevant.first?.element.revision, "woken by the first real change after its cursor")
                #expect(Set(changed) == relevant.first.map { $0.element.changed.intersection(names) }, "\(changed)")
                #expect(!changed.contains { $0.hasSuffix(".quiet") }, "ignored fields wake nobody")
                #expect(visible >= revision, "the write that woke it is visible")
            case .cancelled(let logLength):
                tally.cancelled += 1
                #expect(!relevant.contains { $0.offset < logLength }, "no lost wake-up")
            }
        }
        #expect(tally.atOnce > 0 && tally.woken > 0 && tally.cancelled > 0, "\(tally)")
    }
}
