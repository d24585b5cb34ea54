import Foundation
import LookoutHTTP
import Synchronization

/// Runs actions at deadlines on one thread of its own; cancelling an action frees it at once.
///
/// Long-polls need one deadline each, most of them cancelled early (woken by a write).
/// A timer per poll (Dispatch) keeps every cancelled closure alive until its deadline;
/// here a cancel drops the closure, and only its token (without the closure) and a 24-byte
/// heap entry wait to be skipped.
///
/// A cancel touches only its own deadline (``Token``): a fan-out cancels thousands at
/// once on every event loop, and a lock shared by the loops had them wait on each other
/// in the kernel (86% of the `futex` calls of a fan-out to 10,000, Benchmarks/README.md).
/// Scheduling takes the timer's lock, to put the deadline in the heap. Cancelled entries
/// leave the heap all at once when they are more than half of it, so that it stays within
/// twice the deadlines pending, or when the timer wakes and finds them first. The timer
/// never sleeps until a cancelled deadline: a fan-out's thousands of cancelled polls cost
/// it one wake when the first of their deadlines comes, not one each (Benchmarks/README.md,
/// stop 31).
final class DeadlineTimer: @unchecked Sendable {
    // @unchecked Sendable: `heap` and `stopped` are guarded by `condition`, which is also
    // the lock; the counters are atomic, and a token guards itself.

    /// One scheduled action; settled once, by its cancel or by the timer running it.
    final class Token: Sendable {
        private let settled = Atomic<Bool>(false)
        private let action: Mutex<Action?>

        fileprivate init(_ action: @escaping @Sendable () -> Void) {
            self.action = Mutex(Action(action))
        }

        /// Whether it is neither cancelled nor run.
        fileprivate var isPending: Bool {
            !settled.load(ordering: .acquiring)
        }

        /// The action, to whoever settles the token first; nil to everyone else.
        fileprivate func settle() -> Action? {
            guard settled.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
            else { return nil }
            return action.withLock { $0.take() }
        }
    }

    private struct Entry {
        let deadline: ContinuousClock.Instant
        let token: Token
    }

    /// Below this many entries the heap is never rebuilt: skipping is cheaper.
    private static let smallestCompaction = 1024

    /// How long past a deadline the timer may sleep, so that the deadlines after it within
    /// that time run in the same wake.
    let coalescing: Duration
    /// The server's: a held poll's deadline is seconds away and jittered by a sixteenth
    /// of its wait, so 10 ms late is nothing to its client. A crowd of polls timing out
    /// over a second then costs a hundred wakes, not one each, and their 304s are
    /// resumed, and shared, together (Benchmarks/README.md, stop 31).
    static let longPollCoalescing: Duration = .milliseconds(10)
    private let clock = ContinuousClock()
    private let condition = NSCondition()
    private var heap: [Entry] = []
    private var stopped = false
    private let pending = Atomic<Int>(0)
    /// Entries in the heap whose token was cancelled (transiently off by the cancels
    /// under way).
    private let cancelledInHeap = Atomic<Int>(0)
    /// Times the thread has woken from a wait, for any reason (for tests of its wakes).
    private let wakes = Atomic<Int>(0)
    /// Whether the thread is waiting for the earliest deadline (under the lock; for tests
    /// that must not have it run in their midst).
    private var waitingForDeadline = false

    init(coalescing: Duration = .zero) {
        self.coalescing = coalescing
        // The thread keeps the timer alive until `stop()`.
        let thread = Thread { self.run() }
        thread.name = "lookout.deadlines"
        thread.start()
    }

    /// Runs `action` on the timer's thread once `delay` has passed, unless cancelled.
    func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> Token {
        let token = Token(action)
        condition.lock()
        guard !stopped else {
            condition.unlock()
            _ = token.settle()  // never runs
            return token
        }
        pending.add(1, ordering: .relaxed)
        if heap.count >= Self.smallestCompaction, cancelledInHeap.load(ordering: .relaxed) > heap.count / 2 {
            compact()
        }
        push(Entry(deadline: clock.now.advanced(by: delay), token: token))
        if heap[0].token === token { condition.signal() }  // a new earliest deadline
        condition.unlock()
        return token
    }

    /// Drops a scheduled action, at once, from any thread.
    /// - Returns: false if it already ran (or was cancelled).
    @discardableResult
    func cancel(_ token: Token) -> Bool {
        // The action taken is released here, with what it holds.
        guard token.settle() != nil else { return false }
        pending.subtract(1, ordering: .relaxed)
        cancelledInHeap.add(1, ordering: .relaxed)
        return true
    }

    /// Whether the action is still waiting for its deadline.
    func isPending(_ token: Token) -> Bool {
        token.isPending
    }

    /// Actions scheduled and not yet run or cancelled.
    var pendingCount: Int {
        pending.load(ordering: .relaxed)
    }

    /// Entries in the heap, cancelled ones included (for tests of its bound).
    var heapCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return heap.count
    }

    /// Times the timer's thread has woken from a wait so far.
    var wakeCount: Int {
        wakes.load(ordering: .relaxed)
    }

    /// Whether the timer's thread is waiting for the earliest deadline: until that deadline
    /// or a new earlier one, it touches nothing.
    var isWaitingForDeadline: Bool {
        condition.lock()
        defer { condition.unlock() }
        return waitingForDeadline
    }

    /// Stops the thread; pending actions never run.
    func stop() {
        condition.lock()
        stopped = true
        let entries = heap
        heap = []
        condition.signal()
        condition.unlock()
        // Released outside the lock: what the actions hold may do anything as it goes.
        for entry in entries where entry.token.settle() != nil {
            pending.subtract(1, ordering: .relaxed)
        }
    }

    private func run() {
        condition.lock()
        while !stopped {
            dropCancelledFirst()
            guard let first = heap.first else {
                condition.wait()
                wakes.add(1, ordering: .relaxed)
                continue
            }
            let now = clock.now
            guard first.deadline <= now else {
                let wait = now.duration(to: first.deadline) + coalescing
                let seconds = Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18
                waitingForDeadline = true
                _ = condition.wait(until: Date().addingTimeInterval(seconds))
                waitingForDeadline = false
                wakes.add(1, ordering: .relaxed)
                continue
            }
            var due: [Action] = []
            while let top = heap.first, top.deadline <= now {
                popFirst()
                if let action = top.token.settle() {
                    pending.subtract(1, ordering: .relaxed)
                    due.append(action)
                } else {
                    cancelledInHeap.subtract(1, ordering: .relaxed)
                }
            }
            condition.unlock()
            // Long-polls answered by these actions are resumed together, once they all are.
            SuspendedRequest.resumingTogether { due.forEach { $0.run() } }
            condition.lock()
        }
        condition.unlock()
    }

    // A binary min-heap on deadlines.

    /// Leaves the earliest entry a pending one: rebuilds the heap when most of it is
    /// cancelled, then pops the cancelled entries still first.
    private func dropCancelledFirst() {
        if heap.count >= Self.smallestCompaction, cancelledInHeap.load(ordering: .relaxed) > heap.count / 2 {
            compact()
        }
        while let top = heap.first, !top.token.isPending {
            popFirst()
            cancelledInHeap.subtract(1, ordering: .relaxed)
        }
    }

    /// Drops the cancelled entries and rebuilds the heap: O(n), once per n/2 cancels.
    private func compact() {
        let before = heap.count
        heap.removeAll { !$0.token.isPending }
        cancelledInHeap.subtract(before - heap.count, ordering: .relaxed)
        for parent in stride(from: heap.count / 2 - 1, through: 0, by: -1) {
            siftDown(from: parent)
        }
    }

    private func push(_ entry: Entry) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private func popFirst() {
        heap.swapAt(0, heap.count - 1)
        heap.removeLast()
        siftDown(from: 0)
    }

    private func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].deadline < heap[smallest].deadline { smallest = left }
            if right < heap.count, heap[right].deadline < heap[smallest].deadline { smallest = right }
            guard smallest != parent else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
