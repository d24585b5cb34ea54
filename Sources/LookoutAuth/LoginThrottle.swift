import Synchronization

#if canImport(Foundation)
    import Foundation
#endif

/// Slows down, then refuses, repeated failed logins: per account (an email) and per
/// client address, so guessing one account's password from many addresses, or many
/// accounts' from one, both run into it.
///
/// - The first ``freeFailures`` failures of a key cost nothing extra.
/// - Each failure after that answers later: ``delay(afterFailures:)`` doubles from 250 ms
///   up to 4 s.
/// - From ``lockoutFailures`` on, the key is locked: attempts are refused (429) without
///   a password check until the lock ends, starting at 30 s and doubling with each
///   further failure, up to 15 minutes.
/// - A success clears the account's failures (not the address's). Failures are forgotten
///   ``window`` after the last one.
///
/// Successful logins are never slowed unless their account or address is locked.
public final class LoginThrottle: Sendable {
    public static let freeFailures = 3
    public static let lockoutFailures = 10
    public static let window: Double = 15 * 60

    /// Why an attempt may not go ahead now.
    public struct Locked: Error, Equatable {
        /// Seconds until it may.
        public let retryAfter: Int

        public init(retryAfter: Int) {
            self.retryAfter = retryAfter
        }
    }

    private struct Record {
        var failures: Int
        var last: Double
        var lockedUntil: Double
    }

    private let records = Mutex<[String: Record]>([:])
    private let now: @Sendable () -> Date
    /// Most keys remembered; when full, the stalest are forgotten first.
    private let capacity: Int

    public init(capacity: Int = 100_000, now: @escaping @Sendable () -> Date = Date.init) {
        self.capacity = capacity
        self.now = now
    }

    /// Throws ``Locked`` if the account or the address is locked now.
    public func check(email: String, address: String) throws(Locked) {
        let time = now().timeIntervalSince1970
        let wait = records.withLock { records in
            [Self.accountKey(email), Self.addressKey(address)].compactMap { records[$0] }
                .map { $0.lockedUntil - time }.max() ?? 0
        }
        if wait > 0 { throw Locked(retryAfter: Int(wait.rounded(.up))) }
    }

    /// Records a failed attempt.
    /// - Returns: how long to hold the failure's answer, in seconds.
    public func failed(email: String, address: String) -> Double {
        let time = now().timeIntervalSince1970
        return records.withLock { records in
            if records.count >= capacity { Self.forgetStalest(&records, time: time) }
            var delay = 0.0
            for key in [Self.accountKey(email), Self.addressKey(address)] {
                var record = records[key] ?? Record(failures: 0, last: time, lockedUntil: 0)
                if time - record.last > Self.window { record.failures = 0 }
                record.failures += 1
                record.last = time
                if record.failures >= Self.lockoutFailures {
                    let lock = min(30 * pow(2, Double(record.failures - Self.lockoutFailures)), Self.window)
                    record.lockedUntil = time + lock
                }
                records[key] = record
                delay = max(delay, Self.delay(afterFailures: record.failures))
            }
            return delay
        }
    }

    /// Accounts and addresses remembered now.
    public var trackedKeys: Int { records.withLock { $0.count } }

    /// Clears the account's failures after a successful login.
    public func succeeded(email: String) {
        records.withLock { _ = $0.removeValue(forKey: Self.accountKey(email)) }
    }

    /// How long the answer to failure number `failures` of a key is held.
    public static func delay(afterFailures failures: Int) -> Double {
        guard failures > freeFailures else { return 0 }
        return min(0.25 * pow(2, Double(failures - freeFailures - 1)), 4)
    }

    private static func accountKey(_ email: String) -> String { "user:" + User.normalize(email) }
    private static func addressKey(_ address: String) -> String { "addr:" + address }

    /// Drops expired records, then the oldest quarter if still full.
    private static func forgetStalest(_ records: inout [String: Record], time: Double) {
        records = records.filter { time - $0.value.last <= window || $0.value.lockedUntil > time }
        guard records.count >= 4 else { return }
        let cutoff = records.values.map(\.last).sorted()[records.count / 4]
        records = records.filter { $0.value.last > cutoff || $0.value.lockedUntil > time }
    }
}
