import Foundation

/// Runs actions at deadlines on one thread of its own; cancelling an action frees it at once.
///
/// Long-polls need one deadline each, most of them cancelled early (woken by a write).
/// A timer per poll (Dispatch) keeps every cancelled closure alive until its deadline;
/// here a cancel drops the closure, and only a 24-byte heap entry waits to be skipped.
final class DeadlineTimer: @unchecked Sendable {
    // @unchecked Sendable: all state is guarded by `condition`, which is also the lock.

    /// Identifies a scheduled action.
    struct Token: Hashable, Sendable {
        fileprivate let id: UInt64
    }

    private struct Entry {
        let deadline: ContinuousClock.Instant
        let id: UInt64
    }

    private let clock = ContinuousClock()
    private let condition = NSCondition()
    private var heap: [Entry] = []
    private var actions: [UInt64: @Sendable () -> Void] = [:]
    private var nextID: UInt64 = 0
    private var stopped = false

    init() {
        // The thread keeps the timer alive until `stop()`.
        let thread = Thread { self.run() }
        thread.name = "lookout.deadlines"
        thread.start()
    }

    /// Runs `action` on the timer's thread once `delay` has passed, unless cancelled.
    func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> Token {
        condition.lock()
        defer { condition.unlock() }
        nextID += 1
        actions[nextID] = action
        push(Entry(deadline: clock.now.advanced(by: delay), id: nextID))
        if heap[0].id == nextID { condition.signal() }  // a new earliest deadline
        return Token(id: nextID)
    }

    /// Drops a scheduled action.
    /// - Returns: false if it already ran (or was cancelled).
    @discardableResult
    func cancel(_ token: Token) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return actions.removeValue(forKey: token.id) != nil
    }

    /// Whether the action is still waiting for its deadline.
    func isPending(_ token: Token) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return actions[token.id] != nil
    }

    /// Actions scheduled and not yet run or cancelled.
    var pendingCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return actions.count
    }

    /// Stops the thread; pending actions never run.
    func stop() {
        condition.lock()
        stopped = true
        actions.removeAll()
        condition.signal()
        condition.unlock()
    }

    private func run() {
        condition.lock()
        while !stopped {
            guard let first = heap.first else {
                condition.wait()
                continue
            }
            let now = clock.now
            guard first.deadline <= now else {
                let wait = now.duration(to: first.deadline)
                let seconds = Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18
                _ = condition.wait(until: Date().addingTimeInterval(seconds))
                continue
            }
            var due: [@Sendable () -> Void] = []
            while let top = heap.first, top.deadline <= now {
                popFirst()
                if let action = actions.removeValue(forKey: top.id) { due.append(action) }
            }
            condition.unlock()
            due.forEach { $0() }
            condition.lock()
        }
        condition.unlock()
    }

    // A binary min-heap on deadlines.

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
        var parent = 0
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
