import Synchronization

/// Where a running service gets its key ring: fixed (a key given in configuration), or
/// the key file, read again when `lookout keys rotate` replaced it.
///
/// The file is looked at no more than once a second, so verifying stays a memory read.
public final class SigningKeys: Sendable {
    private struct State {
        var ring: KeyRing
        var stamp: KeyRingFile.FileStamp?
        var checked: ContinuousClock.Instant
        /// Counts reloads, so what was verified under an older ring can be told apart.
        var version = 0
    }

    private let file: KeyRingFile?
    private let state: Mutex<State>

    /// Always `ring`.
    public init(fixed ring: KeyRing) {
        file = nil
        state = Mutex(State(ring: ring, stamp: nil, checked: .now))
    }

    /// The ring in `file`, which was just read as `ring`.
    public init(file: KeyRingFile, ring: KeyRing) {
        self.file = file
        state = Mutex(State(ring: ring, stamp: file.stamp(), checked: .now))
    }

    /// The current ring. A file that cannot be read now (it is never half-written) keeps
    /// the ring last read.
    public var ring: KeyRing { current.ring }

    /// The current ring and its version, which changes with every reload.
    var current: (ring: KeyRing, version: Int) {
        guard let file else { return state.withLock { ($0.ring, $0.version) } }
        let now = ContinuousClock.now
        let (ring, version, due) = state.withLock { state in
            let due = now - state.checked >= .seconds(1)
            if due { state.checked = now }
            return (state.ring, state.version, due)
        }
        guard due, let stamp = file.stamp(), stamp != state.withLock({ $0.stamp }),
            let reloaded = try? file.load()
        else { return (ring, version) }
        return state.withLock { state in
            state.ring = reloaded
            state.stamp = stamp
            state.version += 1
            return (reloaded, state.version)
        }
    }
}
