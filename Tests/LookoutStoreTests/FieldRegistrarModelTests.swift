import Foundation
import LookoutStore
import Synchronization
import Testing

/// A randomized model-based test of the registrar under concurrency: thousands of
/// sessions with random key sets register, while writers commit random keys and a
/// sweeper cancels sessions at their deadlines. Every outcome is then checked against
/// the log of commits.
@Suite("Field registrar, randomized against a model", .timeLimit(.minutes(2)))
struct FieldRegistrarModelTests {
    typealias Registrar = FieldRegistrar

    /// What happened to one session.
    enum Outcome: Equatable {
        case pending
        case answeredAtOnce(changed: [Int], revision: UInt64)
        case woken(changed: [Int], revision: UInt64, visibleRevisions: [UInt64])
        case cancelled(logLength: Int)
    }

    /// One long-poll session of the model.
    final class Session: SweptSession {
        let keys: [Int]
        /// How long it waits once registered.
        let patience: Duration
        let deadline = Mutex<ContinuousClock.Instant?>(nil)
        let cursor = Mutex<UInt64>(0)
        let waiter = Mutex<Registrar.WaiterID?>(nil)
        let outcome = Mutex<Outcome>(.pending)

        var isPending: Bool {
            if case .pending = outcome.withLock({ $0 }) { return true }
            return false
        }
        let wakeCount = Atomic<Int>(0)

        init(keys: [Int], patience: Duration) {
            self.keys = keys
            self.patience = patience
        }
    }

    /// The "store": commits are serialized and logged under one lock, which readers also
    /// take to read a consistent snapshot of revisions, as the real store's snapshots do.
    final class World: Sendable {
        let registrar = Registrar()
        let log = Mutex<[(revision: UInt64, keys: [Int])]>([])

        func commit(_ keys: [Int]) {
            log.withLock { log in
                let revision = UInt64(log.count + 1)
                log.append((revision, keys))
                registrar.commit(keys, revision: revision)
            }
        }

        /// The cursor a render of `keys` would produce: the highest revision among them.
        func read(_ keys: [Int]) -> UInt64 {
            log.withLock { _ in keys.map { registrar.revision(of: $0) }.max() ?? 0 }
        }
    }

    @Test("no lost wake-up, no spurious wake-up, every session ends, nothing stays registered")
    func model() async throws {
        let keyCount = 1_500
        let sessionCount = 4_000
        var generator = SystemRandomNumberGenerator()
        let world = World()
        let clock = ContinuousClock()
        let sessions = (0..<sessionCount).map { index in
            let count = Int.random(in: 1...6, using: &generator)
            // One session in twenty reads keys no writer touches: it must run to its deadline.
            let range = index % 20 == 0 ? keyCount..<(keyCount + 50) : 0..<keyCount
            let keys = Array(Set((0..<count).map { _ in Int.random(in: range, using: &generator) }))
            return Session(keys: keys, patience: .milliseconds(Int.random(in: 1...100, using: &generator)))
        }
        let registered = Atomic<Int>(0)

        // Writers: commit random key sets until every session has been registered and
        // its deadline has passed.
        let writersDone = Atomic<Bool>(false)
        let writers = (0..<2).map { _ in
            Thread {
                var generator = SystemRandomNumberGenerator()
                // Bounded, so that on a loaded machine the writers cannot crowd out the
                // rest of the test (and grow the log it checks without end).
                var commits = 0
                while !writersDone.load(ordering: .acquiring), commits < 3_000 {
                    commits += 1
                    let count = Int.random(in: 1...3, using: &generator)
                    world.commit((0..<count).map { _ in Int.random(in: 0..<keyCount, using: &generator) })
                    usleep(UInt32.random(in: 50...300, using: &generator))
                }
            }
        }
        writers.forEach { $0.start() }

        // The sweeper, started with the readers: cancels each session at its deadline,
        // noting how much of the log had been committed when it did.
        async let swept: Void = sweep(sessions) { session, id in
            world.log.withLock { log in
                if world.registrar.cancel(id) {
                    session.outcome.withLock { $0 = .cancelled(logLength: log.count) }
                }
            }
        }

        // Readers: render (read a snapshot), then register; the gap between the two is
        // where a lost wake-up would hide.
        await onThread {
            DispatchQueue.concurrentPerform(iterations: 2) { part in
                var generator = SystemRandomNumberGenerator()
                for session in sessions[(part * sessionCount / 2)..<((part + 1) * sessionCount / 2)] {
                    let cursor = world.read(session.keys)
                    session.cursor.withLock { $0 = cursor }
                    // A slow render for half of them, so that commits often land in the gap.
                    if Bool.random(using: &generator) { usleep(UInt32.random(in: 0...400, using: &generator)) }
                    let registration = world.registrar.register(session.keys, after: cursor) { wakeup in
                        session.wakeCount.add(1, ordering: .relaxed)
                        let visible = session.keys.map { world.registrar.revision(of: $0) }
                        session.outcome.withLock {
                            $0 = .woken(changed: wakeup.changed, revision: wakeup.revision, visibleRevisions: visible)
                        }
                    }
                    switch registration {
                    case .waiting(let id):
                        session.waiter.withLock { $0 = id }
                        session.deadline.withLock { $0 = clock.now + session.patience }
                    case .alreadyChanged(let changed, let revision):
                        session.outcome.withLock { $0 = .answeredAtOnce(changed: changed, revision: revision) }
                    }
                    registered.add(1, ordering: .relaxed)
                }
            }
        }

        await swept
        writersDone.store(true, ordering: .releasing)
        while writers.contains(where: \.isExecuting) { try await Task.sleep(for: .milliseconds(1)) }

        let log = world.log.withLock { $0 }
        // Commits by key, in revision order, so that each session's check is cheap.
        var commitsByKey: [Int: [(revision: UInt64, keys: [Int])]] = [:]
        for commit in log {
            for key in Set(commit.keys) { commitsByKey[key, default: []].append(commit) }
        }
        #expect(log.count > 100, "writers made too few commits to test anything")
        #expect(world.registrar.waiterCount == 0, "nothing stays registered")
        #expect(world.registrar.watchedKeyCount == 0)
        var tally = (atOnce: 0, woken: 0, cancelled: 0)
        for session in sessions {
            let cursor = session.cursor.withLock { $0 }
            let keys = Set(session.keys)
            // Commits after the cursor that touched the session's keys.
            var seen = Set<UInt64>()
            let relevant = keys.flatMap { commitsByKey[$0] ?? [] }
                .filter { $0.revision > cursor && seen.insert($0.revision).inserted }
                .sorted { $0.revision < $1.revision }
            #expect(session.wakeCount.load(ordering: .relaxed) <= 1, "woken at most once")
            switch session.outcome.withLock({ $0 }) {
            case .pending:
                Issue.record("a session never ended")
            case .answeredAtOnce(let changed, let revision):
                tally.atOnce += 1
                #expect(!changed.isEmpty && keys.isSuperset(of: changed))
                #expect(relevant.contains { $0.revision == revision }, "answered at once for a real change")
            case .woken(let changed, let revision, let visible):
                tally.woken += 1
                #expect(revision > cursor, "no wake-up for what the session had already read")
                // Not a later commit either: a change between the read and the registration
                // must be answered at once, so the first change after the cursor wakes it.
                #expect(revision == relevant.first?.revision, "woken by the first change after its cursor")
                let commit = log.first { $0.revision == revision }
                #expect(commit.map { Set($0.keys).intersection(keys) == Set(changed) } == true)
                #expect(visible.max() ?? 0 >= revision, "the write that woke it is visible")
            case .cancelled(let logLength):
                tally.cancelled += 1
                #expect(
                    !relevant.contains { $0.revision <= UInt64(logLength) },
                    "no lost wake-up: nothing it read changed before its deadline")
            }
        }
        // The run must have exercised every path.
        #expect(tally.atOnce > 0 && tally.woken > 0 && tally.cancelled > 0, "\(tally)")
    }
}
