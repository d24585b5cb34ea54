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
/// - With nothing to wait for (in-memory storage, ``Placement/inline``), a write runs whole
///   on the event loop that read it: a write and the long-polls it wakes cross no thread.
/// - Otherwise as group commits on one thread of its own: every write that arrived while
///   the previous commit was being made durable is planned in order and recorded in one
///   commit (one fsync on SQLite, one transaction on PostgreSQL), then published, and each
///   is answered only once that commit is durable. While a commit is under way the event
///   loops poll rather than sleep, so its answers and the polls it wakes find them awake
///   (``awaited``). The first poll a commit wakes is rendered and answered on the writer
///   thread (``answeredInPlace``), the others by their loops.
/// - With SQLite (``Placement/loopWhenIdle(limit:)``), a write that finds no commit under
///   way and none queued is committed on the event loop that read it, as Redis's
///   `appendfsync always` has its event loop do: the hand-off to the writer thread, its
///   wake-up and the resumes from it were a sixth of a durable single wake
///   (Benchmarks/README.md, stop 55). The loop waits for that one commit. Writes that come
///   meanwhile queue for the writer, which takes them as one group once the loop's commit
///   ends; after a group of more than one (``Queue/lastGroup``) writes go to the writer
///   until it commits one alone, so that a burst goes in groups, one fsync each, rather
///   than holding a loop for a commit per write. Only while commits have lately been quick
///   (their moving average under `limit`): on a slow disk a loop would keep its other
///   connections waiting for every write.
///
/// Writes are applied in the order they reach the store either way: a write commits on
/// its loop only when nothing is queued or committing, and the writer takes no group while
/// a loop commits. Each is answered after the waiters it woke: resumed together with it,
/// or (the writer's first) before.
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

    /// Where a write is committed.
    enum Placement: Sendable, Equatable {
        /// On the loop that read it, always: storage with nothing to wait for.
        case inline
        /// On the writer thread, always: storage that may keep a loop waiting long (a
        /// PostgreSQL server across a network).
        case writer
        /// On the loop that read it when no commit is under way or queued and commits
        /// have averaged under `limit` lately; otherwise on the writer thread.
        case loopWhenIdle(limit: Duration)
    }

    /// The state of the queue: the writes waiting for the writer, and whether a commit is
    /// under way (on the writer or on a loop).
    private struct Queue {
        var pending: [Pending] = []
        var committing = false
        /// How many writes the last commit made durable. Over one, writes are coming
        /// faster than one at a time: the next goes to the writer, to join others in a
        /// group, rather than hold a loop for a commit of its own.
        var lastGroup = 1
    }

    private let store: Store
    let placement: Placement
    /// The writes queued and not yet answered, for the event loops to stay awake for
    /// (``HTTPServerConfiguration/awaitedAnswers``).
    let awaited = AwaitedAnswers()
    private let queue = Mutex<Queue>(Queue())
    private let work = DispatchSemaphore(value: 0)
    /// The moving average of commit times in nanoseconds, each new one weighing 1/8
    /// (``Placement/loopWhenIdle(limit:)`` only), and its limit.
    private let averageCommit = Atomic<UInt64>(0)
    private let averageLimit: UInt64
    /// Commits made on a loop and by the writer thread (`lookout_commits_total`).
    private let loopCommits = Atomic<UInt64>(0)
    private let writerCommits = Atomic<UInt64>(0)

    init(store: Store, placement: Placement) {
        self.store = store
        self.placement = placement
        if case .loopWhenIdle(let limit) = placement {
            averageLimit = Self.nanoseconds(limit)
        } else {
            averageLimit = 0
        }
        if placement != .inline {
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

    /// Commits made so far on event loops, and by the writer thread (a group each).
    var commits: (onLoops: UInt64, byWriter: UInt64) {
        (loopCommits.load(ordering: .relaxed), writerCommits.load(ordering: .relaxed))
    }

    /// Applies `prepared` on this thread, the event loop that read it, if its
    /// ``placement`` lets it now; nil when it must go to the writer (``submit(_:done:)``).
    ///
    /// The polls it wakes on the loop's other daemons are sent before its answer is built,
    /// and what the write leaves behind is freed after them (``Store/freeingAfter(_:)``).
    func applyHere(_ prepared: PreparedWrite) -> Result<HTTPResponse, any Error>? {
        switch placement {
        case .inline:
            return Result { try prepared.answer(apply(prepared)) }
        case .writer:
            return nil
        case .loopWhenIdle:
            guard averageCommit.load(ordering: .relaxed) < averageLimit else { return nil }
            let idle = queue.withLock { queue in
                guard !queue.committing, queue.pending.isEmpty, queue.lastGroup == 1 else { return false }
                queue.committing = true
                return true
            }
            guard idle else { return nil }
            // Awaited, so that loops holding polls this commit may wake stay awake for it.
            awaited.add(1)
            let outcome = apply(prepared)
            loopCommits.add(1, ordering: .relaxed)
            let queuedMeanwhile = queue.withLock { queue in
                queue.committing = false
                return !queue.pending.isEmpty
            }
            awaited.add(-1)
            if queuedMeanwhile { work.signal() }
            return Result { try prepared.answer(outcome) }
        }
    }

    private func apply(_ prepared: PreparedWrite) -> Result<Commit, StoreError> {
        store.freeingAfter {
            let outcome = SuspendedRequest.resumingTogether {
                Self.trace(prepared)
                return timed { store.apply([prepared.write])[0] }
            }
            SuspendedRequest.sendWoken()
            return outcome
        }
    }

    /// Queues `prepared` for the writer thread's next group commit; `done` is called with
    /// its answer on the writer's thread, inside the batch whose resumptions go together.
    func submit(_ prepared: PreparedWrite, done: @escaping @Sendable (Result<HTTPResponse, any Error>) -> Void) {
        awaited.add(1)
        let wakeWriter = queue.withLock { queue in
            queue.pending.append(Pending(prepared: prepared, done: done))
            // A committer takes what queued behind it when it ends: the writer its next
            // group, a loop by waking the writer.
            return queue.pending.count == 1 && !queue.committing
        }
        if wakeWriter { work.signal() }
    }

    private func run() {
        while true {
            work.wait()
            while true {
                let group = queue.withLock { queue -> [Pending] in
                    // A loop committing wakes the writer again when it ends.
                    guard !queue.committing else { return [] }
                    let taken = Array(queue.pending.prefix(Self.maxGroup))
                    queue.pending.removeFirst(taken.count)
                    queue.committing = !taken.isEmpty
                    if !taken.isEmpty { queue.lastGroup = taken.count }
                    return taken
                }
                if group.isEmpty { break }
                // What the group leaves behind is freed after its resumptions.
                store.freeingAfter {
                    SuspendedRequest.resumingTogether(answeringInPlace: Self.answeredInPlace) {
                        if let last = group.last { Self.trace(last.prepared) }
                        let outcomes = timed { store.apply(group.map(\.prepared.write)) }
                        // Counted, and the queue let go, before any of the group's answers can
                        // reach a client: a write sent after one of them finds no commit under way.
                        writerCommits.add(1, ordering: .relaxed)
                        queue.withLock { $0.committing = false }
                        for (pending, outcome) in zip(group, outcomes) {
                            pending.done(Result { try pending.prepared.answer(outcome) })
                        }
                    }
                }
                awaited.add(-group.count)
            }
        }
    }

    /// Runs a commit, `body` (the store's apply, which returns once the commit is durable),
    /// and adds its time to the moving average with weight 1/8, for the placement that
    /// reads it. With that placement only one commit runs at a time (``Queue/committing``),
    /// so the average's load and store do not race.
    private func timed<Result>(_ body: () -> Result) -> Result {
        guard case .loopWhenIdle = placement else { return body() }
        let started = RouteMetrics.now()
        defer {
            let elapsed = RouteMetrics.now() &- started
            let average = averageCommit.load(ordering: .relaxed)
            averageCommit.store(average - average / 8 + elapsed / 8, ordering: .relaxed)
        }
        return body()
    }

    /// `duration` in whole nanoseconds: 0 if negative, `UInt64.max` if longer than that.
    private static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        let (whole, overflowed) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        let (total, carried) = whole.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000))
        return overflowed || carried ? .max : total
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

extension AppConfiguration {
    /// Where ``database`` has writes committed (``WriteExecutor/Placement``).
    var writePlacement: WriteExecutor.Placement {
        switch database {
        case .memory: .inline
        case .postgres: .writer
        case .sqlite: loopCommitLimit > .zero ? .loopWhenIdle(limit: loopCommitLimit) : .writer
        }
    }
}
