import LookoutStore
import Synchronization
import Testing

@Suite("Field registrar")
struct FieldRegistrarTests {
    /// Collects wake-ups for a test.
    final class Wakeups: Sendable {
        let received = Mutex<[FieldRegistrar.Wakeup]>([])

        func record(_ wakeup: FieldRegistrar.Wakeup) {
            received.withLock { $0.append(wakeup) }
        }

        var all: [FieldRegistrar.Wakeup] { received.withLock { $0 } }
    }

    @Test("a commit wakes the waiters of the keys it changed, once, naming those keys")
    func wakesOnce() {
        let registrar = FieldRegistrar()
        let wakeups = Wakeups()
        guard case .waiting = registrar.register([1, 2], after: 0, wake: wakeups.record) else {
            Issue.record("expected to wait")
            return
        }
        #expect(registrar.commit([3], revision: 1) == 0)
        #expect(wakeups.all.isEmpty)
        #expect(registrar.commit([2, 3, 1], revision: 2) == 1)
        #expect(registrar.commit([1], revision: 3) == 0)
        #expect(wakeups.all.count == 1)
        #expect(Set(wakeups.all.first?.changed ?? []) == [1, 2])
        #expect(wakeups.all.first?.revision == 2)
        #expect(registrar.waiterCount == 0)
        #expect(registrar.watchedKeyCount == 0)
    }

    @Test("registering after a key changed past the cursor answers at once")
    func alreadyChanged() {
        let registrar = FieldRegistrar()
        registrar.commit([1], revision: 5)
        #expect(registrar.register([1, 2], after: 4) { _ in } == .alreadyChanged(changed: [1], revision: 5))
        guard case .waiting(let id) = registrar.register([1, 2], after: 5, wake: { _ in }) else {
            Issue.record("a reader that saw revision 5 waits")
            return
        }
        #expect(registrar.cancel(id))
        #expect(!registrar.cancel(id))
        #expect(registrar.waiterCount == 0)
        #expect(registrar.watchedKeyCount == 0)
    }

    @Test("a cancelled waiter is never woken; others on the same key are")
    func cancel() {
        let registrar = FieldRegistrar()
        let cancelled = Wakeups()
        let kept = Wakeups()
        guard case .waiting(let id) = registrar.register([1], after: 0, wake: cancelled.record),
            case .waiting = registrar.register([1], after: 0, wake: kept.record)
        else {
            Issue.record("expected to wait")
            return
        }
        #expect(registrar.cancel(id))
        registrar.commit([1], revision: 1)
        #expect(cancelled.all.isEmpty)
        #expect(kept.all.count == 1)
    }

    @Test("a waiter whose cursor already includes a commit is not woken by it")
    func cursorIncludesCommit() {
        let registrar = FieldRegistrar()
        let wakeups = Wakeups()
        // A reader that saw revision 7 before the registrar heard of it registers first.
        _ = registrar.register([1], after: 7, wake: wakeups.record)
        registrar.commit([1], revision: 7)
        #expect(wakeups.all.isEmpty)
        #expect(registrar.waiterCount == 1)
        registrar.commit([1], revision: 8)
        #expect(wakeups.all.map(\.revision) == [8])
    }

    /// Counts the ``Tracked`` waiters freed.
    final class Frees: Sendable {
        private let value = Mutex(0)

        func add() { value.withLock { $0 += 1 } }

        var count: Int { value.withLock { $0 } }
    }

    /// The ``Frees`` count each ``Tracked`` waiter saw when it was woken, in order.
    final class FreedAtWake: Sendable {
        private let counts = Mutex<[Int]>([])

        func add(_ count: Int) { counts.withLock { $0.append(count) } }

        var all: [Int] { counts.withLock { $0 } }
    }

    /// A waiter that tells when it is freed, and how many were freed when it woke.
    final class Tracked: FieldRegistrar.Waiter {
        let frees: Frees
        let freedAtWake: FreedAtWake?

        init(frees: Frees, freedAtWake: FreedAtWake? = nil) {
            self.frees = frees
            self.freedAtWake = freedAtWake
        }

        func wake(_ wakeup: FieldRegistrar.Wakeup) {
            freedAtWake?.add(frees.count)
        }

        deinit {
            frees.add()
        }
    }

    @Test("woken waiters are released after keepingWoken's body, and when the last of nested scopes ends")
    func keepingWoken() {
        let registrar = FieldRegistrar()
        let freed = Frees()
        func register(_ key: Int, after cursor: UInt64, noting freedAtWake: FreedAtWake? = nil) {
            let waiter = Tracked(frees: freed, freedAtWake: freedAtWake)
            guard case .waiting = registrar.register([key], after: cursor, waiter: waiter) else {
                Issue.record("expected to wait")
                return
            }
        }
        // Without a scope, the commit's list is the last reference: freed by the commit.
        register(1, after: 0)
        #expect(registrar.commit([1], revision: 1) == 1)
        #expect(freed.count == 1)
        register(1, after: 1)
        register(2, after: 1)
        registrar.keepingWoken {
            #expect(registrar.commit([1], revision: 2) == 1)
            registrar.keepingWoken {
                #expect(registrar.commit([2], revision: 3) == 1)
            }
            #expect(freed.count == 1, "kept while the outer scope runs")
        }
        #expect(freed.count == 3)
        // A crowd is released by its commit, scope or not, each waiter as soon as it is
        // woken: one whose wake hands work to another thread is freed by that work.
        let crowd = FieldRegistrar.keptCrowd + 1
        let freedAtWake = FreedAtWake()
        for _ in 0..<crowd { register(3, after: 3, noting: freedAtWake) }
        registrar.keepingWoken {
            #expect(registrar.commit([3], revision: 4) == crowd)
            #expect(freed.count == 3 + crowd)
        }
        #expect(freedAtWake.all == Array(3..<(3 + crowd)))
        // A scope that woke nothing leaves nothing behind for the next.
        register(1, after: 4)
        registrar.keepingWoken {}
        #expect(registrar.commit([1], revision: 5) == 1)
        #expect(freed.count == 4 + crowd)
    }
}
