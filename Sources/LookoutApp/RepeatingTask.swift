import Foundation
import Synchronization

/// Runs an action every `interval` on a thread of its own, for work that blocks (a
/// database query), until ``stop()``.
final class RepeatingTask: Sendable {
    private let stopped = Atomic<Bool>(false)
    private let wakeup = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts running `action` now and then every `interval`.
    init(name: String, every interval: Duration, _ action: @escaping @Sendable () -> Void) {
        let nanoseconds =
            Int(interval.components.seconds) * 1_000_000_000
            + Int(interval.components.attoseconds / 1_000_000_000)
        let thread = Thread { [self] in
            while !stopped.load(ordering: .relaxed) {
                action()
                _ = wakeup.wait(timeout: .now() + .nanoseconds(nanoseconds))
            }
            finished.signal()
        }
        thread.name = name
        thread.start()
    }

    /// Stops; returns once the action is not running and will not run again.
    func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        wakeup.signal()
        finished.wait()
    }
}
