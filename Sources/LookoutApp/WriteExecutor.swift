import Dispatch
import LookoutHTTP
import LookoutStore
import LookoutTrace
import Synchronization

#if canImport(Foundation)
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// A write ready for the store: the write, and how its outcome is answered.
struct PreparedWrite: Sendable {
    let write: Store.Write
    /// The answer for the write's outcome; a refusal (a ``StoreError``) is rethrown, to be
    /// answered as an error by the responder.
    let answer: @Sendable (Result<Commit, StoreError>) throws -> HTTPResponse
    /// When the request was read whole and when its token was verified (tracing only).
    var receivedAt: UInt64 = 0
    var authorizedAt: UInt64 = 0
}

/// Where writes run, by how storage makes them durable.
///
/// - With nothing to wait for (in-memory storage), a write runs whole on the event loop
///   that read it: a write and the long-polls it wakes cross no thread.
/// - Otherwise on one thread of its own as group commits: every write that arrived while
///   the previous commit was being made durable is planned in order and recorded in one
///   commit (one fsync on SQLite, one transaction on PostgreSQL), then published, and each
///   is answered only once that commit is durable. Event loops never wait for storage,
///   but while a commit is under way they poll rather than sleep, so its answers and the
///   polls it wakes find them awake (``awaited``). The first poll a commit wakes is
///   rendered and answered on the writer thread (``answeredInPlace``), the others by
///   their loops.
///
/// Writes are applied in the order they reach the store either way, and each is answered
/// after the waiters it woke: resumed together with it, or (the writer's first) before.
final class WriteExecutor: Sendable {
    /// Most writes in one commit: a bound on how long the first of them waits.
    static let maxGroup = 256
    /// How many of the long-polls a commit wakes the writer thread renders and answers
    /// itself; the rest go to their event loops. A wake posted to a loop waited there
    /// ~20 µs longer than the same render on the writer, which had just made the
    /// snapshot it reads, and the answer went only after the writes' own were built
    /// (Benchmarks/README.md, stop 49). One covers a single wake; a fan-out's polls are
    /// still rendered by their loops, in parallel.
    static let answeredInPlace = 1
    /// The writer thread's name, as `top -H` and `/proc/PID/task/TID/comm` show it.
    static let threadName = "lookout-writes"

    private struct Pending: Sendable {
        let prepared: PreparedWrite
        let done: @Sendable (Result<HTTPResponse, any Error>) -> Void
    }

    private let store: Store
    let isInline: Bool
    /// The writes queued and not yet answered, for the event loops to stay awake for
    /// (``HTTPServerConfiguration/awaitedAnswers``).
    let awaited = AwaitedAnswers()
    private let queue = Mutex<[Pending]>([])
    private let work = DispatchSemaphore(value: 0)

    init(store: Store, inline: Bool) {
        self.store = store
        self.isInline = inline
        if !inline {
            // Named before this returns, so that the thread shows its name from the start.
            let named = DispatchSemaphore(value: 0)
            let thread = Thread { [self] in
                Self.nameThisThread()
                named.signal()
                run()
            }
            thread.start()
            named.wait()
        }
    }

    /// Applies `prepared` now, on this thread (``isInline`` only).
    /// The polls it wakes on the loop's other daemons are sent before its answer is built,
    /// and what the write leaves behind is freed after them (``Store/freeingAfter(_:)``).
    func applyNow(_ prepared: PreparedWrite) throws -> HTTPResponse {
        let outcome = store.freeingAfter {
            let outcome = SuspendedRequest.resumingTogether {
                Self.trace(prepared)
                return store.apply([prepared.write])[0]
            }
            SuspendedRequest.sendWoken()
            return outcome
        }
        return try prepared.answer(outcome)
    }

    /// Queues `prepared` for the next group commit; `done` is called with its answer on
    /// the writer's thread, inside the batch whose resumptions go together.
    func submit(_ prepared: PreparedWrite, done: @escaping @Sendable (Result<HTTPResponse, any Error>) -> Void) {
        awaited.add(1)
        let first = queue.withLock { queue in
            queue.append(Pending(prepared: prepared, done: done))
            return queue.count == 1
        }
        if first { work.signal() }
    }

    private func run() {
        while true {
            work.wait()
            while true {
                let group = queue.withLock { queue -> [Pending] in
                    let taken = Array(queue.prefix(Self.maxGroup))
                    queue.removeFirst(taken.count)
                    return taken
                }
                if group.isEmpty { break }
                // What the group leaves behind is freed after its resumptions.
                store.freeingAfter {
                    SuspendedRequest.resumingTogether(answeringInPlace: Self.answeredInPlace) {
                        if let last = group.last { Self.trace(last.prepared) }
                        let outcomes = store.apply(group.map(\.prepared.write))
                        for (pending, outcome) in zip(group, outcomes) {
                            pending.done(Result { try pending.prepared.answer(outcome) })
                        }
                    }
                }
                awaited.add(-group.count)
            }
        }
    }

    /// Names the calling thread ``threadName``. Foundation's `Thread.name` does not reach
    /// the kernel on Linux, so `top -H` and perf showed libdispatch's name for the writer;
    /// `pthread_setname_np` is not imported into Swift, and `/proc/thread-self/comm` is
    /// what it writes.
    private static func nameThisThread() {
        let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        _ = threadName.utf8CString.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count - 1) }
        close(descriptor)
    }

    /// Stamps the stages a write went through before it ran (one write's, per group).
    private static func trace(_ prepared: PreparedWrite) {
        guard WakeTrace.isEnabled else { return }
        WakeTrace.mark(.received, at: prepared.receivedAt)
        WakeTrace.mark(.authorized, at: prepared.authorizedAt)
        WakeTrace.mark(.started)
    }
}
