import LookoutStore
import Synchronization
import Testing

@Suite("Field registrar")
struct FieldRegistrarTests {
    /// Collects wake-ups for a test.
    final class Wakeups: Sendable {
        let received = Mutex<[FieldRegistrar<String>.Wakeup]>([])

        func record(_ wakeup: FieldRegistrar<String>.Wakeup) {
            received.withLock { $0.append(wakeup) }
        }

        var all: [FieldRegistrar<String>.Wakeup] { received.withLock { $0 } }
    }

    @Test("a commit wakes the waiters of the keys it changed, once, naming those keys")
    func wakesOnce() {
        let registrar = FieldRegistrar<String>()
        let wakeups = Wakeups()
        guard case .waiting = registrar.register(["a", "b"], after: 0, wake: wakeups.record) else {
            Issue.record("expected to wait")
            return
        }
        #expect(registrar.commit(["c"], revision: 1) == 0)
        #expect(wakeups.all.isEmpty)
        #expect(registrar.commit(["b", "c", "a"], revision: 2) == 1)
        #expect(registrar.commit(["a"], revision: 3) == 0)
        #expect(wakeups.all.count == 1)
        #expect(Set(wakeups.all.first?.changed ?? []) == ["a", "b"])
        #expect(wakeups.all.first?.revision == 2)
        #expect(registrar.waiterCount == 0)
        #expect(registrar.watchedKeyCount == 0)
    }

    @Test("registering after a key changed past the cursor answers at once")
    func alreadyChanged() {
        let registrar = FieldRegistrar<String>()
        registrar.commit(["a"], revision: 5)
        #expect(registrar.register(["a", "b"], after: 4) { _ in } == .alreadyChanged(changed: ["a"], revision: 5))
        guard case .waiting(let id) = registrar.register(["a", "b"], after: 5, wake: { _ in }) else {
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
        let registrar = FieldRegistrar<String>()
        let cancelled = Wakeups()
        let kept = Wakeups()
        guard case .waiting(let id) = registrar.register(["a"], after: 0, wake: cancelled.record),
            case .waiting = registrar.register(["a"], after: 0, wake: kept.record)
        else {
            Issue.record("expected to wait")
            return
        }
        #expect(registrar.cancel(id))
        registrar.commit(["a"], revision: 1)
        #expect(cancelled.all.isEmpty)
        #expect(kept.all.count == 1)
    }

    @Test("a waiter whose cursor already includes a commit is not woken by it")
    func cursorIncludesCommit() {
        let registrar = FieldRegistrar<String>()
        let wakeups = Wakeups()
        // A reader that saw revision 7 before the registrar heard of it registers first.
        _ = registrar.register(["a"], after: 7, wake: wakeups.record)
        registrar.commit(["a"], revision: 7)
        #expect(wakeups.all.isEmpty)
        #expect(registrar.waiterCount == 1)
        registrar.commit(["a"], revision: 8)
        #expect(wakeups.all.map(\.revision) == [8])
    }
}
