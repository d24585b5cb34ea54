import Dispatch

/// Runs the store's writes one at a time on a thread of their own. A write waits for its
/// data to reach the disk; that wait must not hold one of the few threads Swift's
/// concurrency runs every task on.
final class WriteQueue: Sendable {
    private let queue = DispatchQueue(label: "lookout.writes", qos: .userInitiated)

    func run<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try work() }) }
        }
    }
}
