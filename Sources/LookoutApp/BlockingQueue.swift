import Dispatch
import Synchronization

#if canImport(Foundation)
    import Foundation
#endif

/// Runs blocking work — a write waiting for the disk, a password hash costing a few
/// hundred milliseconds of CPU — on threads of its own, at most `width` at a time. Such
/// work must not hold one of the few threads Swift's concurrency runs every task on.
final class BlockingQueue: Sendable {
    private let queues: [DispatchQueue]
    private let next = Atomic<Int>(0)

    /// - Parameter width: how many pieces of work may run at once; each lane is serial,
    ///   so `width: 1` runs one at a time, in order.
    init(label: String, width: Int = 1) {
        queues = (0..<max(1, width)).map { DispatchQueue(label: "\(label).\($0)", qos: .userInitiated) }
    }

    /// A queue as wide as the machine has cores.
    static func perCore(label: String) -> BlockingQueue {
        BlockingQueue(label: label, width: ProcessInfo.processInfo.activeProcessorCount)
    }

    /// Runs `work` on the next lane and returns at once.
    func submit(_ work: @escaping @Sendable () -> Void) {
        queues[next.add(1, ordering: .relaxed).oldValue % queues.count].async(execute: work)
    }

    func run<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
        let lane = queues[next.add(1, ordering: .relaxed).oldValue % queues.count]
        return try await withCheckedThrowingContinuation { continuation in
            lane.async { continuation.resume(with: Result { try work() }) }
        }
    }
}
