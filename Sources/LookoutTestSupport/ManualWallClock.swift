import Foundation
import Synchronization

/// A wall clock that tests move by hand, for code that takes its time as `now: () -> Date`.
public final class ManualWallClock: Sendable {
    private let current: Mutex<Date>

    /// Starts at `start` (by default, the real time of creation).
    public init(_ start: Date = Date()) {
        current = Mutex(start)
    }

    /// The clock's current time.
    public func now() -> Date { current.withLock { $0 } }

    /// Moves the clock by `seconds` (backwards when negative).
    public func advance(seconds: Double) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}
