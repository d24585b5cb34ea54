import Foundation

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
