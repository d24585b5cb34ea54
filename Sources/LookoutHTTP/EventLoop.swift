import CMicroHTTPD
import Synchronization

/// One event-loop thread of a running server, to post work to.
struct EventLoop: Sendable {
    /// `@unchecked Sendable`: the server outlives every post (``PostGate``).
    struct Server: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    let server: Server
    let thread: UInt32
    let gate: PostGate

    /// Whether the calling thread is this loop's.
    var isCurrent: Bool {
        lk_mhd_on_thread(server.pointer, thread) != 0
    }

    func isSame(as other: EventLoop) -> Bool {
        server.pointer == other.server.pointer && thread == other.thread
    }

    /// Runs `work` on this loop: at once when called on it; inside a batch
    /// (``SuspendedRequest/resumingTogether(_:)``), posted with the batch's other work for
    /// this loop, in chunks; else posted alone.
    func runHere(_ work: @escaping @Sendable () -> Void) {
        if isCurrent {
            work()
        } else if let batch = ResumeBatch.current {
            batch.post(work, to: self)
        } else {
            run(work)
        }
    }

    /// Posts `work`, or runs it at once when the server has stopped (or memory ran out).
    func run(_ work: @escaping @Sendable () -> Void) {
        let task = Unmanaged.passRetained(LoopTask(work)).toOpaque()
        let posted = gate.whileOpen { lk_mhd_post(server.pointer, thread, task) == 0 } ?? false
        if !posted {
            Unmanaged<LoopTask>.fromOpaque(task).release()
            work()
        }
    }
}

/// Whether a server's loops still take posted work: closed before the server stops, so
/// a post never reaches a stopped server.
final class PostGate: Sendable {
    private let open = Mutex(true)

    func whileOpen<Result>(_ body: () -> Result) -> Result? {
        open.withLock { open in open ? body() : nil }
    }

    func close() {
        open.withLock { $0 = false }
    }
}

/// Work posted to an event loop.
final class LoopTask: Sendable {
    let work: @Sendable () -> Void

    init(_ work: @escaping @Sendable () -> Void) {
        self.work = work
    }

    /// Runs the posted tasks (retained pointers to ``LoopTask``) in order, their answers
    /// resumed together.
    static func run(_ tasks: UnsafeBufferPointer<UnsafeMutableRawPointer?>) {
        SuspendedRequest.resumingTogether {
            for task in tasks {
                guard let task else { continue }
                Unmanaged<LoopTask>.fromOpaque(task).takeRetainedValue().work()
            }
        }
    }
}
