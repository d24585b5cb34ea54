import Synchronization

/// One thing `GET /readyz` checks before saying the service can take traffic: a name
/// (the key in the answer's `checks`) and a closure that says `ok` or what is wrong.
///
/// The wiring in ``buildApplication(configuration:logger:now:)`` lists the checks; a
/// storage layer adds its own there (e.g. `database`), and the route stays as it is.
///
/// - Warning: `run` may block briefly (file or database I/O); it is called from a task,
///   never on a server thread. Wrap anything costly in ``cached(for:now:)``.
struct ReadinessCheck: Sendable {
    enum Status: Sendable, Equatable {
        case ok
        /// Not ready; the message says why, for an operator.
        case failing(String)
    }

    let name: String
    let run: @Sendable () -> Status

    init(name: String, run: @escaping @Sendable () -> Status) {
        self.name = name
        self.run = run
    }

    /// This check, run at most once per `interval`: in between, and while a run is under
    /// way, callers get the last result.
    /// - Parameter now: the monotonic clock, injected so that tests can advance it.
    func cached(
        for interval: Duration,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }
    ) -> ReadinessCheck {
        let cache = Mutex(CachedStatus())
        let run = self.run
        return ReadinessCheck(name: name) {
            let started = now()
            let cached: Status? = cache.withLock { cache in
                if let last = cache.last, cache.isRunning || started < last.checkedAt.advanced(by: interval) {
                    return last.status
                }
                cache.isRunning = true
                return nil
            }
            if let cached { return cached }
            let status = run()
            cache.withLock { $0 = CachedStatus(last: (status, started), isRunning: false) }
            return status
        }
    }
}

/// The last result of a cached check, and whether a run is under way.
private struct CachedStatus {
    var last: (status: ReadinessCheck.Status, checkedAt: ContinuousClock.Instant)?
    var isRunning = false
}
