import Foundation
import LookoutStore
import Synchronization

/// Runs blocking work on a thread of its own and waits for it without blocking Swift's
/// cooperative pool (which has one thread per core and is shared by every test).
func onThread(_ work: @escaping @Sendable () -> Void) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        Thread.detachNewThread {
            work()
            continuation.resume()
        }
    }
}

/// What the model tests' sweeper needs of a session.
protocol SweptSession: Sendable {
    /// When it gives up, once registered.
    var deadline: Mutex<ContinuousClock.Instant?> { get }
    var waiter: Mutex<FieldRegistrar.WaiterID?> { get }
    /// Whether it has not ended yet (answered at once, woken or cancelled).
    var isPending: Bool { get }
}

/// The model tests' sweeper, on a thread of its own so that a busy cooperative pool
/// cannot delay it: every millisecond, cancels the sessions past their deadline with
/// `cancel` (which tells whether the cancel won), until every session has ended.
func sweep<Session: SweptSession>(
    _ sessions: [Session],
    cancel: @escaping @Sendable (Session, FieldRegistrar.WaiterID) -> Void
) async {
    let clock = ContinuousClock()
    await onThread {
        var waiting = sessions[...]
        while !waiting.isEmpty {
            usleep(1_000)
            let now = clock.now
            waiting = waiting.filter { session in
                guard session.isPending else { return false }
                guard let deadline = session.deadline.withLock({ $0 }), deadline <= now,
                    let id = session.waiter.withLock({ $0 })
                else { return true }
                cancel(session, id)
                return false
            }
        }
    }
}
