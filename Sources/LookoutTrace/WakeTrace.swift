import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Timestamps of each stage of a write and the long-polls it wakes, for the latency
/// budget in Benchmarks/README.md ("where each microsecond goes").
///
/// Off unless the environment variable `LOOKOUT_TRACE_WAKES` names a file when the
/// process starts; then every stage is stamped (CLOCK_MONOTONIC, nanoseconds) under the
/// revision the write committed, and ``write()`` saves the table there, one line per
/// revision. Off, a stamp is one test of a constant: nothing is read or stored.
///
/// A write's stages before its revision is known (received, authorized, started,
/// planned, committed) are kept per thread until ``publish(revision:)``: a write runs on
/// one thread from its start to its publication.
public enum WakeTrace {
    /// The stages, in the order a single wake goes through them.
    public enum Stage: Int, CaseIterable, Sendable {
        /// The write request was read whole (the C layer's dispatch).
        case received
        /// Its token was verified and its body read.
        case authorized
        /// The write began to run in the store (after any hand-over to another thread).
        case started
        /// The next snapshot and the changed keys were worked out.
        case planned
        /// Storage returned: durable, on SQLite.
        case committed
        /// The new snapshot is visible to readers.
        case published
        /// The registrar called the poll's wake.
        case woke
        /// The poll's view was rendered again.
        case rendered
        /// The poll's answer was handed to the C layer.
        case answered
        /// libmicrohttpd took the answer on the poll's resumed connection.
        case resumed
        /// The answer's last byte was written to the socket.
        case sent
    }

    /// Where the table goes, when tracing.
    public static let path: String? = getenv("LOOKOUT_TRACE_WAKES").map { String(cString: $0) }
    /// Whether stages are stamped.
    public static let isEnabled = path != nil

    /// One stamp: `stage` of the write that made `revision`, or of a poll it woke.
    struct Stamp {
        var revision: UInt64
        var time: UInt64
        var stage: Stage
    }

    /// Every stamp, in the order taken; ``write()`` folds them into a row per revision.
    /// Its room is reserved when tracing starts, so a stamp is an append under a lock:
    /// a stamp that allocated a row and copied it in a dictionary cost the stage it
    /// measured about a microsecond (Benchmarks/README.md, stop 42).
    private static let stamps = Mutex<[Stamp]>(isEnabled ? reserved(limit) : [])
    /// Stamps kept at most; later ones are dropped (a fan-out to 10,000 takes 50,000).
    private static let limit = 1 << 20

    private static func reserved(_ capacity: Int) -> [Stamp] {
        var stamps: [Stamp] = []
        stamps.reserveCapacity(capacity)
        return stamps
    }

    /// Now, in nanoseconds of CLOCK_MONOTONIC.
    public static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }

    /// Stamps a stage of the write running on this thread, whose revision is not known yet.
    @inline(__always)
    public static func mark(_ stage: Stage, at time: UInt64? = nil) {
        guard isEnabled else { return }
        Pending.current.stamp(stage, time ?? now())
    }

    /// Files the stages this thread's write stamped under `revision`, and stamps `published`.
    @inline(__always)
    public static func publish(revision: UInt64) {
        guard isEnabled else { return }
        let published = now()
        let pending = Pending.current
        stamps.withLock { stamps in
            pending.file(under: revision, into: &stamps)
            append(Stamp(revision: revision, time: published, stage: .published), to: &stamps)
        }
    }

    /// Stamps a stage of a poll woken by the write that made `revision`.
    @inline(__always)
    public static func mark(_ stage: Stage, revision: UInt64, at time: UInt64? = nil) {
        guard isEnabled else { return }
        let stamp = Stamp(revision: revision, time: time ?? now(), stage: stage)
        stamps.withLock { append(stamp, to: &$0) }
    }

    private static func append(_ stamp: Stamp, to stamps: inout [Stamp]) {
        if stamps.count < limit { stamps.append(stamp) }
    }

    /// A row of stage times per revision, by ascending revision (0 where a stage has no
    /// stamp). The first stamp of a stage counts: a poll woken twice keeps its first wake,
    /// and of the polls one write woke, the row holds the first to reach each stage.
    static func rows(_ stamps: [Stamp]) -> [(revision: UInt64, times: [UInt64])] {
        let empty = [UInt64](repeating: 0, count: Stage.allCases.count)
        var rows: [UInt64: [UInt64]] = [:]
        // Latest first, so that the first stamp of each stage is the one left.
        for stamp in stamps.reversed() {
            rows[stamp.revision, default: empty][stamp.stage.rawValue] = stamp.time
        }
        return rows.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// Saves the table to ``path``: a header line of stage names, then per revision its
    /// number and each stage's time in nanoseconds (0 where a stage was not stamped).
    public static func write() {
        guard let path else { return }
        var text = "revision\t" + Stage.allCases.map { "\($0)" }.joined(separator: "\t") + "\n"
        for (revision, times) in rows(stamps.withLock { $0 }) {
            text += "\(revision)\t" + times.map(String.init).joined(separator: "\t") + "\n"
        }
        guard let file = fopen(path, "w") else { return }
        fputs(text, file)
        fclose(file)
    }

    /// The stamps of the write running on a thread.
    private final class Pending {
        private static let key: pthread_key_t = {
            var key = pthread_key_t()
            pthread_key_create(&key) { pointer in
                if let pointer { Unmanaged<Pending>.fromOpaque(pointer).release() }
            }
            return key
        }()

        static var current: Pending {
            if let existing = pthread_getspecific(key) {
                return Unmanaged<Pending>.fromOpaque(existing).takeUnretainedValue()
            }
            let pending = Pending()
            pthread_setspecific(key, Unmanaged.passRetained(pending).toOpaque())
            return pending
        }

        /// Times by stage; 0 where none was stamped.
        private var times = [UInt64](repeating: 0, count: Stage.allCases.count)

        func stamp(_ stage: Stage, _ time: UInt64) {
            times[stage.rawValue] = time
        }

        /// Appends the stamps taken since the last call, under `revision`, and clears them.
        func file(under revision: UInt64, into stamps: inout [Stamp]) {
            for index in times.indices where times[index] != 0 {
                WakeTrace.append(
                    Stamp(revision: revision, time: times[index], stage: Stage(rawValue: index)!), to: &stamps)
                times[index] = 0
            }
        }
    }
}
